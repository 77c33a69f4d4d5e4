"""Identity: the Ed25519 master key and PeerId, race sign keys, BIP39, SignedPayload envelopes, quorum arithmetic."""
