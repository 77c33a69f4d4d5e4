"""A link's own protocol: the sans-IO mutual authentication of the two ends."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Handshake": "handshake",
    "HandshakeResult": "handshake",
    "HandshakeState": "handshake",
    "LinkAuth": "handshake",
    "LinkClose": "handshake",
    "LinkHello": "handshake",
    "LinkRole": "handshake",
    "auth_message": "handshake",
    "close_reason": "handshake",
    "decode_handshake_message": "handshake",
    "transcript_digest": "handshake",
})
