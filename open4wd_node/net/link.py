"""An authenticated, rate-limited message link to one peer, over any carrier of whole message bodies.

A link is two layers. Below, a **carrier** moves whole message bodies between this node and one peer,
already authenticated and protected against change in the middle. Above, the **link** holds the rules
that are the same whatever carries the bodies, so rooms, races, spectators and the soak run unchanged on
every transport. The seam between them is ``Carrier``:

- ``receive(channel)`` returns the next whole body the peer sent, in the order the carrier delivers them,
  never larger than ``channel.max_frame_bytes`` (a larger one announced or delivered raises
  ``ProtocolError`` ``frame-too-large``). A body the carrier cannot authenticate raises a ``PeerError``
  (``link-tampered``); the end of the connection raises ``LinkClosed`` with ``by_peer=True``
  (``link-eof``, ``link-broken``). It must be safe to cancel: a body is never lost to a cancelled call,
  since the link waits for the next body only until its keepalive's next deadline.
- ``receive_arrived(channel)`` returns every whole body that has already arrived, without waiting for
  more: an empty list when none has (a body partly arrived stays for later). The link's reader may read
  this way at moments of its own choosing (a race link's reader: once per tick of the frame pump), so that
  messages arriving in between do not wake the process one by one. A ``PeerError`` or ``LinkClosed`` ends
  the link as with ``receive``; the bodies that arrived before the end are returned first, and the end is
  raised at the next call.
- ``receive_first(max_frame_bytes)`` is ``receive`` for the link's first message, which a listener
  reads before it knows what the link is for: nothing after that body may be buffered, and no unit larger
  than ``max_frame_bytes`` on the wire,
  the carrier's own framing included, may be taken in.
- ``send(body, lane)`` delivers one whole body, in order with the other bodies of its ``Lane``: ``CONTROL``
  is reliable and ordered; ``INPUTS`` (the race's redundant per-frame inputs, each of which repeats every
  input the peer has not acknowledged) may go unordered and unreliable where the carrier has such a lane,
  and with the control lane where it has not. A broken carrier raises ``LinkClosed`` (``link-broken``); a
  call cancelled part-way leaves the carrier broken if half a body went out.
- ``aclose()`` closes the carrier at once (the link sends its ``link-close`` notice as an ordinary body
  first, when it has one to send); afterwards ``receive`` and ``send`` raise.
- ``address`` names the other end for the logs (``HOST:PORT``), or is None.
- ``path`` says how the carrier is connected (``host``, ``srflx``, ``prflx``, ``relay``: the ICE terms;
  a direct TCP connection is ``host``, a WebRTC link through TURN ``relay``), and ``rtt_ms`` the round trip it
  measured while opening (None if it measured none): what a ``link-path`` report says of a new link.

Who is at the other end comes with the carrier, as a ``LinkAuth``: the authenticated PeerId, the link's
transcript (a digest both sides share, unique to this session, which role admission's HMAC covers) and
this side's role. The TCP carrier gets them from its Noise XX handshake (``open4wd_node.net.stream_carrier``:
``u32be length ‖ sealed body`` frames over a ``trio.abc.Stream``); a carrier over WebRTC DataChannels gets
them from the signed SDP that binds the DTLS fingerprints.

What the link does above the carrier, for whatever carries it: strict decoding and the ingress buckets
(``IngressGuard``: a rate-limited message is dropped and counted, a malformed one is a violation, three
close the link), the send pacer (``SendPacer``: a sender waits rather than have its messages dropped by
the peer's buckets), keepalive pings and the round trip (``Keepalive``), the close codes and the
``link-close`` notice, the size cap of what the link is for (``repurpose``), and counting every end in
``LinkCounters``. Ping, pong and link-close never reach the caller. The link does this housekeeping while a
task waits in ``receive()``, so every link needs one task reading it, typically ``async for message in
link``; whatever ends a link, ``receive`` and ``send`` then raise ``LinkClosed`` with the reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

import trio

from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.link.handshake import MAX_CLOSE_TEXT, LinkClose, close_reason
from protocol.link.lane import Lane
from protocol.webrtc.ice import LinkPath
from protocol.encoding.wire import ROOM, Channel, Message, encode_message
from protocol.identity.keys import PeerId
from open4wd_node.net.link_rules import ROOM_LIMITS, IngressGuard, Keepalive, LinkLimits, LinkPing, LinkPong, SendPacer

CLOSE_NOTICE_SECONDS = 1.0  # how long a closing side tries to tell the peer why
TAMPERED = "link-tampered"


@dataclass
class LinkCounters:
    """How links ended, by close code: ``closes`` the ends this side decided (a refused handshake
    included), ``peer_closes`` the ones the other side decided or caused. One process-wide instance
    (``LINK_COUNTERS``) unless a caller passes its own to ``open_link``."""

    closes: Counter[str] = field(default_factory=Counter)
    peer_closes: Counter[str] = field(default_factory=Counter)

    @property
    def tampered(self) -> int:
        """Open links this side closed because a frame did not authenticate (``link-tampered``); a
        handshake message that does not is counted as ``noise-handshake-failed``."""
        return self.closes[TAMPERED]

    def record(self, reason: "LinkClosed") -> None:
        """Count one ended link (or refused handshake) under its code."""
        (self.peer_closes if reason.by_peer else self.closes)[reason.code] += 1


LINK_COUNTERS = LinkCounters()


class LinkClosed(Exception):
    """The link ended; ``code`` says why (``by_peer``: the other side decided or vanished)."""

    def __init__(self, code: str, message: str, *, by_peer: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.by_peer = by_peer

    def copy(self) -> "LinkClosed":
        """A fresh exception with the same reason, for every later caller of a closed link."""
        return LinkClosed(self.code, self.message, by_peer=self.by_peer)


def now_ms(clock: trio.abc.Clock | None = None) -> int:
    """trio's clock in whole milliseconds (MockClock in tests), the ``now_ms`` of the sans-IO rules.
    ``clock``: the run's clock, when the caller holds it (``trio.lowlevel.current_clock()``), read directly
    instead of through ``trio.current_time()``'s lookup of the run (a link asks for every message).

    Rounded, not floored: when a ``move_on_at(deadline_ms / 1000)`` fires, this must read at least
    ``deadline_ms`` (4.011 * 1000 is 4010.999…), or the timer would fire again and again."""
    return round((trio.current_time() if clock is None else clock.current_time()) * 1000)


def close_message(code: str, text: str) -> LinkClose:
    """The ``link-close`` notice that tells the peer ``code`` (its text cut to what the wire allows)."""
    return LinkClose(code=code, message=text[:MAX_CLOSE_TEXT])


@dataclass(frozen=True)
class LinkAuth:
    """Who is at the other end of a carrier, as its handshake proved it."""

    peer_id: PeerId
    """The authenticated PeerId of the other side."""
    transcript: bytes
    """A 32-byte digest both sides compute alike, unique to this session: role admission's HMAC covers it."""
    role: str
    """This side's role: ``dialer`` or ``listener``."""


