"""The TCP carrier of a link: Noise XX over any ``trio.abc.Stream`` (TCP, in memory).

``open_link`` runs the Noise XX handshake (``protocol.link.handshake``) within its timeout and returns a
``Link`` over a ``StreamCarrier``. From then on every frame is ``u32be(length) ‖ sealed(body)``: the body
sealed by this direction's cipher (ChaCha20-Poly1305 with Noise's counter as nonce), so a frame that was
changed, injected, replayed, reordered or follows a dropped one does not open, and the link closes with
``link-tampered`` (logged with the peer and its address, and counted in ``LinkCounters``). A stream has one
lane: every body travels on it in order, whatever its ``Lane``. Its path is ``host`` (a direct TCP connection),
and its round trip the handshake's (from a handshake message sent to the peer's next one).
"""

from __future__ import annotations

from collections import deque
import structlog
import trio

from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.link.handshake import (
    LISTENER,
    FrameCipher,
    Handshake,
    HandshakeResult,
    LinkClose,
    close_reason,
    decode_handshake_message,
)
from protocol.identity.keys import Identity
from protocol.encoding.wire import HANDSHAKE, HEADER, ROOM, Channel, FrameDecoder, Message, encode_frame, encode_message
from protocol.identity.keys import PeerId
from protocol.link.lane import Lane
from protocol.webrtc.ice import LinkPath
from open4wd_node.net.admission import ExactFrame
from open4wd_node.net.link import (
    CLOSE_NOTICE_SECONDS,
    LINK_COUNTERS,
    TAMPERED,
    Link,
    LinkAuth,
    LinkClosed,
    LinkCounters,
    close_message,
    now_ms,
)
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.runtime.addresses import Address

log = structlog.get_logger("open4wd_node.link")

RECEIVE_CHUNK = 64 * 1024
ARRIVED_READS = 16  # ``receive_arrived`` reads at most this many chunks (1 MiB): a flood cannot hold its caller


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


