"""Canonical encodings: DAG-CBOR and the spec's digests, base58btc, and the wire framing and strict message decoding."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "b58decode": "base58",
    "b58encode": "base58",
    "chain_id_of": "dagcbor",
    "derive_match_id": "dagcbor",
    "encode": "dagcbor",
    "ledger_signing_digest": "dagcbor",
    "loadout_signing_message": "dagcbor",
    "serialize_for_signing": "dagcbor",
    "signing_digest": "dagcbor",
    "Channel": "wire",
    "FrameDecoder": "wire",
    "Message": "wire",
    "Record": "wire",
    "decode_message": "wire",
    "encode_frame": "wire",
    "encode_message": "wire",
    "message": "wire",
    "peek_message_type": "wire",
})