@dataclass(frozen=True)
class LinkPathReport:
    """How a new link is connected: the data of the node's ``link-path`` event."""

    peer: PeerId
    path: LinkPath
    rtt_ms: float | None


class Carrier(Protocol):
    """Moves one link's whole message bodies to and from its peer (module docstring: what a carrier must do)."""

    @property
    def address(self) -> str | None:
        """The other end for the logs (``HOST:PORT``), or None."""

    @property
    def path(self) -> LinkPath:
        """How the carrier is connected."""

    @property
    def rtt_ms(self) -> float | None:
        """The round trip measured while the carrier opened, in ms (None: none measured)."""

    async def receive(self, channel: Channel) -> bytes:
        """The next whole body the peer sent, at most ``channel.max_frame_bytes``."""

    async def receive_arrived(self, channel: Channel) -> list[bytes]:
        """Every whole body that has arrived, without waiting for more (none: an empty list)."""

    async def receive_first(self, max_frame_bytes: int) -> bytes:
        """The first body, with nothing after it buffered, from a wire unit of at most ``max_frame_bytes``."""

    async def send(self, body: bytes, lane: Lane) -> None:
        """Deliver one whole body on ``lane``."""

    async def aclose(self) -> None:
        """Close at once; later calls of ``receive`` and ``send`` raise ``LinkClosed``."""


