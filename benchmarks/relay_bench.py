"""Relay figures against their targets, in one run over real loopback TCP, the relay a real
``open4wd-node relay`` process (its own core when one is free), the ends in this process:

- (a) delivery of a 100-byte message, one at a time (each carries its send time, ``perf_counter_ns``),
  over a Noise link ``direct`` and ``relayed`` (the same end-to-end link through a circuit): median and p99
  one-way; target: relayed adds ≤ 0.3 ms to the median;
- (b) frames/s of 100-byte messages sent back to back over a Noise link through the relay, against the same
  link through a raw trio byte-forwarder (a process running ``--forwarder`` of this script: receive_some /
  send_all both ways, no rules); target: relay ≥ 0.7 × forwarder;
- (c) ``--circuits`` (200) concurrent circuits, each carrying ``--rate`` (60) raw 100-byte messages a
  second for ``--seconds``, from this process to a receiver process (``--receiver``): one-way delay relayed
  against the same load over direct TCP (p50, p99 and the added p99), and the relay process's CPU time per
  1,000 messages/s (from /proc/PID/stat);
- (d) with ``--race``: an 8-node race of real node processes at 60 Hz, every node ``--reachability relay``
  (every link relayed through the one relay): the worst lag in frames; target ≤ 4. The same race with
  every node direct runs first, as the baseline under the same machine load.

    python benchmarks/relay_bench.py [--samples 2000] [--frames 20000] [--circuits 200] [--rate 60]
                                     [--seconds 10] [--race]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import trio

from open4wd_node.net.link import Link
from open4wd_node.runtime.logs import configure_logging
from open4wd_node.net.link_rules import LinkLimits
from open4wd_node.net.transport import Door, dial, serve
from open4wd_node.relay.client import Reservations, dial_relayed, open_circuit
from protocol.encoding.wire import Message, encode_message, message
from protocol.identity.keys import Identity
from protocol.relay.messages import RelayConnect

BODY_BYTES = 100
RAW_BYTES = 100
UNLIMITED = LinkLimits(
    general_burst=10**9, general_per_second=10**9, general_bytes_burst=10**12, general_bytes_per_second=10**12,
    expensive_burst=10**9, expensive_per_second=10**9, max_consecutive_drops=10**9,
)
A, B = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
CONFIG = """[relay]
max_circuits_per_peer = 1000
max_circuits_per_source = 1000
max_reservations_per_source = 1000
"""


@message("relay-bench-data")
class BenchData(Message):
    """One benchmark message: its send time and padding to ``BODY_BYTES``."""

    sent: bytes
    pad: bytes


def bench_message() -> BenchData:
    probe = encode_message(BenchData(sent=bytes(8), pad=b""))
    return BenchData(sent=time.perf_counter_ns().to_bytes(8, "big"), pad=b"x" * (BODY_BYTES - len(probe)))


def since_ms(sent: bytes) -> float:
    return (time.perf_counter_ns() - int.from_bytes(sent[:8], "big")) / 1e6


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


# ---- processes -----------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_relay(workdir: Path) -> tuple[subprocess.Popen[str], str]:
    config = workdir / "relay.toml"
    config.write_text(CONFIG)
    process = subprocess.Popen(
        [sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(workdir / "relay"), "--config", str(config),
         "--log-format", "json", "relay", "--listen", "127.0.0.1:0", "--metrics", "", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    event = json.loads(process.stdout.readline())
    return process, event["address"]


def start_forwarder(target: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, __file__, "--forwarder", target], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


async def forwarder(target: str) -> None:
    """A raw trio byte-forwarder: every connection to it is copied, both ways, to a new one to ``target``."""
    host, port = target.rsplit(":", 1)

    async def copy(source: trio.abc.Stream, sink: trio.abc.Stream) -> None:
        try:
            while data := await source.receive_some(65536):
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def handle(stream: trio.SocketStream) -> None:
        other = await trio.open_tcp_stream(host, int(port))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(copy, stream, other)
            await copy(other, stream)
            nursery.cancel_scope.cancel()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    print(f"127.0.0.1:{listeners[0].socket.getsockname()[1]}", flush=True)
    await trio.serve_listeners(handle, listeners)


# ---- (a) and (b): one Noise link ------------------------------------------------------------------

class Sink:
    """B's side: records the one-way time of every message, and can echo (for one-at-a-time delivery)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.count = 0
        self.done = trio.Event()
        self.expected = 0
        self.echo = False

    async def handler(self, link: Link) -> None:
        async for msg in link:
            assert isinstance(msg, BenchData)
            self.times.append(since_ms(msg.sent))
            self.count += 1
            if self.echo:
                await link.send(msg)
            if self.count >= self.expected:
                self.done.set()


async def measure(link: Link, sink: Sink, samples: int, frames: int) -> tuple[list[float], float]:
    sink.times, sink.count, sink.echo, sink.expected, sink.done = [], 0, True, samples, trio.Event()
    for _ in range(samples):
        await link.send(bench_message())
        await link.receive()
    delivery = sink.times[1:]
    sink.times, sink.count, sink.echo, sink.expected, sink.done = [], 0, False, frames, trio.Event()
    started = time.perf_counter()
    for _ in range(frames):
        await link.send(bench_message())
    await sink.done.wait()
    return delivery, frames / (time.perf_counter() - started)


