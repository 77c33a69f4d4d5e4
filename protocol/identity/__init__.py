"""Identity: the Ed25519 master key and PeerId, race sign keys, BIP39, SignedPayload envelopes, quorum arithmetic."""

from open4wd_base.exports import lazy_exports


__all__, __getattr__ = lazy_exports(__name__, {
    "canonical_peers": "consensus",
    "latest_final_frame": "consensus",
    "match_result_threshold": "consensus",
    "quorum": "consensus",
    "within_tail": "consensus",
    "PrivateKey": "ed25519",
    "PublicKey": "ed25519",
    "Identity": "keys",
    "check_mnemonic": "keys",
    "is_valid_peer_id": "keys",
    "load_or_create_identity": "keys",
    "new_mnemonic": "keys",
    "parse_peer_id": "keys",
    "PeerId": "keys",
    "peer_id_from_public_key": "keys",
    "race_id": "keys",
    "read_identity_file": "keys",
    "seed_from_mnemonic": "keys",
    "verify_signature": "keys",
    "write_identity_file": "keys",
    "NonceSet": "signed",
    "SignedPayload": "signed",
    "SignedVerifier": "signed",
    "build_signed": "signed",
    "check_signature": "signed",
    "signed_message": "signed",
})
