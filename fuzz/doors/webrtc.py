"""WebRTC links: what a peer writes on a link's DataChannels (``webrtc-chunks``: kind bytes, parts of
large bodies, closes, probes, through the real ``ChannelReader`` and its bounded reassembler, with time
passing between messages), and the SDP it signs (``webrtc-sdp``: the fingerprint a link binds, the
candidates it offers)."""

from __future__ import annotations

from fuzz.harness import Target, coded, frames
from open4wd_base.errors import CodedError
from protocol.webrtc.chunks import ChannelReader, ChunkLimits
from protocol.webrtc.sdp import bound_sdp, dtls_fingerprint, sdp_candidates

PART_BYTES = 64  # small parts, so that an input of a few KiB finishes, interleaves and abandons large bodies
LIMITS = ChunkLimits(max_message_bytes=16 * PART_BYTES, max_in_flight=2, deadline_ms=1_000, part_bytes=PART_BYTES)
STEP_MS = 25


def chunks_input(data: bytes) -> None:
    """Each frame is one DataChannel message: its first byte picks the channel (bit 7: the lossy inputs
    channel) and how long passed since the previous message (the low 7 bits, in steps of 25 ms); the
    rest is the message. A refusal ends the link, as on a real one."""
    readers = {False: ChannelReader(LIMITS), True: ChannelReader(None)}
    reliable = readers[False].reassembler
    assert reliable is not None
    now = 0
    for frame in frames(data):
        if not frame:
            continue
        now += (frame[0] & 0x7F) * STEP_MS
        try:
            readers[False].expire(now)  # the timer the link's reader waits on
            readers[bool(frame[0] & 0x80)].read(frame[1:], now)
        except CodedError:
            return
        assert reliable.buffered <= LIMITS.max_message_bytes * LIMITS.max_in_flight


def sdp_input(data: bytes) -> None:
    """Any text as a peer's SDP: its fingerprint, its bound form (which keeps that fingerprint) and its candidates."""
    text = data.decode("utf-8", "surrogateescape")
    fingerprint = coded(dtls_fingerprint, text)
    if fingerprint is not None:
        assert dtls_fingerprint(bound_sdp(text)) == fingerprint
    coded(sdp_candidates, text)


TARGETS = {
    "webrtc-chunks": Target("webrtc-chunks", chunks_input, "DataChannel messages of a WebRTC link, with time passing"),
    "webrtc-sdp": Target("webrtc-sdp", sdp_input, "a peer's SDP: its DTLS fingerprint and candidates"),
}