async def one_link(relay: str, forwarder_target: list[str], samples: int, frames: int) -> dict[str, tuple[list[float], float]]:
    sink = Sink()
    out: dict[str, tuple[list[float], float]] = {}
    async with trio.open_nursery() as nursery:
        door = Door(sink.handler, B, limits=UNLIMITED)
        address = await nursery.start(partial(serve, sink.handler, B, "127.0.0.1", 0, door=door))
        keeper = Reservations(B, (relay,), door.admit)
        await nursery.start(keeper.run)
        await keeper.tried.wait()
        forwarder_target.append(str(address))
        fwd_process, fwd_address = start_forwarder(str(address))
        try:
            for route in ("direct", "relayed", "forwarded"):
                if route == "direct":
                    link = await dial(address.host, address.port, A, expected_peer=B.peer_id, limits=UNLIMITED)
                elif route == "relayed":
                    link = await dial_relayed(relay, A, B.peer_id, limits=UNLIMITED)
                else:
                    host, port = fwd_address.rsplit(":", 1)
                    link = await dial(host, int(port), A, expected_peer=B.peer_id, limits=UNLIMITED)
                out[route] = await measure(link, sink, samples, frames)
                await link.aclose()
        finally:
            fwd_process.terminate()
            fwd_process.wait()
        nursery.cancel_scope.cancel()
    return out


# ---- (c): many raw circuits ------------------------------------------------------------------------

async def receiver(relay: str) -> None:
    """The far ends of (c), in their own process (``--receiver``): reserved at ``relay`` (or, with ``direct``,
    listening on TCP), they read every circuit and print, as one JSON line, the one-way delays of what
    arrived (``perf_counter_ns`` is the machine's monotonic clock: the same in both processes)."""
    delays: list[float] = []

    async def read(stream: trio.abc.Stream) -> None:
        buffer = b""
        try:
            while data := await stream.receive_some(65536):
                now = time.perf_counter_ns()
                buffer += data
                while len(buffer) >= RAW_BYTES:
                    delays.append((now - int.from_bytes(buffer[:8], "big")) / 1e6)
                    buffer = buffer[RAW_BYTES:]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    async def admit(stream: trio.abc.Stream, address: str, source: str) -> None:
        await read(stream)

    async with trio.open_nursery() as nursery:
        if relay == "direct":
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            nursery.start_soon(trio.serve_listeners, read, listeners)
            print(f"127.0.0.1:{listeners[0].socket.getsockname()[1]}", flush=True)
        else:
            keeper = Reservations(B, (relay,), admit)
            await nursery.start(keeper.run)
            await keeper.tried.wait()
            print("reserved", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)  # "start": count from now
        delays.clear()
        await trio.to_thread.run_sync(sys.stdin.readline)  # "stop"
        print(json.dumps(delays), flush=True)
        nursery.cancel_scope.cancel()


