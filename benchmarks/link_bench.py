"""Link figures (issue "Encrypted, self-healing links", deliverable 1): what Noise costs a link.

In one run, over real loopback TCP in one process on the real clock, with 100-byte message bodies:

- (a) ``noise``: a ``Link`` after the real Noise XX handshake (``open_link``): every frame sealed with
  ChaCha20-Poly1305;
- (b) ``plaintext``: the same ``Link`` class given a null cipher (defined here, never in the product)
  by composition, so the only difference to (a) is the cipher;
- (c) ``raw socket``: a bare trio ``SocketStream`` with the same framing (``u32be length ‖ msgpack``,
  ``FrameDecoder`` + strict ``decode_message`` on receipt) and none of the link's rules.

Both links get limits far above the traffic (the product's room and race limits are 32 and 90 messages
a second: at those rates they, not the cipher, would set the throughput). Figures:

- frames/s: ``--frames`` messages sent back to back, from the first send to the last receipt;
- one-way delivery: ``--samples`` messages sent one at a time (the next only after the previous
  arrived, so none waits behind another), each carrying its send time (``perf_counter_ns``); median
  and p99 of receipt time − send time. Both ends share the process, the clock and the CPU.

Targets: encrypted ≥ 0.5 × plaintext frames/s; delivery median ≤ 0.5 ms. Also printed: the CPU time
of one whole handshake, both sides, sans-IO (no sockets), median of ``--handshakes``.

The issue's other two link targets are measured by their own scripts, which this one runs after its
table (``--links-only`` skips them): ``stall_bench.py --real`` (recovery after a 3 s stall of one node,
on the wall clock) and ``listener_bench.py`` (host RSS before and after 600 junk links, a real host
process).

    python benchmarks/link_bench.py [--frames 20000] [--samples 2000] [--repeats 3] [--handshakes 200] [--links-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import trio

from open4wd_node.net.link import Link

from open4wd_node.net.stream_carrier import open_link, stream_link
from open4wd_node.net.link_rules import LinkLimits
from protocol.encoding.wire import HEADER, ROOM, FrameDecoder, Message, decode_message, encode_frame, encode_message, message
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LISTENER, Handshake, HandshakeResult

BODY_BYTES = 100
UNLIMITED = LinkLimits(
    general_burst=10**9, general_per_second=10**9, general_bytes_burst=10**12, general_bytes_per_second=10**12,
    expensive_burst=10**9, expensive_per_second=10**9, max_consecutive_drops=10**9,
)


@message("bench-data")
class BenchData(Message):
    """One benchmark message: a sequence number, its send time and padding to ``BODY_BYTES``."""

    seq: int
    sent: bytes  # perf_counter_ns at the send, 8 bytes big-endian (a fixed width keeps the size fixed)
    pad: bytes


def bench_message(seq: int) -> BenchData:
    """A message whose encoded body is exactly ``BODY_BYTES`` long."""
    probe = encode_message(BenchData(seq=seq, sent=bytes(8), pad=b""))
    return BenchData(seq=seq, sent=time.perf_counter_ns().to_bytes(8, "big"), pad=b"x" * (BODY_BYTES - len(probe)))


class NullCipher:
    """Seals nothing: the plaintext link of the comparison (a benchmark's tool, never the product's)."""

    overhead = 0

    def seal(self, plaintext: bytes) -> bytes:
        """``plaintext`` unchanged."""
        return plaintext

    def open(self, ciphertext: bytes) -> bytes:
        """``ciphertext`` unchanged."""
        return ciphertext


class Endpoint:
    """One side of a connection under test: ``send(msg)`` and ``receive() -> msg``, whatever carries them."""

    def __init__(self, send: Callable[[Message], Awaitable[None]], receive: Callable[[], Awaitable[Message]]) -> None:
        self.send, self.receive = send, receive


async def tcp_pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    """A connected loopback TCP pair (dialer side, listener side)."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    dialer = await trio.open_tcp_stream("127.0.0.1", port)
    listener = await listeners[0].accept()
    await listeners[0].aclose()
    return dialer, listener


DIALER_ID, LISTENER_ID = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)


async def noise_pair() -> tuple[Endpoint, Endpoint, list[Link]]:
    """Two links after the real Noise handshake."""
    left, right = await tcp_pair()
    links: dict[str, Link] = {}

    async def open_side(stream: trio.SocketStream, identity: Identity, role: str) -> None:
        links[role] = await open_link(stream, identity, role, limits=UNLIMITED)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(open_side, left, DIALER_ID, DIALER)
        nursery.start_soon(open_side, right, LISTENER_ID, LISTENER)
    a, b = links[DIALER], links[LISTENER]
    return Endpoint(a.send, a.receive), Endpoint(b.send, b.receive), [a, b]


async def plaintext_pair() -> tuple[Endpoint, Endpoint, list[Link]]:
    """The same ``Link`` class with a null cipher on both sides (no handshake: nothing to key)."""
    left, right = await tcp_pair()
    base = HandshakeResult(peer_id=LISTENER_ID.peer_id, transcript=bytes(32), role=DIALER, handshake_hash=bytes(32),
                           send=NullCipher(), receive=NullCipher())
    a = stream_link(left, base, limits=UNLIMITED)
    b = stream_link(right, replace(base, peer_id=DIALER_ID.peer_id, role=LISTENER), limits=UNLIMITED)
    return Endpoint(a.send, a.receive), Endpoint(b.send, b.receive), [a, b]


