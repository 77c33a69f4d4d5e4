"""Sans-IO parts of WebRTC links: DataChannel framing and reassembly, SDP fingerprints and the link
transcript, ICE servers, candidates, paths and TURN REST credentials, and the channels a link opens."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "ChunkLimits": "chunks",
    "Kind": "chunks",
    "MAX_DATACHANNEL_MESSAGE": "chunks",
    "Reassembler": "chunks",
    "frame_body": "chunks",
    "frame_close": "chunks",
    "Candidate": "sdp",
    "CandidateType": "sdp",
    "SdpRole": "sdp",
    "bound_sdp": "sdp",
    "dtls_fingerprint": "sdp",
    "parse_candidate": "sdp",
    "sdp_candidates": "sdp",
    "webrtc_transcript": "sdp",
    "CandidateBudget": "ice",
    "HostAddresses": "ice",
    "IceServer": "ice",
    "IceTransportPolicy": "ice",
    "LinkPath": "ice",
    "TurnCredentials": "ice",
    "link_path": "ice",
    "offered_outside": "ice",
    "turn_rest_credentials": "ice",
    "ChannelPlan": "channels",
    "LinkKind": "channels",
    "channel_plan": "channels",
})