class Link:
    """An authenticated link to ``peer_id`` over ``carrier``. ``send`` may be called from any task;
    ``receive`` (or iteration) from one task at a time. Ping/pong and link-close never reach the caller."""

    def __init__(
        self,
        carrier: Carrier,
        auth: LinkAuth,
        *,
        expensive: frozenset[str] = frozenset(),
        limits: LinkLimits = ROOM_LIMITS,
        registry: dict[str, type[Message]] | None = None,
        counters: LinkCounters | None = None,
    ) -> None:
        self._clock = trio.lowlevel.current_clock()  # for ``now_ms``
        now = now_ms(self._clock)
        self.carrier = carrier
        self.peer_id = auth.peer_id
        self.transcript = auth.transcript
        self.role = auth.role
        self.limits = limits
        self.counters = LINK_COUNTERS if counters is None else counters
        self._guard = IngressGuard(limits, now, expensive, registry)
        self._pacer = SendPacer(limits, now, expensive)
        self._keepalive = Keepalive(limits, now)
        self._channel = ROOM
        self._input_types: frozenset[str] = frozenset()  # the message types sent on the inputs lane
        self._peeked: Message | None = None  # the first message ``peek_first`` saw, for ``receive``
        self._receiving = False
        self._closed: LinkClosed | None = None
        self._closed_by_caller = False
        self.on_drop: Callable[[str, str], None] | None = None
        """Told ``(bucket, message type)`` of every incoming message a rate limit dropped (the race counts them)."""

    def __repr__(self) -> str:
        return f"Link(peer_id={self.peer_id!r}, role={self.role!r})"

    @property
    def address(self) -> str | None:
        """The other end for the logs (``HOST:PORT``), None when the carrier has none (in memory)."""
        return self.carrier.address

    def path_report(self) -> LinkPathReport:
        """How this link is connected: its carrier's path, and the round trip measured when it opened (else
        the last ping's, if any)."""
        rtt = self.carrier.rtt_ms
        return LinkPathReport(self.peer_id, self.carrier.path, rtt if rtt is not None else self.rtt_ms)

    def repurpose(self, channel: Channel, limits: LinkLimits, expensive: frozenset[str] = frozenset(),
                  ingress: LinkLimits | None = None, inputs: frozenset[str] = frozenset()) -> None:
        """Apply the size cap and buckets of what this link turned out to be for (a race-mesh link
        carries 60 inputs a second and 4 MiB snapshots; a room link does not). Both ends must agree.
        ``limits`` pace what this side sends; ``ingress`` (default: the same) limits what it accepts, and
        may leave headroom above the peer's pace (a race link must take a catch-up burst whole).
        ``inputs``: the message types that may travel on the carrier's inputs lane (``Lane``)."""
        now = now_ms(self._clock)
        self.limits = limits
        self._channel = channel
        self._input_types = inputs
        self._guard = IngressGuard(ingress or limits, now, expensive, self._guard.registry)
        self._pacer = SendPacer(limits, now, expensive)

    @property
    def rtt_ms(self) -> int | None:
        """Round trip of the last answered ping, None before the first pong."""
        return self._keepalive.rtt_ms

    @property
    def closed(self) -> LinkClosed | None:
        """Why the link ended, or None while it is open."""
        return self._closed

    # ---- sending ---------------------------------------------------------------------------------

    async def send(self, msg: Message) -> None:
        """Send one message, first waiting as long as the peer's rate limits require (so nothing we send
        is dropped). A message larger than the channel allows (256 KiB on a room link) is refused with
        ``LocalError`` ``frame-too-large`` and the link stays up."""
        body = encode_message(msg)
        if len(body) > self._channel.max_frame_bytes:
            raise LocalError(
                "frame-too-large", f"{len(body)} bytes exceed the {self._channel.name} limit of {self._channel.max_frame_bytes}"
            )
        if self._closed is not None:
            raise self._closed.copy()
        while (wait_ms := self._pacer.delay_ms(msg.TYPE, len(body), now_ms(self._clock))) > 0:
            await trio.sleep(wait_ms / 1000)  # until the buckets hold the frame's tokens: a timer, not a poll
        await self._send_body(body, Lane.INPUTS if msg.TYPE in self._input_types else Lane.CONTROL)

    async def _send_body(self, body: bytes, lane: Lane) -> None:
        """Hand ``body`` to the carrier within the send timeout; a carrier that breaks or does not take it in
        time ends the link."""
        if self._closed is not None:
            raise self._closed.copy()
        with trio.move_on_after(self.limits.send_timeout_ms / 1000) as scope:
            try:
                await self.carrier.send(body, lane)
            except LinkClosed as broken:
                await self._end(broken, notify=False)
        if scope.cancelled_caught:
            await self._end(
                LinkClosed("link-send-timeout", f"the peer did not accept data for {self.limits.send_timeout_ms} ms"),
                notify=False,
            )

    # ---- receiving -------------------------------------------------------------------------------

    async def peek_first(self, max_frame_bytes: int) -> Message:
        """Wait for the link's first message and leave it for ``receive`` to return. Until it arrives,
        nothing after it is buffered (``Carrier.receive_first``) and a frame announcing more than
        ``max_frame_bytes`` closes the link (``frame-too-large``): what a listener reads before it knows
        what the link is for (docs/transport.md, "The listener's door")."""
        first = await self._receive(max_frame_bytes)
        self._peeked = first
        return first

    async def receive(self) -> Message:
        """The next message from the peer; raises ``LinkClosed`` once the link has ended."""
        if self._peeked is not None:
            peeked, self._peeked = self._peeked, None
            return peeked
        return await self._receive(None)

    def __aiter__(self) -> "Link":
        return self

    async def __anext__(self) -> Message:
        """Iteration stops after this side's own ``aclose``; any other end raises ``LinkClosed``."""
        try:
            return await self.receive()
        except LinkClosed:
            if self._closed_by_caller:
                raise StopAsyncIteration from None
            raise

    async def receive_arrived(self) -> list[Message]:
        """The messages that have arrived whole and wait to be taken, without waiting for more (none when
        nothing has), with the link's housekeeping as ``receive`` does it (a due ping sent, pings answered,
        silence timed): for a task that reads the link at moments of its own choosing (a race link's
        reader, once per tick of the frame pump) rather than as messages arrive. Raises ``LinkClosed`` once
        the link has ended, after returning the messages that came before its end."""
        if self._peeked is not None:
            raise LocalError("link-first-not-taken", "take the first message with receive before reading on")
        self._claim_reading()
        try:
            await self._keep_alive()
            try:
                bodies = await self.carrier.receive_arrived(self._channel)
            except (LinkClosed, PeerError) as exc:
                await self._ended_by(exc)
            messages: list[Message] = []
            for body in bodies:
                try:
                    msg = await self._take(body)
                except (LinkClosed, PeerError) as exc:
                    try:
                        await self._ended_by(exc)
                    except LinkClosed:
                        if messages:
                            return messages  # the messages before the end first; the end at the next call
                        raise
                if msg is not None:
                    messages.append(msg)
            return messages
        finally:
            self._receiving = False

    def _claim_reading(self) -> None:
        if self._receiving:
            raise trio.BusyResourceError("another task is already receiving on this link")
        self._receiving = True

    async def _receive(self, first_frame_bytes: int | None) -> Message:
        """The next message for the caller (``first_frame_bytes``: it is the link's first, read as
        ``peek_first`` says); meanwhile pings are sent and answered and silence is timed."""
        self._claim_reading()
        try:
            self._keepalive.heard(now_ms(self._clock))
            while True:
                await self._keep_alive()
                body: bytes | None = None
                with trio.move_on_at(self._keepalive.deadline_ms / 1000):
                    try:
                        if first_frame_bytes is None:
                            body = await self.carrier.receive(self._channel)
                        else:
                            body = await self.carrier.receive_first(first_frame_bytes)
                    except (LinkClosed, PeerError) as exc:
                        await self._ended_by(exc)
                if body is None:
                    continue  # the keepalive's deadline came first: the next turn pings or times out
                try:
                    msg = await self._take(body)
                except (LinkClosed, PeerError) as exc:
                    await self._ended_by(exc)
                if msg is not None:
                    return msg
        finally:
            self._receiving = False

    async def _keep_alive(self) -> None:
        """A turn of the reading loop begins: end it if the link has ended, send a ping when one is due,
        close the link when the peer was silent too long (``link-timeout``)."""
        if self._closed is not None:
            raise self._closed.copy()
        try:
            ping = self._keepalive.poll(now_ms(self._clock))
        except ProtocolError as silent:
            await self._fail(silent)
        if ping is not None:
            await self.send(ping)

    async def _take(self, body: bytes) -> Message | None:
        """What one body is: a message for the caller, or None (a drop, or the link's own: a ping is
        answered, a pong times the round trip). Raises the ``PeerError`` of a body the rules refuse, and
        ``LinkClosed`` for the peer's ``link-close``."""
        now = now_ms(self._clock)
        self._keepalive.heard(now)
        dropped = self._guard.dropped
        msg = self._guard.admit(body, now)
        if self._guard.dropped != dropped and self.on_drop is not None and self._guard.last_drop is not None:
            self.on_drop(*self._guard.last_drop)
        if msg is None:
            return None
        if isinstance(msg, LinkPing):
            await self.send(LinkPong(nonce=msg.nonce))
            return None
        if isinstance(msg, LinkPong):
            self._keepalive.pong(msg, now)
            return None
        if isinstance(msg, LinkClose):
            code, text = close_reason(msg)
            raise LinkClosed(code, f"the peer closed the link: {text}", by_peer=True)
        return msg

    async def _ended_by(self, exc: LinkClosed | PeerError) -> NoReturn:
        """The carrier or a body ended the link: the peer's own end (no notice), or a rule the peer broke
        (it is told the code)."""
        if isinstance(exc, LinkClosed):
            await self._end(exc, notify=False)
        await self._fail(exc)

    # ---- closing ------------------------------------------------------------------------------

    async def aclose(self, code: str = "link-closed", message: str = "the link was closed normally") -> None:
        """Tell the peer ``code`` and close. Idempotent; a link that already ended keeps its first reason."""
        if self._closed is None:
            self._closed_by_caller = True
        await self._shutdown(LinkClosed(code, message), notify=True)

    async def __aenter__(self) -> "Link":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _shutdown(self, reason: LinkClosed, *, notify: bool) -> None:
        """Record the first reason and close the carrier, first telling the peer the reason if asked (best
        effort, for at most ``CLOSE_NOTICE_SECONDS``, as an ordinary body: our sending direction is intact)."""
        first = self._closed is None
        if first:
            self._closed = reason
            self.counters.record(reason)
        try:
            if first and notify:
                with trio.move_on_after(CLOSE_NOTICE_SECONDS):
                    await self.carrier.send(encode_message(close_message(reason.code, reason.message)), Lane.CONTROL)
        except LinkClosed:
            pass  # the peer is gone already: nobody to tell
        finally:
            with trio.CancelScope(shield=True):
                await self.carrier.aclose()

    async def _fail(self, exc: PeerError) -> NoReturn:
        await self._end(LinkClosed(exc.code, exc.message), notify=True)

    async def _end(self, reason: LinkClosed, *, notify: bool) -> NoReturn:
        await self._shutdown(reason, notify=notify)
        closed = self._closed
        assert closed is not None
        raise closed.copy()
