"""An encrypted, authenticated, rate-limited message link over any ``trio.abc.Stream`` (TCP or in-memory).

``open_link`` runs the Noise XX handshake (protocol.link.handshake) within its timeout and returns a
``Link``. From then on every frame is ``u32be(length) ‖ sealed(body)``: the body sealed by this
direction's cipher (ChaCha20-Poly1305 with Noise's counter as nonce), so a frame that was changed,
injected, replayed, reordered or follows a dropped one does not open, and the link closes with
``link-tampered`` (logged with the peer and its address, and counted in ``LinkCounters``).

The link does its housekeeping (answering and sending pings, noticing silence, enforcing limits) while a
task waits in ``receive()``, so every link needs one task reading it, typically ``async for message in
link``. Whatever ends a link, ``receive`` and ``send`` then raise ``LinkClosed`` with the reason.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import NoReturn

import structlog
import trio

from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.link.handshake import (
    LISTENER,
    MAX_CLOSE_TEXT,
    FrameCipher,
    Handshake,
    HandshakeResult,
    LinkClose,
    close_reason,
    decode_handshake_message,
)
from protocol.identity.keys import Identity
from protocol.race.costs import NO_COST_METER, CostMeter, CostPart
from protocol.encoding.wire import HANDSHAKE, HEADER, ROOM, Channel, FrameDecoder, Message, encode_frame, encode_message
from open4wd_node.net.admission import ExactFrame
from open4wd_node.runtime.addresses import Address
from open4wd_node.net.link_rules import ROOM_LIMITS, IngressGuard, Keepalive, LinkLimits, LinkPing, LinkPong, SendPacer

log = structlog.get_logger("open4wd_node.link")

RECEIVE_CHUNK = 64 * 1024
READS_PER_CALL = 16  # ``read_now`` reads at most this many chunks (1 MiB): a flood cannot hold the caller's tick
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


def peer_endpoint(stream: trio.abc.Stream) -> Address | None:
    """The other end of a socket stream (None for an in-memory stream, a closed socket or one without an
    IP address: a UNIX socket's peer name is a path or ``''``, not ``(host, port)``)."""
    sock = getattr(stream, "socket", None)
    if sock is None:
        return None
    try:
        name = sock.getpeername()
    except OSError:
        return None
    if not isinstance(name, tuple):
        return None
    return Address(name[0], name[1])


def peer_address(stream: trio.abc.Stream) -> str | None:
    """``HOST:PORT`` of the other end of a socket stream (None when ``peer_endpoint`` has none)."""
    endpoint = peer_endpoint(stream)
    return None if endpoint is None else str(endpoint)


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


def _handshake_frame(msg: Message) -> bytes:
    return encode_frame(encode_message(msg), HANDSHAKE)


def _close_message(code: str, text: str) -> LinkClose:
    return LinkClose(code=code, message=text[:MAX_CLOSE_TEXT])


async def _tell_and_close(stream: trio.abc.Stream, frame: Callable[[], bytes], send_lock: trio.Lock | None = None) -> None:
    """Best effort: send the ``link-close`` that ``frame()`` builds (called under ``send_lock``, so a
    sealed one takes the next counter in order) for a moment, then close the stream whatever happens."""
    try:
        with trio.move_on_after(CLOSE_NOTICE_SECONDS):
            async with send_lock or nullcontext():
                await stream.send_all(frame())
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    except BaseException:  # not ``finally``: no ``await`` in a ``finally`` of a compiled module (setup.py)
        await trio.aclose_forcefully(stream)
        raise
    await trio.aclose_forcefully(stream)


async def refuse_unopened(stream: trio.abc.Stream, code: str, text: str, counters: LinkCounters | None = None) -> None:
    """Refuse a connection before any handshake (a listener that is busy): tell the peer ``code`` in
    the clear on the handshake channel, where a dialer reads it as the listener's answer, count the
    refusal and close the stream."""
    await _tell_and_close(stream, lambda: _handshake_frame(_close_message(code, text)))
    (LINK_COUNTERS if counters is None else counters).record(LinkClosed(code, text))


async def _receive_exactly(stream: trio.abc.Stream, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = await stream.receive_some(count - len(data))
        if not chunk:
            raise LinkClosed("link-eof", "the peer hung up during the handshake", by_peer=True)
        data += chunk
    return bytes(data)


_FOREIGN_GREETINGS = (  # what other servers and clients send first, as 4 bytes
    ((b"HTTP", b"GET ", b"POST", b"PUT ", b"HEAD", b"DELE", b"OPTI", b"PATC", b"CONN", b"PRI "), "HTTP"),
    ((b"SSH-",), "SSH"),
    ((b"\x16\x03\x00", b"\x16\x03\x01", b"\x16\x03\x02", b"\x16\x03\x03"), "TLS"),
)


def foreign_protocol(header: bytes) -> str | None:
    """What the first 4 bytes of a connection are, when they cannot be an Open4WD frame header:
    "HTTP", "SSH", "TLS", "text", or None (an Open4WD length, or bytes with no telling shape)."""
    (length,) = HEADER.unpack(header)
    if length <= HANDSHAKE.max_frame_bytes:
        return None
    for prefixes, name in _FOREIGN_GREETINGS:
        if header.startswith(prefixes):
            return name
    return "text" if all(32 <= b < 127 or b in b"\r\n\t" for b in header) else None


def _not_open4wd(header: bytes, kind: str) -> ProtocolError:
    looks = "is text" if kind == "text" else f"look like {kind}"
    return ProtocolError(
        "peer-not-open4wd",
        f"the other end does not speak the Open4WD link protocol: its first bytes {header.decode('latin-1')!r} {looks}; "
        "check the host and port (another program listens there)",
    )


async def _receive_handshake_frame(stream: trio.abc.Stream) -> bytes:
    """One handshake frame, read exactly, so bytes of the first link messages stay in the stream."""
    decoder = FrameDecoder(HANDSHAKE)
    header = await _receive_exactly(stream, HEADER.size)
    if (kind := foreign_protocol(header)) is not None:  # a web server on the dialled port, a browser on ours, …
        raise _not_open4wd(header, kind)
    (length,) = HEADER.unpack(header)
    # feeding the header first refuses an oversize announcement before any body byte is read
    (body,) = decoder.feed(header) + decoder.feed(await _receive_exactly(stream, length))
    return body


async def _send_handshake(stream: trio.abc.Stream, messages: list[Message]) -> None:
    if messages:
        await stream.send_all(b"".join(_handshake_frame(msg) for msg in messages))


def _refusal_frame(close: LinkClose, handshake: Handshake | None) -> bytes:
    """A handshake refusal: in the clear, as nothing is keyed yet, unless the other side's link is open
    already (a listener refusing message 3), which then reads it sealed like any frame."""
    cipher = None if handshake is None else handshake.refusal_cipher
    if cipher is None:
        return _handshake_frame(close)
    sealed = cipher.seal(encode_message(close))
    return HEADER.pack(len(sealed)) + sealed


async def _run_handshake(stream: trio.abc.Stream, handshake: Handshake) -> HandshakeResult:
    heard = False
    with trio.move_on_at(handshake.deadline_ms / 1000):
        await _send_handshake(stream, handshake.start())
        while handshake.result is None:
            msg = decode_handshake_message(await _receive_handshake_frame(stream))
            heard = True
            if isinstance(msg, LinkClose):
                code, text = close_reason(msg)
                raise LinkClosed(code, f"the peer refused the link: {text}", by_peer=True)
            await _send_handshake(stream, handshake.receive(msg, now_ms()))
        return handshake.result
    try:
        handshake.expire(handshake.deadline_ms)  # the deadline timer fired
    except ProtocolError as exc:
        if heard or handshake.role == LISTENER:  # a listener waits for the dialer: silence is the dialer's
            raise
        raise ProtocolError(exc.code, f"{exc.message}: the other end accepted the connection but never answered; "
                            "it is not an Open4WD node (a web server waiting for a request?) or that node is stuck: "
                            "check the host and port") from None
    raise AssertionError("unreachable: expire raises once the deadline has passed")


async def open_link(
    stream: trio.abc.Stream,
    identity: Identity,
    role: str,
    *,
    expected_peer: str | None = None,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
    counters: LinkCounters | None = None,
) -> "Link":
    """Run the Noise handshake on ``stream`` as ``role`` ("dialer" or "listener"); on failure the stream
    is closed (after telling the peer the code: in the clear, or sealed by a listener refusing the
    identity of a valid message 3) and ``LinkClosed`` is raised. Refusals and ends are counted in
    ``counters`` (default ``LINK_COUNTERS``)."""
    counters = LINK_COUNTERS if counters is None else counters
    handshake: Handshake | None = None
    try:
        handshake = Handshake(identity, role, now_ms(), expected_peer=expected_peer, timeout_ms=limits.handshake_timeout_ms)
        result = await _run_handshake(stream, handshake)
    except ProtocolError as refused:  # one name per exception type in a function: setup.py RACE_SHELL
        notice = _refusal_frame(_close_message(refused.code, refused.message), handshake)
        await _tell_and_close(stream, lambda: notice)
        counters.record(closed := LinkClosed(refused.code, refused.message))
        raise closed from None
    except LinkClosed as ended:
        counters.record(ended)
        await trio.aclose_forcefully(stream)
        raise
    except BaseException as other:  # a broken stream, cancellation: never leave the stream open
        await trio.aclose_forcefully(stream)
        if isinstance(other, (trio.BrokenResourceError, trio.ClosedResourceError)):
            counters.record(broken := LinkClosed("link-broken", "the connection broke during the handshake", by_peer=True))
            raise broken from None
        raise
    return Link(stream, result, expensive=expensive, limits=limits, registry=registry, counters=counters)


def _sealed(channel: Channel, overhead: int) -> Channel:
    """What the length prefix of a sealed frame of ``channel`` may announce: its body plus the tag."""
    return Channel(f"sealed {channel.name}", channel.max_frame_bytes + overhead) if overhead else channel


class Link:
    """An encrypted, authenticated link to ``peer_id``. ``send`` may be called from any task; ``receive``
    (or iteration) from one task at a time. Ping/pong and link-close never reach the caller.

    The two frame ciphers come by composition from ``result`` (the handshake's Noise transport ciphers
    in the product; a benchmark may pass others)."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        result: HandshakeResult,
        *,
        expensive: frozenset[str] = frozenset(),
        limits: LinkLimits = ROOM_LIMITS,
        registry: dict[str, type[Message]] | None = None,
        counters: LinkCounters | None = None,
    ) -> None:
        self._clock = trio.lowlevel.current_clock()  # for ``now_ms``
        now = now_ms(self._clock)
        self.peer_id = result.peer_id
        self.transcript = result.transcript
        self.role = result.role
        self.limits = limits
        self.address = peer_address(stream)  # HOST:PORT of the other end, None in memory (for logs)
        self.counters = LINK_COUNTERS if counters is None else counters
        self._stream = stream
        self._send_cipher: FrameCipher = result.send
        self._receive_cipher: FrameCipher = result.receive
        self._guard = IngressGuard(limits, now, expensive, registry)
        self._pacer = SendPacer(limits, now, expensive)
        self._keepalive = Keepalive(limits, now)
        self._channel = ROOM
        self._decoder = FrameDecoder(_sealed(ROOM, self._receive_cipher.overhead))
        self._bodies: deque[bytes] = deque()
        self._exact: ExactFrame | None = None  # while ``peek_first`` waits: frames read exactly, capped
        self._peeked: Message | None = None  # the first message ``peek_first`` saw, for ``receive``
        self._send_lock = trio.Lock()
        self._fd = stream.socket.fileno() if isinstance(stream, trio.SocketStream) else None  # for ``send_now``
        self._unsent = b""  # the tail of a frame ``send_now`` could not write whole: goes out before any other
        self._receiving = False
        self._reads_back: trio.Event | None = None  # set while the caller reads the socket (``take_reads``)
        self._read_failure: tuple[LinkClosed, bool] | None = None  # how ``read_now`` saw the link end (reason, notify)
        self._owed: Message | None = None  # a ping or pong ``read_now`` could not send at once: sent first thing next
        self._closed: LinkClosed | None = None
        self._closed_by_caller = False
        self._detached = False
        self.meter: CostMeter = NO_COST_METER
        """Hears which of this link's work is encoding and decoding (a race node's ``CpuBudget``)."""
        self.on_drop: Callable[[str, str], None] | None = None
        """Told ``(bucket, message type)`` of every incoming message a rate limit dropped (the race counts them)."""

    def __repr__(self) -> str:
        return f"Link(peer_id={self.peer_id!r}, role={self.role!r})"

    def repurpose(self, channel: Channel, limits: LinkLimits, expensive: frozenset[str] = frozenset(),
                  ingress: LinkLimits | None = None) -> None:
        """Apply the size cap and buckets of what this link turned out to be for (a race-mesh link
        carries 60 inputs a second and 4 MiB snapshots; a room link does not). Both ends must agree.
        ``limits`` pace what this side sends; ``ingress`` (default: the same) limits what it accepts, and
        may leave headroom above the peer's pace (a race link must take a catch-up burst whole)."""
        now = now_ms(self._clock)
        self.limits = limits
        self._channel = channel
        self._decoder.channel = _sealed(channel, self._receive_cipher.overhead)
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

    def _raise_if_closed(self) -> None:
        """Raise (a copy of) why the link ended, if it did. A method, not an inline test, because another
        task may end the link while the caller awaits: an inline ``self._closed is not None`` narrows the
        attribute for the rest of the caller, and compiled code trusts that narrowing after an ``await``
        (setup.py, ``RACE_SHELL``)."""
        closed = self._closed
        if closed is not None:
            raise closed.copy() from None

    # ---- sending ---------------------------------------------------------------------------------

    async def send(self, msg: Message) -> None:
        """Send one message, first waiting as long as the peer's rate limits require (so nothing we send
        is dropped). A message larger than the channel allows (256 KiB on a room link) is refused with
        ``LocalError`` ``frame-too-large`` and the link stays up."""
        with self.meter.part(CostPart.CODEC):
            body = encode_message(msg)
        if len(body) > self._channel.max_frame_bytes:
            raise LocalError(
                "frame-too-large", f"{len(body)} bytes exceed the {self._channel.name} limit of {self._channel.max_frame_bytes}"
            )
        self._raise_if_closed()
        while (wait_ms := self._pacer.delay_ms(msg.TYPE, len(body), now_ms(self._clock))) > 0:
            await trio.sleep(wait_ms / 1000)  # until the buckets hold the frame's tokens: a timer, not a poll
        await self._send_frame(body)

    def send_now(self, msg: Message) -> bool:
        """Send ``msg`` at once from the calling task, with no task switch and no wait, when that is
        possible: the link is a TCP socket, nothing else is being sent, the rate limits allow it and the
        body fits. True: the frame is sealed and written (or its tail, when the socket took only part of
        it, is kept for ``flush_unsent``, which the caller must then arrange: ``unsent``). False: nothing
        happened; send it with ``send``. Why: a race node sends one small message per peer per frame,
        and the writer task's wake-up, lock and cancel scope cost more CPU than the write itself
        (docs/node.md, "CPU per frame")."""
        if self._fd is None or self._closed is not None or self._unsent or self._send_lock.locked():
            return False
        with self.meter.part(CostPart.CODEC):
            body = encode_message(msg)
        if len(body) > self._channel.max_frame_bytes or self._pacer.delay_ms(msg.TYPE, len(body), now_ms(self._clock)) > 0:
            return False
        with self.meter.part(CostPart.LINK):
            frame = self._seal(body)
            try:
                written = os.write(self._fd, frame)
            except OSError:  # full (BlockingIOError), or broken: the next ``flush_unsent`` or ``send`` reports it
                written = 0
            self._unsent = frame[written:]
        return True

    @property
    def unsent(self) -> bool:
        """Whether a frame's tail from ``send_now`` waits for ``flush_unsent``."""
        return bool(self._unsent)

    async def flush_unsent(self) -> None:
        """Write the tail ``send_now`` left (waiting as ``send`` does); nothing when there is none."""
        await self._send_frame(None)

    def _take_unsent(self) -> bytes:
        tail, self._unsent = self._unsent, b""
        return tail

    def _seal(self, body: bytes) -> bytes:
        """``body`` as a frame on the wire; takes the next counter, so call it under the send lock only (or
        in ``send_now``, which runs while nobody holds it and does not wait)."""
        sealed = self._send_cipher.seal(body)
        return HEADER.pack(len(sealed)) + sealed

    async def _send_frame(self, body: bytes | None) -> None:
        """Write ``body`` sealed (None: only the tail ``send_now`` left), after any such tail."""
        self._raise_if_closed()
        try:
            with trio.move_on_after(self.limits.send_timeout_ms / 1000) as scope:
                async with self._send_lock:
                    self._raise_if_closed()  # ended while this send waited for the lock: seal nothing
                    # sealed in the order frames go out, as the peer opens them
                    frame = self._take_unsent() + (b"" if body is None else self._seal(body))
                    try:
                        await self._stream.send_all(frame)
                    except trio.Cancelled:
                        if not scope.cancel_called:  # cancelled from outside, part of the frame may be out
                            self._closed = self._closed or LinkClosed("link-broken", "a send was cancelled part-way")
                        raise
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await self._end(LinkClosed("link-broken", "the connection broke while sending", by_peer=True), notify=False)
        if scope.cancelled_caught:
            await self._end(
                LinkClosed("link-send-timeout", f"the peer did not accept data for {self.limits.send_timeout_ms} ms"),
                notify=False,
            )

    # ---- receiving -------------------------------------------------------------------------------

    async def peek_first(self, max_frame_bytes: int) -> Message:
        """Wait for the link's first message and leave it for ``receive`` to return. Until it arrives,
        every frame is read exactly (nothing after it is buffered) and a frame announcing more than
        ``max_frame_bytes`` closes the link (``frame-too-large``): what a listener reads before it knows
        what the link is for (docs/transport.md, "The listener's door")."""
        exact = self._exact = ExactFrame(max_frame_bytes)
        try:
            first = await self.receive()
        finally:
            self._exact = None
            if exact.buffered:  # cancelled mid-frame: the rest of that frame is read the ordinary way
                self._decoder.feed(exact.buffered)
        self._peeked = first
        return first

    async def receive(self) -> Message:
        """The next message from the peer; raises ``LinkClosed`` once the link has ended."""
        if self._receiving:
            raise trio.BusyResourceError("another task is already receiving on this link")
        if self._peeked is not None:
            peeked, self._peeked = self._peeked, None
            return peeked
        self._receiving = True
        try:
            self._keepalive.heard(now_ms(self._clock))
            while True:
                self._raise_if_closed()
                if not self._bodies:
                    await self._read()
                    continue
                msg = await self._admit(self._bodies.popleft())
                if msg is not None:
                    return msg
        finally:
            self._receiving = False

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

    async def _read(self) -> None:
        if self._owed is not None and self._reads_back is None:  # a ping or pong ``read_now`` could not send
            owed, self._owed = self._owed, None
            await self.send(owed)
        try:
            ping = self._keepalive.poll(now_ms(self._clock))
        except ProtocolError as exc:
            await self._fail(exc)
        if ping is not None:
            await self.send(ping)
        data: bytes | bytearray | None = None
        if self._fd is not None and self._exact is None:
            data = await self._read_socket()
        else:
            with trio.move_on_at(self._keepalive.deadline_ms / 1000):
                try:
                    data = await self._stream.receive_some(RECEIVE_CHUNK if self._exact is None else self._exact.wanted)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    await self._end(LinkClosed("link-broken", "the connection broke", by_peer=True), notify=False)
        if data is None:
            return  # a timer is due (or a wake-up with nothing to read): the next poll pings or times out
        if not data:
            await self._end(LinkClosed("link-eof", "the peer hung up without a reason", by_peer=True), notify=False)
        try:
            reader = self._decoder if self._exact is None else self._exact
            bodies = reader.feed(bytes(data))  # a socket stream's bytes are passed as they are
        except ProtocolError as exc:  # an oversize announcement closes at once
            await self._fail(exc)
        if bodies:
            self._keepalive.heard(now_ms(self._clock))
            self._bodies.extend(bodies)

    async def _read_socket(self) -> bytes | None:
        """What the TCP socket holds (at most ``RECEIVE_CHUNK`` bytes), read with one ``read`` after one
        readable-wait: b"" at the end of the stream, None when the keepalive's deadline came first or
        the wake-up found nothing. Why not ``SocketStream.receive_some``: it tries a read before it
        waits (a failing syscall per message when, as in a race, every message finds the link idle)
        and yields to the scheduler once more after a read that succeeded, which doubles the task
        steps per message (docs/node.md, "CPU per frame"). The wait is the task's checkpoint, so a
        peer that floods the link still lets every other task run between two reads."""
        fd = self._fd
        assert fd is not None
        try:
            with trio.move_on_at(self._keepalive.deadline_ms / 1000):
                if self._reads_back is None:
                    await trio.lowlevel.wait_readable(fd)
                if self._reads_back is not None:  # the caller reads the link (``take_reads``): stand aside
                    await self._reads_back.wait()
                    if self._read_failure is not None:
                        reason, notify = self._read_failure
                        await self._end(reason, notify=notify)
                    return None
                self._raise_if_closed()  # closed by another task while this one waited
                return os.read(fd, RECEIVE_CHUNK)
        except BlockingIOError:
            return None
        except (OSError, trio.ClosedResourceError):
            self._raise_if_closed()
            await self._end(LinkClosed("link-broken", "the connection broke", by_peer=True), notify=False)
        return None

    def _open(self, sealed: bytes, now: int) -> Message | None:
        """One frame's message: opened (AEAD) and admitted by the ingress rules (decoded, rate-limited;
        None when they dropped it).
        Raises the ``PeerError`` that ends the link: a frame that does not open (logged as tampered) or
        a message the rules refuse."""
        try:
            body = self._receive_cipher.open(sealed)
        except PeerError as exc:  # changed, injected, replayed, reordered, or after a dropped frame
            log.warning(TAMPERED, code=exc.code, reason=exc.message, peer=self.peer_id, address=self.address)
            raise
        dropped = self._guard.dropped
        with self.meter.part(CostPart.CODEC):
            msg = self._guard.admit(body, now)
        if self._guard.dropped != dropped and self.on_drop is not None and self._guard.last_drop is not None:
            self.on_drop(*self._guard.last_drop)
        return msg

    def _housekeeping(self, msg: Message, now: int) -> tuple[bool, Message | LinkClosed | None]:
        """What a message means to the link itself: (whether it goes to the caller, the link's reaction).
        A ping is answered (the pong returned, to send), a pong measures the round trip, a link-close
        ends the link (its reason returned); every other message goes to the caller."""
        if isinstance(msg, LinkPing):
            return False, LinkPong(nonce=msg.nonce)
        if isinstance(msg, LinkPong):
            self._keepalive.pong(msg, now)
            return False, None
        if isinstance(msg, LinkClose):
            code, text = close_reason(msg)
            return False, LinkClosed(code, f"the peer closed the link: {text}", by_peer=True)
        return True, None

    async def _admit(self, sealed: bytes) -> Message | None:
        now = now_ms(self._clock)
        try:
            msg = self._open(sealed, now)
        except PeerError as exc:
            await self._fail(exc)
        if msg is None:
            return None
        for_caller, reaction = self._housekeeping(msg, now)
        if isinstance(reaction, LinkClosed):
            await self._end(reaction, notify=False)
        if reaction is not None:
            await self.send(reaction)
        return msg if for_caller else None

    # ---- reads by the caller (the race's frame pump) ---------------------------------------------

    def take_reads(self) -> None:
        """From now until ``give_back_reads`` the caller reads this link with ``read_now`` and the task
        in ``receive`` stands aside (it wakes when the link ends, to end it). For a caller that looks
        at every link once per tick anyway (the race's pump, 60 times a second): one read per link per
        tick in the caller's task instead of a task wake-up per message (docs/node.md, "CPU per frame").
        Only for a TCP link (``reads_takeable``)."""
        if self._fd is None:
            raise LocalError("link-reads-not-takeable", "only a TCP link's reads can be taken by the caller")
        if self._reads_back is None:
            self._reads_back = trio.Event()

    def give_back_reads(self) -> None:
        """The task in ``receive`` reads the link again (``take_reads``)."""
        back, self._reads_back = self._reads_back, None
        if back is not None:
            back.set()

    @property
    def reads_takeable(self) -> bool:
        """Whether ``take_reads`` may be used: the link is a TCP socket."""
        return self._fd is not None

    def read_now(self) -> list[Message]:
        """The messages the socket holds now, without waiting (after ``take_reads``): read until the
        socket is empty, opened, admitted and answered (pings) as ``receive`` does; the keepalive is
        polled too. When the link ends (end of stream, broken, a frame that does not open, a refused
        message, silence, the peer's link-close), the messages before the end are returned and the
        task in ``receive`` is woken to end the link; later calls return nothing."""
        if self._reads_back is None or self._read_failure is not None or self._closed is not None:
            return []
        assert self._fd is not None
        messages: list[Message] = []
        now = now_ms(self._clock)
        try:
            self._send_owed()
            for _ in range(READS_PER_CALL):
                try:
                    data = os.read(self._fd, RECEIVE_CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    raise LinkClosed("link-eof", "the peer hung up without a reason", by_peer=True)
                self._bodies.extend(self._decoder.feed(data))
                if len(data) < RECEIVE_CHUNK:
                    break
            if self._bodies:
                self._keepalive.heard(now)
            while self._bodies:
                msg = self._open(self._bodies.popleft(), now)
                if msg is None:
                    continue
                for_caller, reaction = self._housekeeping(msg, now)
                if isinstance(reaction, LinkClosed):
                    raise reaction
                if reaction is not None:
                    self._owed = reaction
                    self._send_owed()
                if for_caller:
                    messages.append(msg)
            ping = self._keepalive.poll(now)
            if ping is not None:
                self._owed = ping
                self._send_owed()
        except LinkClosed as ended:  # one name per exception type in a function: setup.py RACE_SHELL
            self._stop_reading(ended, notify=False)
        except PeerError as refused:
            self._stop_reading(LinkClosed(refused.code, refused.message), notify=True)
        except OSError:
            self._stop_reading(LinkClosed("link-broken", "the connection broke", by_peer=True), notify=False)
        return messages

    def _send_owed(self) -> None:
        """Send the ping or pong ``read_now`` owes, if the link can take it at once (else next time)."""
        if self._owed is not None and self.send_now(self._owed):
            self._owed = None  # a tail the socket did not take goes out before the next frame, as ever

    def _stop_reading(self, reason: LinkClosed, *, notify: bool) -> None:
        """``read_now`` saw the link end: wake the task in ``receive``, which ends it."""
        self._read_failure = (reason, notify)
        if self._reads_back is not None:
            self._reads_back.set()

    def detach(self, why: str) -> trio.abc.Stream:
        """Hand over the raw stream: from now on its bytes belong to another session (a relay circuit,
        docs/relay.md). Only between frames, with nothing read past the last message (a first message
        read by ``peek_first``, or a link whose peer sends nothing unasked); otherwise ``LocalError``
        ``link-detach-buffered``. The link then counts as closed (``link-detached``): closing it no
        longer sends a notice nor touches the stream, which is the caller's to close."""
        if self._bodies or self._decoder.buffered or self._peeked is not None or self._exact is not None:
            raise LocalError("link-detach-buffered", "a link can hand over its stream only between frames")
        self._raise_if_closed()
        self._detached = True
        self._closed_by_caller = True
        self._closed = LinkClosed("link-detached", why)
        self.give_back_reads()
        self.counters.record(self._closed)
        return self._stream

    # ---- closing ---------------------------------------------------------------------------------

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
        """Record the first reason and close the stream, telling the peer the reason if asked."""
        if self._detached:
            return  # the stream is someone else's now
        first = self._closed is None
        if first:
            self._closed = reason
            self.counters.record(reason)
        self.give_back_reads()  # a task in ``receive`` standing aside wakes and sees the end
        if first and notify:  # our sending direction is intact: the close is sealed like any frame
            await _tell_and_close(self._stream, lambda: self._take_unsent() + self._seal(
                encode_message(_close_message(reason.code, reason.message))), self._send_lock)
        else:
            await trio.aclose_forcefully(self._stream)

    async def _fail(self, exc: PeerError) -> NoReturn:
        await self._end(LinkClosed(exc.code, exc.message), notify=True)

    async def _end(self, reason: LinkClosed, *, notify: bool) -> NoReturn:
        await self._shutdown(reason, notify=notify)
        assert self._closed is not None
        raise self._closed.copy()
