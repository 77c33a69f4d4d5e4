"""A WebRTC link's carrier (``open4wd_node.net.link.Carrier``): whole message bodies over the negotiated
DataChannels of one peer connection.

The link's rules (strict decoding, rate limits, keepalive, the ``link-close`` notice) sit above the carrier
as they do over TCP; here the bodies are DataChannel messages framed by ``protocol.webrtc.chunks``
(WHOLE, PARTs of a large body, CLOSE with a coded reason, PROBE/ECHO for the round trip). The DataChannels
are DTLS-encrypted and the DTLS certificate is bound to the peer's PeerId by the fingerprint in its signed
SDP (``connector``), so the carrier seals nothing itself.

- ``send(body, lane)``: one body on the reliable lane (split into parts when it exceeds one DataChannel
  message) or, for ``Lane.INPUTS`` on a link that has the unordered lossy ``race`` channel, on that
  channel (a body too large for one message goes on the reliable lane, which alone carries parts);
- ``receive(channel)`` / ``receive_arrived(channel)`` / ``receive_first(max)``: the next body from either
  channel in arrival order; the reliable channel's reassembly bound follows what the link reads now (the
  first message's few KiB, then the room's 256 KiB or a race link's 4 MiB), and a body beyond it is
  ``frame-too-large``;
- ``aclose(code)``: close (after the link's own notice, a ``link-close`` body); with a ``code``, the
  carrier tells the peer itself in a CLOSE message (what a negotiation that fails before there is a link
  does).

aiortc runs on the bridge's asyncio thread (``bridge``): every callback it fires for this carrier (a message,
a channel opening or closing, a state change) is handed to trio in the order it fired, in batches, and the
carrier's own DataChannel sends are handed to the asyncio thread the same way. Everything else, the
readers, the inbox, the events a reader waits on, lives in trio alone. A send aiortc refuses there (the
channel closed under it) or a callback that fails ends the link with its code, as a connection's end does.

What the peer sends is checked as it is handed to trio, before anything is buffered: a malformed message,
a large body beyond its channel's bound, too many unfinished ones, a part that never comes (the
deadline, checked while a task waits in ``receive``) or an inbox the reader cannot keep up with is a
``PeerError`` the next ``receive`` raises, so the link tells the peer the code and ends, and only this
link.
"""

from __future__ import annotations

import secrets
from collections import deque
from dataclasses import replace
from collections.abc import Callable
from typing import Any, NoReturn

import structlog
import trio
from aiortc import RTCDataChannel, RTCPeerConnection

from open4wd_node.net.link import LinkClosed, now_ms
from protocol.encoding.wire import Channel
from open4wd_node.net.webrtc.bridge import AsyncioThread
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.link.lane import Lane
from protocol.webrtc.channels import ChannelPlan, LinkKind
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


def nominated_pair(pc: RTCPeerConnection) -> tuple[LinkPath, str] | None:
    """The path of the candidate pair ICE nominated and the peer's ``HOST:PORT`` in it, or None before one
    is. aioice keeps the pair in its connection's ``_nominated`` (component 1, the only one a bundled
    DataChannel connection has); neither aiortc nor aioice offers a public accessor."""
    sctp = pc.sctp
    if sctp is None:
        return None
    connection = sctp.transport.transport.iceGatherer._connection
    pair = connection._nominated.get(1)
    if pair is None:
        return None
    remote = pair.remote_candidate
    host = f"[{remote.host}]" if ":" in remote.host else remote.host
    return link_path(pair.local_candidate.type, remote.type), f"{host}:{remote.port}"


