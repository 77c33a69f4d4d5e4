"""A WebRTC link's carrier: whole message bodies over the negotiated DataChannels of one peer connection.

The link's rules (strict decoding, rate limits, keepalive, coded close) sit above a carrier that moves
whole bodies; over TCP that carrier is ``u32be length ‖ Noise-sealed body``, here it is DataChannel
messages framed by ``protocol.webrtc.chunks`` (WHOLE, PARTs of a large body, CLOSE with a coded reason,
PROBE/ECHO for the round trip). The DataChannels are DTLS-encrypted and the DTLS certificate is bound
to the peer's PeerId by the fingerprint in its signed SDP (``connector``), so the carrier seals nothing
itself.

- ``send(body, lane)``: one body on the reliable lane (split into parts when it exceeds one
  DataChannel message) or, on a race link, the unordered lossy inputs lane (one message at most);
- ``receive()``: the next body from either lane, in arrival order;
- ``aclose(code, message)``: tell the peer why (a CLOSE message), wait briefly for it to hang up, close.

What the peer sends is checked in aiortc's callback, before anything is buffered: a malformed
message, a large body beyond its channel's bound, too many unfinished ones, a part that never comes
(the deadline, checked while a task waits in ``receive``) or an inbox the reader cannot keep up with
ends this link, and only this link, with a coded ``LinkClosed`` that the peer learns too.
"""

from __future__ import annotations

import secrets
from collections import deque
from dataclasses import dataclass
from typing import Any

import structlog
import trio
from aiortc import RTCDataChannel, RTCPeerConnection

from open4wd_node.net.link import LinkClosed, now_ms
from open4wd_node.net.webrtc.bridge import run_asyncio
from protocol.errors import LocalError, PeerError
from protocol.webrtc.channels import ChannelPlan, Lane, LinkKind
from protocol.webrtc.chunks import (
    Body,
    ChannelReader,
    ChunkLimits,
    Closing,
    Echoed,
    Kind,
    Probed,
    frame_body,
    frame_close,
    frame_probe,
    frame_whole,
)
from protocol.webrtc.ice import LinkPath, link_path
from protocol.webrtc.sdp import SdpRole
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.webrtc")

CLOSE_NOTICE_SECONDS = 1.0  # how long a closing side waits for the peer to hang up after its CLOSE
SEND_BUFFER_HIGH = 1 << 20  # bytes aiortc may hold unsent per channel before ``send`` waits
INBOX_MESSAGES = 4_096
INBOX_SPARE_BYTES = 8 << 20  # what an inbox holds beyond one largest body before the link is refused


@dataclass(frozen=True)
class LinkPathReport:
    """How a link is connected: the data of the node's ``link-path`` event."""

    peer: PeerId
    path: LinkPath
    rtt_ms: float

    def as_event(self) -> dict[str, Any]:
        """``{"event": "link-path", "peer": …, "path": …, "rtt_ms": …}``."""
        return {"event": "link-path", "peer": self.peer, "path": self.path.value, "rtt_ms": self.rtt_ms}


def nominated_path(pc: RTCPeerConnection) -> LinkPath | None:
    """The path of the candidate pair ICE nominated, or None before one is. aioice keeps the pair in
    its connection's ``_nominated`` (component 1, the only one a bundled DataChannel connection has);
    neither aiortc nor aioice offers a public accessor."""
    sctp = pc.sctp
    if sctp is None:
        return None
    connection = sctp.transport.transport.iceGatherer._connection
    pair = connection._nominated.get(1)
    if pair is None:
        return None
    return link_path(pair.local_candidate.type, pair.remote_candidate.type)