class StreamCarrier:
    """Sealed frames over a stream (module docstring), after a handshake that gave ``result``'s ciphers."""

    def __init__(self, stream: trio.abc.Stream, send: FrameCipher, receive: FrameCipher, peer_id: PeerId,
                 rtt_ms: float | None = None) -> None:
        self.stream = stream
        self.peer_id = peer_id  # for the log of a frame that does not open
        self.path = LinkPath.HOST
        """How the stream is connected: a direct TCP connection."""
        self.rtt_ms = rtt_ms
        """The handshake's round trip in ms (None when the link was made from a handshake run elsewhere)."""
        self._address = peer_address(stream)
        self._send_cipher = send
        self._receive_cipher = receive
        self._decoder = FrameDecoder(self._sealed(ROOM))
        self._frames: deque[bytes] = deque()  # sealed frames read and not yet opened
        self._exact: ExactFrame | None = None  # the first frame, while ``receive_first`` reads it exactly
        self._send_lock = trio.Lock()
        self._broken = False  # a send was cancelled part-way: the stream holds half a frame

    @property
    def address(self) -> str | None:
        """``HOST:PORT`` of the other end, None in memory."""
        return self._address

    def _sealed(self, channel: Channel) -> Channel:
        """What the length prefix of a sealed frame of ``channel`` may announce: its body plus the tag."""
        overhead = self._receive_cipher.overhead
        return Channel(f"sealed {channel.name}", channel.max_frame_bytes + overhead) if overhead else channel

    @property
    def buffered(self) -> bool:
        """Whether bytes past the last body were read (a frame read whole or in part)."""
        return bool(self._frames) or bool(self._decoder.buffered) or self._exact is not None

    def _limit(self, channel: Channel) -> None:
        """Ordinary reads of frames of ``channel`` from now on (what the link is for decides the largest)."""
        self._end_exact_reads()
        if self._decoder.channel.max_frame_bytes != channel.max_frame_bytes + self._receive_cipher.overhead:
            self._decoder.channel = self._sealed(channel)

    async def receive(self, channel: Channel) -> bytes:
        """The next body (``Carrier.receive``)."""
        self._limit(channel)
        while not self._frames:
            data = await self._read(RECEIVE_CHUNK)
            self._frames.extend(self._decoder.feed(data))  # an oversize announcement raises frame-too-large
        return self._open(self._frames.popleft())

    async def receive_arrived(self, channel: Channel) -> list[bytes]:
        """Every whole body that has arrived (``Carrier.receive_arrived``): what the socket holds is read, as
        long as it holds more (at most ``ARRIVED_READS`` chunks), and nothing is waited for. Only over a
        socket, which says whether it holds anything (``LocalError`` ``carrier-cannot-poll`` otherwise)."""
        socket = getattr(self.stream, "socket", None)
        if socket is None:
            raise LocalError("carrier-cannot-poll", "only a socket stream tells whether bytes have arrived")
        self._limit(channel)
        for _ in range(ARRIVED_READS):
            if not socket.is_readable():
                break
            try:
                data = await self._read(RECEIVE_CHUNK)
            except LinkClosed:
                if not self._frames:
                    raise
                break  # the bodies before the end first; the end again at the next call
            self._frames.extend(self._decoder.feed(data))
            if len(data) < RECEIVE_CHUNK:
                break  # the socket had less than a chunk: it is empty now (what came since waits for next time)
        frames, self._frames = self._frames, deque()
        return [self._open(sealed) for sealed in frames]

    async def receive_first(self, max_frame_bytes: int) -> bytes:
        """The first body, read exactly (``Carrier.receive_first``): nothing past its frame is read, and
        a header announcing more than ``max_frame_bytes`` is refused before any body byte is read. A call
        cancelled mid-frame keeps what it read, for the next call, or for the ordinary reads."""
        if self._exact is None:
            if self.buffered:
                raise LocalError("link-first-read-late", "the first message must be read before any other")
            self._exact = ExactFrame(max_frame_bytes)
        exact = self._exact
        while not (frames := exact.feed(await self._read(exact.wanted))):
            pass
        self._exact = None
        return self._open(frames[0])

    def _end_exact_reads(self) -> None:
        """Ordinary reads from now on: the part of a frame an exact read left goes to the decoder."""
        if self._exact is not None:
            self._frames.extend(self._decoder.feed(self._exact.buffered))
            self._exact = None

    async def _read(self, count: int) -> bytes:
        try:
            data = await self.stream.receive_some(count)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise LinkClosed("link-broken", "the connection broke", by_peer=True) from None
        if not data:
            raise LinkClosed("link-eof", "the peer hung up without a reason", by_peer=True)
        return bytes(data)  # a socket stream's bytes are returned as they are, without a copy

    def _open(self, sealed: bytes) -> bytes:
        try:
            return self._receive_cipher.open(sealed)
        except PeerError as exc:  # changed, injected, replayed, reordered, or after a dropped frame
            log.warning(TAMPERED, code=exc.code, reason=exc.message, peer=self.peer_id, address=self.address)
            raise

    async def send(self, body: bytes, lane: Lane) -> None:
        """Seal ``body`` and write its frame (one lane: every body in order). The lock is taken without a
        checkpoint when it is free (the usual case: one writer per link), since the write itself is one."""
        try:
            self._send_lock.acquire_nowait()
        except trio.WouldBlock:
            await self._send_lock.acquire()
        try:
            if self._broken:
                raise LinkClosed("link-broken", "a send was cancelled part-way")
            sealed = self._send_cipher.seal(body)  # sealed in the order frames go out, as the peer opens them
            try:
                await self.stream.send_all(HEADER.pack(len(sealed)) + sealed)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise LinkClosed("link-broken", "the connection broke while sending", by_peer=True) from None
            except trio.Cancelled:
                self._broken = True  # part of the frame may be out: nothing after it would open
                raise
        finally:
            self._send_lock.release()

    async def aclose(self) -> None:
        """Close the stream at once."""
        await trio.aclose_forcefully(self.stream)


# ---- the handshake -------------------------------------------------------------------------------