def raw_endpoint(stream: trio.SocketStream) -> Endpoint:
    """The same framing on a bare socket: encode + length prefix out, ``FrameDecoder`` + strict decode in."""
    decoder = FrameDecoder(ROOM)
    pending: list[bytes] = []

    async def send(msg: Message) -> None:
        await stream.send_all(encode_frame(encode_message(msg), ROOM))

    async def receive() -> Message:
        while not pending:
            pending.extend(decoder.feed(await stream.receive_some(64 * 1024)))
        return decode_message(pending.pop(0))

    return Endpoint(send, receive)


async def raw_pair() -> tuple[Endpoint, Endpoint, list[Link]]:
    """Two bare socket endpoints."""
    left, right = await tcp_pair()
    return raw_endpoint(left), raw_endpoint(right), []


async def throughput(sender: Endpoint, receiver: Endpoint, frames: int) -> float:
    """Frames per second: ``frames`` sent back to back, first send to last receipt."""
    done = trio.Event()
    started = time.perf_counter()

    async def read_all() -> None:
        for _ in range(frames):
            await receiver.receive()
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_all)
        for seq in range(frames):
            await sender.send(bench_message(seq))
        await done.wait()
    return frames / (time.perf_counter() - started)


async def delivery(sender: Endpoint, receiver: Endpoint, samples: int) -> list[float]:
    """One-way delivery times in ms, one message in flight at a time."""
    delays: list[float] = []
    for seq in range(samples):
        await sender.send(bench_message(seq))
        msg = await receiver.receive()
        assert isinstance(msg, BenchData) and msg.seq == seq
        delays.append((time.perf_counter_ns() - int.from_bytes(msg.sent, "big")) / 1e6)
    return delays


def handshake_ms(count: int) -> float:
    """Median CPU time of one complete handshake (both sides, every message through its codec), in ms."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        dialer, listener = Handshake(DIALER_ID, DIALER, 0), Handshake(LISTENER_ID, LISTENER, 0)
        listener.start()
        (first,) = dialer.start()
        (second,) = listener.receive(decode_message(encode_message(first)), 0)
        (third,) = dialer.receive(decode_message(encode_message(second)), 0)
        listener.receive(decode_message(encode_message(third)), 0)
        assert dialer.done and listener.done
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def p99(values: list[float]) -> float:
    """The 99th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * len(ordered)) - 1)]


KINDS: dict[str, Callable[[], Awaitable[tuple[Endpoint, Endpoint, list[Link]]]]] = {
    "noise": noise_pair, "plaintext": plaintext_pair, "raw socket": raw_pair,
}


async def measure(frames: int, samples: int, repeats: int) -> dict[str, dict[str, float]]:
    """Every kind, interleaved ``repeats`` times (so a busy moment of the machine hits all three)."""
    rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
    delays: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for _ in range(repeats):
        for kind, make in KINDS.items():
            sender, receiver, links = await make()
            await delivery(sender, receiver, 50)  # warm-up
            rates[kind].append(await throughput(sender, receiver, frames))
            delays[kind] += await delivery(sender, receiver, samples)
            for link in links:
                await link.aclose()
    return {
        kind: {"frames_per_s": statistics.median(rates[kind]), "median_ms": statistics.median(delays[kind]),
               "p99_ms": p99(delays[kind])}
        for kind in KINDS
    }


def main() -> None:
    """Parse the options, measure, print the table and the two target ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20_000, help="messages per throughput run")
    parser.add_argument("--samples", type=int, default=2_000, help="one-way delivery samples per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--handshakes", type=int, default=200, help="sans-IO handshakes timed")
    parser.add_argument("--links-only", action="store_true", help="skip the stall and junk-link benchmarks")
    args = parser.parse_args()
    assert {len(encode_message(bench_message(seq))) for seq in (0, 100, 10**6)} == {BODY_BYTES}
    results = trio.run(measure, args.frames, args.samples, args.repeats)
    print(f"link_bench: {BODY_BYTES}-byte bodies, {args.frames} frames x {args.repeats} (frames/s: median of repeats), "
          f"{args.samples * args.repeats} delivery samples; loopback TCP, one process; load {os.getloadavg()[0]:.2f}")
    print(f"{'':12} {'frames/s':>10} {'median ms':>10} {'p99 ms':>8}")
    for kind, figures in results.items():
        print(f"{kind:12} {figures['frames_per_s']:>10.0f} {figures['median_ms']:>10.3f} {figures['p99_ms']:>8.3f}")
    ratio = results["noise"]["frames_per_s"] / results["plaintext"]["frames_per_s"]
    median = results["noise"]["median_ms"]
    print(f"encrypted / plaintext frames/s: {ratio:.2f} (target >= 0.5: {'met' if ratio >= 0.5 else 'MISSED'})")
    print(f"encrypted delivery median: {median:.3f} ms (target <= 0.5 ms: {'met' if median <= 0.5 else 'MISSED'})")
    print(f"frame overhead: {HEADER.size}-byte length + 16-byte tag per sealed frame")
    print(f"one handshake, both sides, sans-IO: {handshake_ms(args.handshakes):.2f} ms CPU (median)")
    if not args.links_only:
        for script in (["stall_bench.py", "--real"], ["listener_bench.py"]):
            print(f"\n== {' '.join(script)}", flush=True)
            repo = Path(__file__).resolve().parent.parent  # the benchmarks import the tests' node helpers
            done = subprocess.run([sys.executable, str(repo / "benchmarks" / script[0]), *script[1:]], cwd=repo,
                                  env={**os.environ, "PYTHONPATH": str(repo)})
            if done.returncode:
                raise SystemExit(f"{script[0]} failed (exit {done.returncode})")


if __name__ == "__main__":
    main()