async def many(relay: str | None, circuits: int, rate: int, seconds: float, relay_pid: int | None) -> tuple[list[float], float]:
    """``circuits`` streams each carrying ``rate`` raw 100-byte messages a second for ``seconds``, through
    the relay (``relay``) or over direct TCP (None), to a receiver process: the one-way delays (ms) and the
    relay's CPU seconds over the window."""
    far = subprocess.Popen([sys.executable, __file__, "--receiver", relay or "direct"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    assert far.stdin is not None and far.stdout is not None
    ready = far.stdout.readline().strip()
    streams: list[trio.abc.Stream] = []
    if relay is not None:
        for _ in range(circuits):
            stream, _ = await open_circuit(relay, A, RelayConnect(target=B.peer_id), B.peer_id)
            streams.append(stream)
    else:
        host, port = ready.rsplit(":", 1)
        streams = [await trio.open_tcp_stream(host, int(port)) for _ in range(circuits)]
    await trio.sleep(0.5)
    far.stdin.write("start\n")
    far.stdin.flush()
    cpu = cpu_seconds(relay_pid) if relay_pid else 0.0
    end = trio.current_time() + seconds

    async def send(stream: trio.abc.Stream, offset: float) -> None:
        await trio.sleep(offset)
        pad = b"p" * (RAW_BYTES - 8)
        next_at = trio.current_time()
        while trio.current_time() < end:
            await stream.send_all(time.perf_counter_ns().to_bytes(8, "big") + pad)
            next_at += 1 / rate
            await trio.sleep_until(next_at)

    async with trio.open_nursery() as senders:
        for i, stream in enumerate(streams):
            senders.start_soon(send, stream, i / circuits / rate)
    await trio.sleep(0.5)
    cpu = (cpu_seconds(relay_pid) - cpu) if relay_pid else 0.0
    far.stdin.write("stop\n")
    far.stdin.flush()
    delays: list[float] = json.loads(far.stdout.readline())
    for stream in streams:
        await stream.aclose()
    far.terminate()
    far.wait()
    return delays, cpu


# ---- (d): an 8-node race through the relay ---------------------------------------------------------

def race(relay: str | None, nodes: int, workdir: Path) -> dict:
    """An ``nodes``-node race of real processes: every node ``--reachability relay`` through ``relay``, or
    (None) every node direct, the baseline under the same machine load."""
    base = [sys.executable, "-m", "open4wd_node.cli.main", "--log-format", "json"]
    reach = ["--reachability", "relay", "--relay", relay] if relay else ["--reachability", "direct"]
    common = ["--auto-ready", "--json", "--driver", "bot", *reach]
    workdir = workdir / ("relayed" if relay else "direct")
    host = subprocess.Popen(base + ["--data-dir", str(workdir / "n0"), "host", "--min-players", str(nodes),
                                    "--max-players", str(nodes), "--laps", "1", *common, "--seed", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert host.stdout is not None
    invite = None
    lines: list[str] = []
    while invite is None:
        line = host.stdout.readline()
        lines.append(line)
        event = json.loads(line)
        invite = event.get("invite") if event.get("event") == "room-created" else None
    joiners = [subprocess.Popen(base + ["--data-dir", str(workdir / f"n{i}"), "join", invite, *common, "--seed", str(i)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for i in range(1, nodes)]
    outputs = [host.communicate(timeout=900)[0]] + [j.communicate(timeout=900)[0] for j in joiners]
    outputs[0] = "".join(lines) + outputs[0]
    results = [json.loads(line) for out in outputs for line in out.splitlines() if '"event": "result"' in line]
    return {"finished": sum(r["outcome"] == "finished" for r in results), "max_lag": max(r["max_lag"] for r in results),
            "disagreements": sum(r["disagreements"] for r in results), "results": len(results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--circuits", type=int, default=200)
    parser.add_argument("--rate", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--race", action="store_true", help="also race 8 node processes through the relay")
    parser.add_argument("--forwarder", metavar="TARGET", help=argparse.SUPPRESS)
    parser.add_argument("--receiver", metavar="RELAY", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.forwarder:
        trio.run(forwarder, args.forwarder)
        return
    if args.receiver:
        configure_logging("json", logging.WARNING)  # stdout carries the figures
        trio.run(receiver, args.receiver)
        return
    configure_logging("json", logging.WARNING)
    workdir = Path(tempfile.mkdtemp(prefix="open4wd-relay-bench-"))
    relay_process, relay = start_relay(workdir)
    try:
        links = trio.run(one_link, relay, [], args.samples, args.frames)
        for route, (delivery, rate) in links.items():
            print(f"(a/b) {route:<9}  delivery median {statistics.median(delivery):.3f} ms, "
                  f"p99 {percentile(delivery, 0.99):.3f} ms; {rate:,.0f} frames/s")
        added = statistics.median(links["relayed"][0]) - statistics.median(links["direct"][0])
        print(f"(a) relayed adds {added:.3f} ms to the median (target ≤ 0.3 ms)")
        print(f"(b) relay / raw forwarder frames/s = {links['relayed'][1] / links['forwarded'][1]:.2f} (target ≥ 0.7)")
        direct, _ = trio.run(many, None, args.circuits, args.rate, args.seconds, None)
        relayed, cpu = trio.run(many, relay, args.circuits, args.rate, args.seconds, relay_process.pid)
        offered = args.circuits * args.rate
        print(f"(c) {args.circuits} circuits x {args.rate} msg/s ({offered:,} msg/s offered; delivered in {args.seconds:g} s: "
              f"{len(relayed):,} relayed, {len(direct):,} direct, of {offered * args.seconds:,.0f})")
        print(f"    direct  p50 {percentile(direct, 0.5):.3f} ms, p99 {percentile(direct, 0.99):.3f} ms")
        print(f"    relayed p50 {percentile(relayed, 0.5):.3f} ms, p99 {percentile(relayed, 0.99):.3f} ms; "
              f"added p99 {percentile(relayed, 0.99) - percentile(direct, 0.99):.3f} ms")
        rate = len(relayed) / args.seconds
        print(f"    relay CPU {cpu:.2f} s over {args.seconds:g} s = {cpu / args.seconds * 100:.0f}% of a core; "
              f"{cpu / args.seconds / (rate / 1000) * 1000:.1f} ms of CPU per second per 1,000 msg/s")
        if args.race:
            for label, via in (("direct (baseline)", None), ("relay-only", relay)):
                summary = race(via, 8, workdir)
                print(f"(d) 8 {label} node processes at 60 Hz: worst lag {summary['max_lag']} frames (target ≤ 4), "
                      f"{summary['finished']}/{summary['results']} finished, {summary['disagreements']} disagreements, "
                      f"load {os.getloadavg()[0]:.1f}")
    finally:
        relay_process.terminate()
        relay_process.wait()
        shutil.rmtree(workdir, ignore_errors=True)  # the relay's and the nodes' data directories
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
