"""A network impairment proxy: the real network's bad days, on loopback, between two real nodes.

``ImpairmentProxy`` listens on a TCP port and forwards every connection it accepts to a target, each
direction through its own ``Impairment``: a delay with jitter (bytes keep their order, as TCP's do), a
bandwidth cap, byte flips at chosen stream offsets or at a seeded rate, and on command a stall (stop
forwarding for N seconds; the queue fills and TCP pushes back on the sender, as a stalled router or a
stopped process would) or a cut (every connection dropped, and new ones refused for a while). It also
knows where the link's frames begin and end (their 4-byte length prefix, the one thing a party in the
middle can read), so it can, on command, flip the last byte of the next frame (``flip_next_frame``) or
write bytes of its own between two frames (``inject``). A party in the middle of a link is exactly this:
tests and the soak harness use it to show that a node keeps racing, repairs what is lost, and refuses
what is altered.

Everything is seeded (``Impairment.seed``), so a run with the same impairments and the same traffic
flips the same bytes.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum

import trio

from open4wd_node.runtime.addresses import Address
from protocol.encoding.wire import HEADER

CHUNK_BYTES = 16 * 1024
CAP_BURST_S = 0.1
"""A capped pipe that fell behind (its process woke late) may send this many seconds' worth of bytes at
once to catch up: the cap holds on average, as a real link's does, however busy the proxy's machine."""
QUEUE_CAP_BYTES = 1024 * 1024  # what one direction holds before it stops reading (TCP backpressure)


class Direction(StrEnum):
    """``up``: from the connecting side to the target; ``down``: back."""

    UP = "up"
    DOWN = "down"


@dataclass(frozen=True)
class Impairment:
    """What happens to one direction of every connection through the proxy."""

    delay_ms: int = 0
    jitter_ms: int = 0  # each chunk's delay is drawn in delay ± jitter (never reordering bytes)
    bandwidth_bytes_per_s: int | None = None  # None: as fast as the sockets go
    flip_offsets: tuple[int, ...] = ()  # stream offsets (per connection) whose byte is flipped
    flip_rate: float = 0.0  # probability that any one byte is flipped
    seed: int = 0

    def __post_init__(self) -> None:
        if self.delay_ms < 0 or self.jitter_ms < 0 or self.jitter_ms > self.delay_ms:
            raise ValueError("delay and jitter are ≥ 0 ms and the jitter at most the delay")
        if self.bandwidth_bytes_per_s is not None and self.bandwidth_bytes_per_s <= 0:
            raise ValueError("a bandwidth cap is a positive number of bytes per second")
        if not 0.0 <= self.flip_rate <= 1.0 or any(offset < 0 for offset in self.flip_offsets):
            raise ValueError("a flip rate is a probability and flip offsets are ≥ 0")


@dataclass
class ProxyStats:
    """What went through, for tests and reports."""

    connections: int = 0
    refused: int = 0
    forwarded: dict[Direction, int] = field(default_factory=lambda: {d: 0 for d in Direction})
    flipped: dict[Direction, int] = field(default_factory=lambda: {d: 0 for d in Direction})
    injected: dict[Direction, int] = field(default_factory=lambda: {d: 0 for d in Direction})  # bytes written


class _Flipper:
    """Flips bytes of one direction of one connection: at fixed offsets, and at the seeded rate."""

    def __init__(self, impairment: Impairment, connection: int) -> None:
        self.offsets = set(impairment.flip_offsets)
        self.rate = impairment.flip_rate
        self.rng = random.Random(f"{impairment.seed}/{connection}")
        self.position = 0

    def apply(self, data: bytes) -> tuple[bytes, int]:
        """``data`` with its flipped bytes, and how many were flipped."""
        start, self.position = self.position, self.position + len(data)
        hits = [offset - start for offset in self.offsets if start <= offset < self.position]
        if self.rate > 0:
            hits += [i for i in range(len(data)) if self.rng.random() < self.rate]
        if not hits:
            return data, 0
        changed = bytearray(data)
        for index in set(hits):
            changed[index] ^= 0xFF
        return bytes(changed), len(set(hits))


class _FrameCursor:
    """Follows the length-prefixed frames of one direction of a connection (a 4-byte big-endian length,
    then the body): where each frame ends, and whether the stream is between two frames."""

    def __init__(self) -> None:
        self._header = bytearray()
        self._body_left: int | None = None  # bytes of the current frame's body still to come

    @property
    def between_frames(self) -> bool:
        """No frame has begun and not ended."""
        return self._body_left is None and not self._header

    def advance(self, data: bytes) -> list[int]:
        """Take in the next ``data`` of the stream; the indexes in ``data`` just after each frame that ends in it."""
        ends, index = [], 0
        while index < len(data):
            if self._body_left is None:
                take = min(HEADER.size - len(self._header), len(data) - index)
                self._header += data[index:index + take]
                index += take
                if len(self._header) < HEADER.size:
                    continue
                (self._body_left,) = HEADER.unpack(self._header)
                self._header.clear()
            take = min(self._body_left, len(data) - index)
            index += take
            self._body_left -= take
            if self._body_left == 0:
                ends.append(index)
                self._body_left = None
        return ends


class _Pipe:
    """One direction of one connection: a reader that queues timestamped chunks, a writer that
    releases them when their delay is over, at the bandwidth cap, unless the proxy is stalled.

    A direction with neither delay nor cap (``direct``) has no queue and no writer task: its one task
    forwards each chunk as it reads it (``forward``), held back only by a stall, so that an unimpaired link
    costs the proxy one task step per chunk instead of a reader's, a writer's and their hand-over (a soak
    race's proxies forward about 10,000 chunks). Flips, frame flips and injections work the same; what a
    stall holds back waits in the sockets' buffers instead of the queue, so TCP pushes back on the sender
    sooner (nothing is lost either way)."""

    def __init__(self, proxy: ImpairmentProxy, direction: Direction, connection: int, target: trio.SocketStream) -> None:
        self.proxy = proxy
        self.direction = direction
        self.impairment = proxy.impairments[direction]
        self.connection = connection
        self.flipper = _Flipper(self.impairment, connection)
        self.rng = random.Random(f"{self.impairment.seed}/{connection}/{direction}/delay")
        self.queue: deque[tuple[float, bytes]] = deque()
        self.queued_bytes = 0
        self.changed = trio.Condition()
        self.last_release = 0.0
        self.paced_until = -float("inf")  # the bandwidth cap: when the bytes sent so far have had their time
        self.reading_done = False
        self.cursor = _FrameCursor()
        self.injections: list[bytes] = []  # to be written at the next frame boundary
        self.direct = not (self.impairment.delay_ms or self.impairment.bandwidth_bytes_per_s)
        self.sending = trio.Lock()  # direct: a chunk's framing and sending, or an injection, one at a time
        self.target = target

    async def run(self, source: trio.SocketStream) -> None:
        """Forward ``source`` to the target until ``source`` ends (then end the target's side too)."""
        if self.direct:
            await self.forward(source, self.target)
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.read, source)
            nursery.start_soon(self.write, self.target)

    async def forward(self, source: trio.SocketStream, target: trio.SocketStream) -> None:
        """The direct pipe (class docstring): read, flip, frame, wait out a stall, send."""
        try:
            while chunk := await source.receive_some(CHUNK_BYTES):
                async with self.sending:
                    chunk, flipped = self.flipper.apply(chunk)
                    self.proxy.stats.flipped[self.direction] += flipped
                    await self._send_now(target, self._framed(chunk))
            await target.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def _send_now(self, target: trio.SocketStream, chunk: bytes) -> None:
        """A direct pipe's send (holding ``sending``): after any stall, counted as forwarded."""
        while trio.current_time() < self.proxy.stalled_until:
            await trio.sleep_until(self.proxy.stalled_until)
        await target.send_all(chunk)
        self.proxy.stats.forwarded[self.direction] += len(chunk)

    async def read(self, source: trio.SocketStream) -> None:
        try:
            while chunk := await source.receive_some(CHUNK_BYTES):
                async with self.changed:
                    while self.queued_bytes >= QUEUE_CAP_BYTES:
                        await self.changed.wait()
                    chunk, flipped = self.flipper.apply(chunk)
                    self.proxy.stats.flipped[self.direction] += flipped
                    self._enqueue(self._framed(chunk))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        async with self.changed:
            self.reading_done = True
            self.changed.notify_all()

    def _framed(self, chunk: bytes) -> bytes:
        """``chunk`` with the frame-aware commands applied: the last byte of the next frame to end
        flipped (once, for the whole proxy), pending injections written after the first frame that ends."""
        ends = self.cursor.advance(chunk)
        if not ends:
            return chunk
        if self.proxy.take_frame_flip(self.direction):
            changed = bytearray(chunk)
            changed[ends[0] - 1] ^= 0xFF
            chunk = bytes(changed)
            self.proxy.stats.flipped[self.direction] += 1
        if self.injections:
            injected, self.injections = b"".join(self.injections), []
            chunk = chunk[:ends[0]] + injected + chunk[ends[0]:]
            self.proxy.stats.injected[self.direction] += len(injected)
        return chunk

    def _enqueue(self, chunk: bytes) -> None:
        """Queue ``chunk`` for release after its delay (call holding ``changed``)."""
        self.last_release = max(self.last_release, trio.current_time() + self._delay_s())
        self.queue.append((self.last_release, chunk))
        self.queued_bytes += len(chunk)
        self.changed.notify_all()

    async def inject(self, data: bytes) -> None:
        """Write ``data`` into this direction at the next frame boundary: at once if no frame is under
        way, else right after the frame being forwarded ends."""
        if self.direct:
            async with self.sending:
                if not self.cursor.between_frames:
                    self.injections.append(data)
                else:
                    await self._send_now(self.target, data)
                    self.proxy.stats.injected[self.direction] += len(data)
            return
        async with self.changed:
            if self.cursor.between_frames:
                self._enqueue(data)
                self.proxy.stats.injected[self.direction] += len(data)
            else:
                self.injections.append(data)

    def _delay_s(self) -> float:
        jitter = self.impairment.jitter_ms
        return (self.impairment.delay_ms + (self.rng.uniform(-jitter, jitter) if jitter else 0)) / 1000

    async def write(self, target: trio.SocketStream) -> None:
        try:
            while True:
                async with self.changed:
                    while not self.queue and not self.reading_done:
                        await self.changed.wait()
                    if not self.queue:
                        break
                    release, chunk = self.queue[0]
                await trio.sleep_until(max(release, self.paced_until))
                while trio.current_time() < self.proxy.stalled_until:  # a stall may begin while we wait
                    await trio.sleep_until(self.proxy.stalled_until)
                await target.send_all(chunk)
                cap = self.impairment.bandwidth_bytes_per_s
                if cap is not None:  # paced on a budget, not by a sleep after each chunk, which a busy machine lengthens
                    self.paced_until = max(self.paced_until, trio.current_time() - CAP_BURST_S) + len(chunk) / cap
                async with self.changed:
                    self.queue.popleft()
                    self.queued_bytes -= len(chunk)
                    self.proxy.stats.forwarded[self.direction] += len(chunk)
                    self.changed.notify_all()
            await target.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


NONE = Impairment()
ANY_LOOPBACK_PORT = Address("127.0.0.1", 0)


class ImpairmentProxy:
    """Forwards connections accepted on ``listen`` to ``target``, impaired per direction.

    ``await nursery.start(proxy.run)`` starts it and gives the bound address; ``stall``, ``cut`` and
    ``set`` act on it while it runs. Cancel the run to stop it (every connection is closed). The target
    may be given later (``point_at``): a node must advertise the proxy's address before it knows its
    own port, and connections accepted meanwhile wait for it.
    """

    def __init__(self, target: Address | None = None, *, up: Impairment = NONE, down: Impairment = NONE,
                 listen: Address = ANY_LOOPBACK_PORT) -> None:
        self.target = target
        self._targeted = trio.Event()
        if target is not None:
            self._targeted.set()
        self.listen = listen
        self.impairments = {Direction.UP: up, Direction.DOWN: down}
        self.stats = ProxyStats()
        self.address: Address | None = None
        self.stalled_until = 0.0
        self.refusing_until = 0.0
        self._connections: set[trio.CancelScope] = set()
        self._pipes: set[_Pipe] = set()
        self._frame_flips: set[Direction] = set()  # directions whose next frame to end loses its last byte

    def point_at(self, target: Address) -> None:
        """Forward to ``target`` from now on (connections waiting for a target go there)."""
        self.target = target
        self._targeted.set()

    def set(self, direction: Direction, impairment: Impairment) -> None:
        """Impair ``direction`` of the connections accepted from now on."""
        self.impairments[direction] = impairment

    def stall(self, seconds: float) -> None:
        """Stop forwarding, both ways, on every connection, for ``seconds`` (nothing is lost: it queues)."""
        self.stalled_until = max(self.stalled_until, trio.current_time() + seconds)

    def cut(self, refuse_s: float = 0.0) -> None:
        """Drop every connection now; refuse new ones for ``refuse_s`` seconds."""
        self.refusing_until = max(self.refusing_until, trio.current_time() + refuse_s)
        for scope in list(self._connections):
            scope.cancel()

    def flip_next_frame(self, direction: Direction) -> None:
        """Flip the last byte of the next frame to end in ``direction``, on whichever connection carries
        it first: once, for the whole proxy (one altered frame on one link)."""
        self._frame_flips.add(direction)

    def take_frame_flip(self, direction: Direction) -> bool:
        """Whether a frame that has just ended in ``direction`` is the one ``flip_next_frame`` asked for
        (the request is used up)."""
        if direction not in self._frame_flips:
            return False
        self._frame_flips.discard(direction)
        return True

    async def inject(self, direction: Direction, data: bytes) -> int:
        """Write ``data`` (bytes of the proxy's own, such as a whole forged frame) into ``direction`` of
        every open connection, at its next frame boundary; how many connections it went into."""
        pipes = [pipe for pipe in self._pipes if pipe.direction == direction]
        for pipe in pipes:
            await pipe.inject(data)
        return len(pipes)

    async def run(self, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED) -> None:
        """Forward every connection to the target until cancelled; ``nursery.start`` returns the bound
        address. ``OSError`` when the listen address cannot be bound."""
        listeners = await trio.open_tcp_listeners(self.listen.port, host=self.listen.host)
        host, port = listeners[0].socket.getsockname()[:2]
        self.address = Address(host, port)
        task_status.started(self.address)
        await trio.serve_listeners(self._serve, listeners)

    async def _serve(self, client: trio.SocketStream) -> None:
        if trio.current_time() < self.refusing_until:
            self.stats.refused += 1
            await trio.aclose_forcefully(client)
            return
        self.stats.connections += 1
        connection = self.stats.connections
        with trio.CancelScope() as scope:
            self._connections.add(scope)
            target: trio.SocketStream | None = None
            try:
                await self._targeted.wait()
                assert self.target is not None
                target = await trio.open_tcp_stream(self.target.host, self.target.port)
                async with trio.open_nursery() as nursery:
                    for direction, source, sink in ((Direction.UP, client, target), (Direction.DOWN, target, client)):
                        pipe = _Pipe(self, direction, connection, sink)
                        self._pipes.add(pipe)
                        nursery.start_soon(pipe.run, source)
            except OSError:
                pass  # the target refused or vanished: the client sees its connection end
            finally:
                self._connections.discard(scope)
                self._pipes -= {pipe for pipe in self._pipes if pipe.connection == connection}
                for stream in (client, target):
                    if stream is not None:
                        await trio.aclose_forcefully(stream)
