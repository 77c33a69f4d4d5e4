"""A link's own protocol: the Noise XX handshake that authenticates both ends and keys the link's ciphers, the
token buckets that rate-limit its frames, the count of its protocol violations, the lanes its bodies travel
on, and the contact that says how to reach a node."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Contact": "contact",
    "check_address": "contact",
    "FrameCipher": "handshake",
    "Handshake": "handshake",
    "HandshakeResult": "handshake",
    "HandshakeState": "handshake",
    "LinkClose": "handshake",
    "LinkIdentity": "handshake",
    "LinkNoise": "handshake",
    "LinkRole": "handshake",
    "LinkVersion": "handshake",
    "close_reason": "handshake",
    "decode_handshake_message": "handshake",
    "peek_protocol_version": "handshake",
    "static_key_message": "handshake",
    "transcript_digest": "handshake",
    "CipherState": "noise",
    "NoiseXX": "noise",
    "Role": "noise",
    "SymmetricState": "noise",
    "TransportCipher": "noise",
    "Lane": "lane",
    "TokenBucket": "token_bucket",
    "ViolationCounter": "violations",
})
