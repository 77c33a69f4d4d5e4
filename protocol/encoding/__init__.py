"""Canonical encodings: DAG-CBOR and the spec's digests, base58btc, and the wire framing and strict message decoding."""