class WebRTCCarrier:
    """One peer connection's DataChannels as a link's carrier (module docstring). Made by the ``connector``
    before the offer (so no early message is missed); ``peer_id``, ``transcript`` and ``role`` are set once
    the peer is bound, ``path``, ``address`` and ``rtt_ms`` once the link is open."""

    def __init__(self, pc: RTCPeerConnection, bridge: AsyncioThread, kind: LinkKind, plans: tuple[ChannelPlan, ...],
                 chunk: ChunkLimits) -> None:
        """Made on the bridge's asyncio thread (aiortc's channels are created there); what aiortc fires is
        handed to trio from then on."""
        self.kind = kind
        self._bridge = bridge  # the asyncio thread the peer connection runs on
        self._posted_bytes = 0  # frames handed to the asyncio thread (written in trio only)
        self._sent_bytes = 0  # of those, given to aiortc (written on the asyncio thread only)
        self.peer_id = PeerId("")  # set once the peer is bound
        self.transcript = b""
        self.role = SdpRole.OFFERER
        self.rtt_ms: float | None = None
        self.closed: LinkClosed | None = None
        self.pc = pc
        self._path = LinkPath.HOST
        self._address: str | None = None
        self._plans = {plan.lane: plan for plan in plans}
        self._channels: dict[Lane, RTCDataChannel] = {}
        self._readers: dict[Lane, ChannelReader] = {}
        self._bodies: deque[bytes] = deque()
        self._inbox_bytes = 0
        self._inbox_limit = max(plan.max_message_bytes for plan in plans) + INBOX_SPARE_BYTES
        self._arrived = trio.Event()
        self._opened = trio.Event()
        self._peer_gone = trio.Event()  # the connection or a channel closed
        self._failure: LinkClosed | None = None  # the connection ended, or the peer closed: found in a callback
        self._refused: PeerError | None = None  # what the peer sent broke a rule: the link tells it and ends
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
            channel.on("message", lambda data, plan=plan: self._in_trio(self._on_message, plan, data))
            channel.on("open", lambda: self._in_trio(self._on_open))
            channel.on("close", lambda: self._in_trio(self._on_channel_close))
            channel.on("bufferedamountlow", lambda: self._in_trio(self._on_drained))
        pc.on("connectionstatechange", lambda: self._in_trio(self._on_state, pc.connectionState,
                                                            pc.sctp.transport.state if pc.sctp else None))
        bridge.watch(self)

    # ---- what aiortc fired, handed to trio in order ----------------------------------------------

    def _in_trio(self, function: Callable[..., object], *args: Any) -> None:
        """On the asyncio thread: run what aiortc fired for this link in trio, in order."""
        self._bridge.call_in_trio(self._callback_failed, function, *args)

    def _send_refused(self, exc: BaseException) -> None:
        """aiortc refused a send on its thread (InvalidStateError: the channel closed under it): the link ends."""
        self._peer_gone.set()
        self._fail_soon(LinkClosed("link-broken", f"the DataChannel closed: {exc!r}", by_peer=True))

    def _callback_failed(self, exc: BaseException) -> None:
        """This node's own bug while it handled what aiortc fired: logged, and the link ends (not the peer's fault)."""
        log.error("webrtc-callback-failed", error=repr(exc), peer=self.remote_label)
        self._fail_soon(LinkClosed("internal-error", f"this node failed on what its DataChannel delivered: {exc!r}"))

    def bridge_ended(self, reason: LinkClosed) -> None:
        """The bridge's loop died: the link ends with ``reason`` (``webrtc-bridge-failed``)."""
        self._peer_gone.set()
        self._fail_soon(reason)

    def _on_drained(self) -> None:
        self._drained.set()

    def _on_open(self) -> None:
        if all(channel.readyState == "open" for channel in self._channels.values()):
            self._opened.set()

    def _on_channel_close(self) -> None:
        self._peer_gone.set()
        self._fail_soon(LinkClosed("link-broken", "the peer's DataChannel closed", by_peer=True))

    def _on_state(self, state: str, dtls_state: str | None) -> None:
        if state in ("failed", "closed"):
            self._peer_gone.set()
        if state == "failed":
            if dtls_state == "failed":
                self._fail_soon(LinkClosed("webrtc-dtls-failed", "the DTLS handshake failed: the certificate the peer "
                                           "presented does not match the fingerprint in its signed SDP, or the "
                                           "handshake was broken"))
            else:
                self._fail_soon(LinkClosed("webrtc-ice-failed", "no ICE candidate pair connects the two peers "
                                           "(a NAT or firewall between them and no TURN relay both can reach)",
                                           by_peer=True))
        elif state == "closed":
            self._fail_soon(LinkClosed("link-broken", "the peer connection closed", by_peer=True))

    def _on_message(self, plan: ChannelPlan, data: bytes | str) -> None:
        if self._failure is not None or self._refused is not None or self.closed is not None:
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
                self._fail_soon(LinkClosed(event.code, f"the peer closed the link: {event.message}", by_peer=True))
            elif isinstance(event, Probed):
                self._post(self._channels[plan.lane], frame_probe(Kind.ECHO, event.nonce))
            elif isinstance(event, Echoed) and self._probe is not None and self._probe[0] == event.nonce:
                self.rtt_ms = float(now_ms() - self._probe[1])
                self._probe = None
                self._echoed.set()
        except PeerError as exc:
            self.refuse(exc)

    def _deliver(self, body: bytes) -> None:
        if len(self._bodies) >= INBOX_MESSAGES or self._inbox_bytes + len(body) > self._inbox_limit:
            raise PeerError("carrier-inbox-full", f"the peer sent more than this node buffers ({INBOX_MESSAGES} "
                                                  f"messages or {self._inbox_limit} bytes) before it was read")
        self._bodies.append(body)
        self._inbox_bytes += len(body)
        self._arrived.set()

    def _wake(self) -> None:
        self._arrived.set()
        self._opened.set()
        self._drained.set()
        self._echoed.set()

    def _fail_soon(self, reason: LinkClosed) -> None:
        """Record why the connection ended; the next ``receive`` or ``send`` closes the carrier (a callback
        cannot wait)."""
        if self._failure is None and self.closed is None and not self._closing:
            self._failure = reason
        self._wake()

    # ---- the carrier ----------------------------------------------------------------------------

    @property
    def address(self) -> str | None:
        """The peer's ``HOST:PORT`` in the nominated candidate pair (a TURN relay's address for a relayed
        link), once the link is open."""
        return self._address

    @property
    def path(self) -> LinkPath:
        """How the link is connected: the nominated pair's path (``host`` until it is measured)."""
        return self._path

    @property
    def remote_label(self) -> str:
        """The peer for logs: its PeerId once bound."""
        return self.peer_id or "(unbound)"

    def refuse(self, error: PeerError) -> None:
        """The peer broke a rule (in what it signalled or sent): the next ``receive`` raises ``error``."""
        if self._refused is None:
            self._refused = error
        self._wake()

    def bind(self, peer_id: PeerId, transcript: bytes, role: SdpRole) -> None:
        """The peer is authenticated: who it is, the link's transcript, and this side's role."""
        self.peer_id, self.transcript, self.role = peer_id, transcript, role

    async def wait_open(self) -> None:
        """Until every channel is open; ``LinkClosed`` when the connection fails first, the ``PeerError``
        of a rule the peer broke meanwhile."""
        await self._opened.wait()
        await self._raise_if_refused()

    async def measure(self) -> None:
        """The nominated pair's path and the peer's address in it, and one PROBE round trip on the
        reliable lane (in ms)."""
        nominated = nominated_pair(self.pc)
        if nominated is not None:
            self._path, self._address = nominated
        self._echoed = trio.Event()
        nonce = secrets.randbits(32)
        self._probe = (nonce, now_ms())
        await self._send_frame(self._channels[Lane.CONTROL], frame_probe(Kind.PROBE, nonce))
        await self._echoed.wait()
        await self._raise_if_ended()

    async def send(self, body: bytes, lane: Lane) -> None:
        """Send one body on ``lane`` (``Lane.INPUTS`` on the reliable lane where this link has no lossy one,
        or the body does not fit one message); ``LocalError`` ``carrier-body-too-large`` beyond the reliable
        lane's bound; ``LinkClosed`` once the link has ended."""
        await self._raise_if_ended()
        reliable = self._plans[Lane.CONTROL]
        plan = self._plans.get(lane, reliable)
        if len(body) > plan.max_message_bytes:
            plan = reliable
        if len(body) > plan.max_message_bytes:
            raise LocalError("carrier-body-too-large", f"a body of {len(body)} bytes exceeds the {plan.label} "
                                                       f"channel's {plan.max_message_bytes}")
        if plan.reliable:
            self._message_id += 1
            frames = frame_body(body, self._message_id)
        else:
            frames = [frame_whole(body)]
        channel = self._channels[plan.lane]
        for frame in frames:
            await self._send_frame(channel, frame)

    async def _send_frame(self, channel: RTCDataChannel, frame: bytes) -> None:
        # aiortc queues without bound: wait for it to drain what it holds and what is on the way to it
        while channel.bufferedAmount + self._posted_bytes - self._sent_bytes > SEND_BUFFER_HIGH:
            self._drained = trio.Event()
            await self._drained.wait()
            await self._raise_if_ended()
        self._post(channel, frame)

    def _post(self, channel: RTCDataChannel, frame: bytes) -> None:
        """Hand ``frame`` to the asyncio thread for ``channel``; a refusal there ends the link (``_send_refused``)."""
        self._posted_bytes += len(frame)
        self._bridge.call_on_loop(self._send_refused, self._send_now, channel, frame)

    def _send_now(self, channel: RTCDataChannel, frame: bytes) -> None:
        """On the asyncio thread: give ``frame`` to aiortc (InvalidStateError once the channel closed)."""
        self._sent_bytes += len(frame)
        channel.send(frame)

    def _bound(self, max_bytes: int) -> None:
        """The reliable lane reassembles bodies of at most ``max_bytes`` from now on (what the link reads now)."""
        reassembler = self._readers[Lane.CONTROL].reassembler
        if reassembler is not None and reassembler.limits.max_message_bytes != max_bytes:
            reassembler.limits = replace(reassembler.limits, max_message_bytes=max_bytes)

    def _take(self, max_bytes: int) -> bytes:
        body = self._bodies.popleft()
        self._inbox_bytes -= len(body)
        if len(body) > max_bytes:
            raise ProtocolError("frame-too-large", f"a body of {len(body)} bytes exceeds the link's limit of {max_bytes}")
        return body

    async def receive(self, channel: Channel) -> bytes:
        """The next body from the peer, at most ``channel.max_frame_bytes`` (``Carrier.receive``)."""
        return await self._receive(channel.max_frame_bytes)

    async def receive_first(self, max_frame_bytes: int) -> bytes:
        """The first body, at most ``max_frame_bytes`` (``Carrier.receive_first``): a DataChannel carrier
        has no stream to hand over, and the reliable lane reassembles nothing larger meanwhile."""
        return await self._receive(max_frame_bytes)

    async def receive_arrived(self, channel: Channel) -> list[bytes]:
        """Every body that has arrived, without waiting (``Carrier.receive_arrived``)."""
        self._bound(channel.max_frame_bytes)
        bodies: list[bytes] = []
        try:
            self._expire()
            while self._bodies:
                bodies.append(self._take(channel.max_frame_bytes))
            await self._raise_if_refused()
        except (LinkClosed, PeerError):
            if bodies:
                return bodies  # the bodies before the end first; the end again at the next call
            raise
        return bodies

    async def _receive(self, max_bytes: int) -> bytes:
        self._bound(max_bytes)
        while True:
            if self._bodies:
                return self._take(max_bytes)
            await self._raise_if_refused()
            self._arrived = trio.Event()
            deadline = min((d for r in self._readers.values() if (d := r.deadline_ms) is not None), default=None)
            if deadline is None:
                await self._arrived.wait()
            else:
                with trio.move_on_at(deadline / 1000):
                    await self._arrived.wait()
            self._expire()

    def _expire(self) -> None:
        """``PeerError`` ``chunk-unfinished`` for a large body whose parts did not all come in time."""
        now = now_ms()
        for reader in self._readers.values():
            reader.expire(now)

    async def _raise_if_ended(self) -> None:
        if self.closed is not None:
            raise self.closed.copy()
        if self._failure is not None:
            await self._end(self._failure)

    async def _raise_if_refused(self) -> None:
        """What ends the reading side: the connection's end, or a rule the peer broke (the link tells it
        the code over this carrier, which still sends)."""
        await self._raise_if_ended()
        if self._refused is not None:
            raise self._refused

    async def aclose(self, code: str | None = None, message: str = "the link was closed") -> None:
        """Close the peer connection; with ``code`` (no link above this carrier to say it), tell the peer
        first in a CLOSE message. Waits up to ``CLOSE_NOTICE_SECONDS`` for the peer to hang up once it was
        told, so that what was sent last is not cut off. Idempotent."""
        await self._shutdown(LinkClosed(code or "link-closed", message), notify=code is not None)

    async def _end(self, reason: LinkClosed) -> NoReturn:
        await self._shutdown(reason, notify=False)
        assert self.closed is not None
        raise self.closed.copy()

    async def _shutdown(self, reason: LinkClosed, *, notify: bool) -> None:
        if self._closing:
            return
        self._closing = True
        if self.closed is None:
            self.closed = self._failure or reason
            if self.closed.code != "link-closed":
                log.info("webrtc-link-closed", code=self.closed.code, reason=self.closed.message,
                         by_peer=self.closed.by_peer, peer=self.remote_label)
        self._wake()
        with trio.CancelScope(shield=True):
            channel = self._channels.get(Lane.CONTROL)
            if channel is not None and channel.readyState == "open" and not self._peer_gone.is_set():
                if notify:  # refused there when the channel closed meanwhile: nobody to tell
                    self._post(channel, frame_close(reason.code, reason.message))
                with trio.move_on_after(CLOSE_NOTICE_SECONDS):
                    await self._peer_gone.wait()  # the peer read the last message (a link-close) and hung up
            try:
                await self._bridge.run(self.pc.close)
            except LinkClosed:  # the bridge's loop has ended: the peer connection ended with it
                pass