def _handshake_frame(msg: Message) -> bytes:
    return encode_frame(encode_message(msg), HANDSHAKE)


async def _tell_and_close(stream: trio.abc.Stream, frame: bytes) -> None:
    """Best effort: send ``frame`` (a ``link-close``) for a moment, then close the stream whatever happens."""
    try:
        with trio.move_on_after(CLOSE_NOTICE_SECONDS):
            await stream.send_all(frame)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await trio.aclose_forcefully(stream)


async def refuse_unopened(stream: trio.abc.Stream, code: str, text: str, counters: LinkCounters | None = None) -> None:
    """Refuse a connection before any handshake (a listener that is busy): tell the peer ``code`` in
    the clear on the handshake channel, where a dialer reads it as the listener's answer, count the
    refusal and close the stream."""
    await _tell_and_close(stream, _handshake_frame(close_message(code, text)))
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


async def _run_handshake(stream: trio.abc.Stream, handshake: Handshake) -> tuple[HandshakeResult, float | None]:
    """The handshake's result and its round trip in ms: from this side's first message to the peer's next."""
    heard = False
    sent_at: float | None = None
    rtt_ms: float | None = None
    with trio.move_on_at(handshake.deadline_ms / 1000):
        first = handshake.start()
        await _send_handshake(stream, first)
        if first:
            sent_at = trio.current_time()
        while handshake.result is None:
            msg = decode_handshake_message(await _receive_handshake_frame(stream))
            heard = True
            if sent_at is not None and rtt_ms is None:
                rtt_ms = (trio.current_time() - sent_at) * 1000
            if isinstance(msg, LinkClose):
                code, text = close_reason(msg)
                raise LinkClosed(code, f"the peer refused the link: {text}", by_peer=True)
            answer = handshake.receive(msg, now_ms())
            await _send_handshake(stream, answer)
            if answer and sent_at is None:
                sent_at = trio.current_time()
        return handshake.result, rtt_ms
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
) -> Link:
    """Run the Noise handshake on ``stream`` as ``role`` ("dialer" or "listener") and return the link over
    it; on failure the stream is closed
    (after telling the peer the code: in the clear, or sealed by a listener refusing the identity of a valid
    message 3) and ``LinkClosed`` is raised. Refusals and ends are counted in ``counters`` (default
    ``LINK_COUNTERS``)."""
    counters = LINK_COUNTERS if counters is None else counters
    handshake: Handshake | None = None
    try:
        handshake = Handshake(identity, role, now_ms(), expected_peer=expected_peer, timeout_ms=limits.handshake_timeout_ms)
        result, rtt_ms = await _run_handshake(stream, handshake)
    except ProtocolError as exc:
        await _tell_and_close(stream, _refusal_frame(close_message(exc.code, exc.message), handshake))
        counters.record(refused := LinkClosed(exc.code, exc.message))
        raise refused from None
    except LinkClosed as exc:
        counters.record(exc)
        await trio.aclose_forcefully(stream)
        raise
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        await trio.aclose_forcefully(stream)
        counters.record(broken := LinkClosed("link-broken", "the connection broke during the handshake", by_peer=True))
        raise broken from None
    except BaseException:  # cancellation: never leave the stream open
        await trio.aclose_forcefully(stream)
        raise
    return stream_link(stream, result, expensive=expensive, limits=limits, registry=registry, counters=counters,
                       rtt_ms=rtt_ms)


def stream_link(
    stream: trio.abc.Stream,
    result: HandshakeResult,
    *,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
    counters: LinkCounters | None = None,
    rtt_ms: float | None = None,
) -> Link:
    """The link over ``stream`` once a handshake gave ``result``: its peer, transcript and the two frame
    ciphers (the handshake's Noise transport ciphers in the product; a benchmark may pass others), and the
    handshake's round trip when it was measured."""
    carrier = StreamCarrier(stream, result.send, result.receive, result.peer_id, rtt_ms)
    return Link(carrier, LinkAuth(result.peer_id, result.transcript, result.role), expensive=expensive, limits=limits,
                registry=registry, counters=counters)
