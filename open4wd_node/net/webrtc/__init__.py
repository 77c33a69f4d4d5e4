"""WebRTC links: aiortc's DataChannels beside trio (aiortc on an asyncio loop in a thread of its own),
offered and answered through signaling, bound to the peer's PeerId by the DTLS fingerprint of its signed
SDP, on the ICE servers and host addresses the node was given."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "asyncio_bridge": "bridge",
    "AsyncioThread": "bridge",
    "LinkPathReport": "carrier",
    "WebRTCCarrier": "carrier",
    "WebRTCEndpoint": "connector",
    "WebRTCSettings": "connector",
    "webrtc_endpoint": "connector",
    "gathering_on": "hosts",
    "HubSignaling": "signaling",
    "Signaling": "signaling",
    "SignalingHub": "signaling",
})