class WebRTCCarrier:
    """One peer connection's DataChannels as a carrier of whole bodies. ``send`` may be called from any
    task, ``receive`` from one at a time. Made by the ``connector`` before the offer (so no early
    message is missed); ``peer_id``, ``transcript`` and ``role`` are set once the peer is bound."""

    def __init__(self, pc: RTCPeerConnection, kind: LinkKind, plans: tuple[ChannelPlan, ...], chunk: ChunkLimits) -> None:
        self.kind = kind
        self.peer_id = PeerId("")  # set once the peer is bound
        self.transcript = b""
        self.role = SdpRole.OFFERER
        self.path: LinkPath | None = None
        self.rtt_ms: float | None = None
        self.closed: LinkClosed | None = None
        self.pc = pc
        self._plans = {plan.lane: plan for plan in plans}
        self._channels: dict[Lane, RTCDataChannel] = {}
        self._readers: dict[Lane, ChannelReader] = {}
        self._bodies: deque[bytes] = deque()
        self._inbox_bytes = 0
        self._inbox_limit = max(plan.max_message_bytes for plan in plans) + INBOX_SPARE_BYTES
        self._arrived = trio.Event()
        self._opened = trio.Event()
        self._peer_gone = trio.Event()  # the connection or a channel closed
        self._failure: tuple[LinkClosed, bool] | None = None  # (reason, tell the peer) found in a callback
        self._drained = trio.Event()
        self._message_id = 0
        self._probe: tuple[int, int] | None = None  # (nonce, sent at ms)
        self._echoed = trio.Event()
        self._closing = False
        for plan in plans:
            channel = pc.createDataChannel(plan.label, ordered=plan.ordered, maxRetransmits=plan.max_retransmits,
                                           negotiated=True, id=plan.id)
            channel.bufferedAmountLowThreshold = SEND_BUFFER_HIGH // 2
            self._channels[plan.lane] = channel
            self._readers[plan.lane] = ChannelReader(
                ChunkLimits(plan.max_message_bytes, chunk.max_in_flight, chunk.deadline_ms) if plan.reliable else None)
            channel.on("message", lambda data, plan=plan: self._on_message(plan, data))
            channel.on("open", self._on_open)
            channel.on("close", self._on_channel_close)
            channel.on("bufferedamountlow", self._drained.set)
        pc.on("connectionstatechange", self._on_state)

    # ---- callbacks from aiortc (inside trio-asyncio's loop task: trio's synchronous calls are fine) ----

    def _on_open(self) -> None:
        if all(channel.readyState == "open" for channel in self._channels.values()):
            self._opened.set()

    def _on_channel_close(self) -> None:
        self._peer_gone.set()
        self._fail_soon(LinkClosed("link-broken", "the peer's DataChannel closed", by_peer=True), notify=False)

    def _on_state(self) -> None:
        state = self.pc.connectionState
        if state in ("failed", "closed"):
            self._peer_gone.set()
        if state == "failed":
            sctp = self.pc.sctp
            if sctp is not None and sctp.transport.state == "failed":
                self._fail_soon(LinkClosed("webrtc-dtls-failed", "the DTLS handshake failed: the certificate the peer "
                                           "presented does not match the fingerprint in its signed SDP, or the "
                                           "handshake was broken"), notify=False)
            else:
                self._fail_soon(LinkClosed("webrtc-ice-failed", "no ICE candidate pair connects the two peers "
                                           "(a NAT or firewall between them and no TURN relay both can reach)",
                                           by_peer=True), notify=False)
        elif state == "closed":
            self._fail_soon(LinkClosed("link-broken", "the peer connection closed", by_peer=True), notify=False)

    def _on_message(self, plan: ChannelPlan, data: bytes | str) -> None:
        if self._failure is not None or self.closed is not None:
            return
        try:
            if not isinstance(data, bytes):
                raise PeerError("chunk-malformed", "a link's DataChannel messages are binary")
            event = self._readers[plan.lane].read(data, now_ms())
            if event is None:
                self._arrived.set()  # a part: ``receive`` waits until its body's deadline at the latest
            elif isinstance(event, Body):
                self._deliver(event.data)
            elif isinstance(event, Closing):
                self._fail_soon(LinkClosed(event.code, f"the peer closed the link: {event.message}", by_peer=True),
                                notify=False)
            elif isinstance(event, Probed):
                self._channels[plan.lane].send(frame_probe(Kind.ECHO, event.nonce))
            elif isinstance(event, Echoed) and self._probe is not None and self._probe[0] == event.nonce:
                self.rtt_ms = float(now_ms() - self._probe[1])
                self._probe = None
                self._echoed.set()
        except PeerError as exc:
            self._fail_soon(LinkClosed(exc.code, exc.message), notify=True)

    def _deliver(self, body: bytes) -> None:
        if len(self._bodies) >= INBOX_MESSAGES or self._inbox_bytes + len(body) > self._inbox_limit:
            raise PeerError("carrier-inbox-full", f"the peer sent more than this node buffers ({INBOX_MESSAGES} "
                                                  f"messages or {self._inbox_limit} bytes) before it was read")
        self._bodies.append(body)
        self._inbox_bytes += len(body)
        self._arrived.set()

    def _fail_soon(self, reason: LinkClosed, *, notify: bool) -> None:
        """Record why the link ends; the next ``receive`` or ``send`` closes it (a callback cannot wait)."""
        if self._failure is None and self.closed is None and not self._closing:
            self._failure = (reason, notify)
        self._arrived.set()
        self._opened.set()
        self._drained.set()
        self._echoed.set()

    # ---- the carrier ----------------------------------------------------------------------------

    @property
    def remote_label(self) -> str:
        """The peer for logs: its PeerId once bound."""
        return self.peer_id or "(unbound)"

    def refuse(self, error: PeerError) -> None:
        """The negotiation refused what the peer signalled: the link ends with that code (the peer is told)."""
        self._fail_soon(LinkClosed(error.code, error.message), notify=True)

    def bind(self, peer_id: PeerId, transcript: bytes, role: SdpRole) -> None:
        """The peer is authenticated: who it is, the link's transcript, and this side's role."""
        self.peer_id, self.transcript, self.role = peer_id, transcript, role

    async def wait_open(self) -> None:
        """Until every channel is open; ``LinkClosed`` when the connection fails first."""
        await self._opened.wait()
        await self._raise_if_ended()

    async def measure(self) -> LinkPathReport:
        """The nominated pair's path and one PROBE round trip on the reliable lane (in ms)."""
        self.path = nominated_path(self.pc)
        self._echoed = trio.Event()
        nonce = secrets.randbits(32)
        self._probe = (nonce, now_ms())
        await self._send_frame(self._channels[Lane.RELIABLE], frame_probe(Kind.PROBE, nonce))
        await self._echoed.wait()
        await self._raise_if_ended()
        assert self.path is not None and self.rtt_ms is not None
        return LinkPathReport(self.peer_id, self.path, self.rtt_ms)

    async def send(self, body: bytes, lane: Lane = Lane.RELIABLE) -> None:
        """Send one body on ``lane``. ``LocalError``: a lane this link does not have
        (``carrier-lane-missing``), a body beyond the lane's bound (``carrier-body-too-large``);
        ``LinkClosed`` once the link has ended."""
        await self._raise_if_ended()
        plan = self._plans.get(lane)
        if plan is None:
            raise LocalError("carrier-lane-missing", f"a {self.kind} link has no {lane} lane")
        if len(body) > plan.max_message_bytes:
            raise LocalError("carrier-body-too-large", f"a body of {len(body)} bytes exceeds the {plan.label} "
                                                       f"channel's {plan.max_message_bytes}")
        if plan.reliable:
            self._message_id += 1
            frames = frame_body(body, self._message_id)
        else:
            frames = [frame_whole(body)]
        channel = self._channels[lane]
        for frame in frames:
            await self._send_frame(channel, frame)

    async def _send_frame(self, channel: RTCDataChannel, frame: bytes) -> None:
        while channel.bufferedAmount > SEND_BUFFER_HIGH:  # aiortc queues without bound: wait for it to drain
            self._drained = trio.Event()
            await self._drained.wait()
            await self._raise_if_ended()
        try:
            channel.send(frame)
        except Exception:  # aiortc's InvalidStateError: the channel closed under us
            await self._raise_if_ended()
            await self._end(LinkClosed("link-broken", "the DataChannel closed", by_peer=True), notify=False)

    async def receive(self) -> bytes:
        """The next body from the peer; ``LinkClosed`` once the link has ended."""
        while True:
            if self._bodies:
                body = self._bodies.popleft()
                self._inbox_bytes -= len(body)
                return body
            await self._raise_if_ended()
            self._arrived = trio.Event()
            deadline = min((d for r in self._readers.values() if (d := r.deadline_ms) is not None), default=None)
            if deadline is None:
                await self._arrived.wait()
            else:
                with trio.move_on_at(deadline / 1000):
                    await self._arrived.wait()
            now = now_ms()
            for reader in self._readers.values():
                try:
                    reader.expire(now)
                except PeerError as exc:
                    await self._end(LinkClosed(exc.code, exc.message), notify=True)

    async def _raise_if_ended(self) -> None:
        if self.closed is not None:
            raise self.closed.copy()
        if self._failure is not None:
            reason, notify = self._failure
            await self._end(reason, notify=notify)

    async def aclose(self, code: str = "link-closed", message: str = "the link was closed normally") -> None:
        """Tell the peer ``code`` and close. Idempotent; a link that already ended keeps its first reason."""
        reason = LinkClosed(code, message)
        notify = True
        if self._failure is not None:
            reason, notify = self._failure
        await self._shutdown(reason, notify=notify)

    async def _end(self, reason: LinkClosed, *, notify: bool) -> None:
        await self._shutdown(reason, notify=notify)
        assert self.closed is not None
        raise self.closed.copy()

    async def _shutdown(self, reason: LinkClosed, *, notify: bool) -> None:
        if self._closing:
            return
        self._closing = True
        if self.closed is None:
            self.closed = reason
            if reason.code != "link-closed":
                log.info("webrtc-link-closed", code=reason.code, reason=reason.message, by_peer=reason.by_peer,
                         peer=self.remote_label)
        with trio.CancelScope(shield=True):
            channel = self._channels.get(Lane.RELIABLE)
            if notify and channel is not None and channel.readyState == "open" and not self._peer_gone.is_set():
                try:
                    channel.send(frame_close(reason.code, reason.message))
                except Exception:  # closed meanwhile: nobody to tell
                    pass
                else:
                    with trio.move_on_after(CLOSE_NOTICE_SECONDS):
                        await self._peer_gone.wait()  # the peer read the reason and hung up
            await run_asyncio(self.pc.close)
