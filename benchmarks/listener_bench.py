"""Host RSS before, during and after junk links (issue "Encrypted, self-healing links", deliverable 3):
a real ``open4wd-node host`` process on 127.0.0.1, and junk clients in this process over real loopback TCP.

Each junk link is what the issue measured: a connection from one of ``--sources`` loopback addresses
(127.0.0.2, 127.0.0.3, …) that completes the handshake with a throwaway identity, then sends the header
of a 256 KiB frame and all but one byte of its body, and holds the connection for ``--hold`` seconds (or
until the host closes it). ``--links`` of them at most ``--concurrency`` at a time; a junk client the
host refuses (``listener-busy``, or any other end before its handshake finished) tries again after
50 ms, until ``--links`` links have been authenticated. Then every junk connection is closed, the host is
left alone for ``--settle`` seconds, and its RSS (VmRSS of /proc/PID/status) is read again.

Figures: the host's RSS at baseline (the room created, nothing connected), its peak while the junk
came (sampled every 50 ms), after the settle time, and ``after - baseline`` (the target: at most 20 MB);
how many junk links were authenticated and refused, and the host's logged link ends by event and code
(every one must carry a code and the peer's address). ``--node-src DIR`` runs the host from another
source tree, e.g. an export of an older commit (``git archive COMMIT | tar -x -C DIR``), for comparison
in the same conditions; the junk clients always use this tree's handshake.

    .venv/bin/python benchmarks/listener_bench.py [--links 600] [--concurrency 600] [--sources 100]
        [--hold 2] [--settle 10] [--node-src DIR]

A benchmark: it asserts nothing; it prints the figures and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import trio

from open4wd_node.net.link import LinkClosed

from open4wd_node.net.stream_carrier import open_link
from protocol.encoding.wire import HEADER
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER

REPO = Path(__file__).resolve().parent.parent
FRAME = 256 * 1024  # the room channel's largest frame: what each junk link announces
START_LIMIT_S = 120  # only a host that never creates its room reaches this


def rss_mb(pid: int) -> float:
    """The process's resident set size in MB (VmRSS, /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


class Junk:
    """The junk clients and what happened to them."""

    def __init__(self, host: str, port: int, args: argparse.Namespace) -> None:
        self.host, self.port, self.args = host, port, args
        self.authenticated = 0
        self.refused: Counter[str] = Counter()
        self.open: list[trio.SocketStream] = []

    async def one(self, index: int, limiter: trio.CapacityLimiter) -> None:
        source = f"127.0.0.{2 + index % self.args.sources}"
        while self.authenticated < self.args.links:
            async with limiter:
                if await self._attempt(source):
                    return
            await trio.sleep(0.05)

    async def _attempt(self, source: str) -> bool:
        try:
            stream = await trio.open_tcp_stream(self.host, self.port, local_address=source)
        except OSError as exc:
            self.refused[f"connect: {exc.strerror}"] += 1
            return False
        try:
            await open_link(stream, Identity(os.urandom(32)), DIALER)
        except LinkClosed as exc:
            self.refused[exc.code] += 1
            return False
        self.authenticated += 1
        self.open.append(stream)
        with trio.move_on_after(self.args.hold):
            try:
                await stream.send_all(HEADER.pack(FRAME) + bytes(FRAME - 1))
                while await stream.receive_some(65536):  # until the host closes it (pings are read and dropped)
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        await trio.aclose_forcefully(stream)
        return True


async def run(args: argparse.Namespace, pid: int, host: str, port: int) -> dict[str, object]:
    baseline = rss_mb(pid)
    junk = Junk(host, port, args)
    peak = baseline
    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        async def sample() -> None:
            nonlocal peak
            while True:
                peak = max(peak, rss_mb(pid))
                await trio.sleep(0.05)

        nursery.start_soon(sample)
        async with trio.open_nursery() as clients:
            limiter = trio.CapacityLimiter(args.concurrency)
            for index in range(args.links):
                clients.start_soon(junk.one, index, limiter)
        junk_s = time.perf_counter() - started
        for stream in junk.open:
            await trio.aclose_forcefully(stream)
        await trio.sleep(args.settle)
        nursery.cancel_scope.cancel()
    after = rss_mb(pid)
    return {"baseline": baseline, "peak": peak, "after": after, "junk_s": junk_s, "junk": junk}


def start_host(data_dir: Path, node_src: Path) -> tuple[subprocess.Popen[str], str, int]:
    env = dict(os.environ, PYTHONPATH=str(node_src))
    process = subprocess.Popen(
        [sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(data_dir), "--log-format", "json",
         "host", "--listen", "127.0.0.1:0", "--json"],
        cwd=node_src, env=env, stdout=subprocess.PIPE, stderr=open(data_dir / "host.log", "w"), text=True,
    )
    deadline = time.monotonic() + START_LIMIT_S
    assert process.stdout is not None
    for line in process.stdout:
        event = json.loads(line)
        if event.get("event") == "room-created":
            host, port = event["listen"].rsplit(":", 1)
            return process, host, int(port)
        if time.monotonic() > deadline:
            break
    process.kill()
    raise RuntimeError(f"the host created no room; its log: {data_dir / 'host.log'}")


def logged_ends(log: Path) -> tuple[Counter[str], int]:
    """The host's logged link ends by "event code", and how many lack a code or an address."""
    ends: Counter[str] = Counter()
    incomplete = 0
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event") in ("link-refused", "link-closed", "link-rejected"):
            ends[f"{entry['event']} {entry.get('code')}"] += 1
            incomplete += not (entry.get("code") and entry.get("address"))
    return ends, incomplete


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=600, help="junk links to authenticate")
    parser.add_argument("--concurrency", type=int, default=600, help="junk clients at once")
    parser.add_argument("--sources", type=int, default=100, help="source addresses 127.0.0.2 …")
    parser.add_argument("--hold", type=float, default=2.0, help="seconds each junk link is held at most")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds the host is left alone before 'after'")
    parser.add_argument("--node-src", type=Path, default=REPO, help="source tree the host runs from")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch)
        process, host, port = start_host(data_dir, args.node_src.resolve())
        try:
            time.sleep(2)  # the room is created: let the host go idle before the baseline
            figures = trio.run(run, args, process.pid, host, port)
        finally:
            process.terminate()
            process.wait(timeout=30)
        ends, incomplete = logged_ends(data_dir / "host.log")
    junk = figures["junk"]
    assert isinstance(junk, Junk)
    print(f"host from {args.node_src.resolve()}; {args.links} junk links from {args.sources} sources, "
          f"{args.concurrency} at once, each holding a {FRAME // 1024} KiB partial frame for up to {args.hold:g} s")
    print(f"junk: {junk.authenticated} authenticated, refused {sum(junk.refused.values())} "
          f"({dict(junk.refused.most_common())}) in {figures['junk_s']:.1f} s")
    print(f"host RSS: baseline {figures['baseline']:.1f} MB, peak {figures['peak']:.1f} MB, "
          f"after {args.settle:g} s {figures['after']:.1f} MB: after - baseline = "
          f"{figures['after'] - figures['baseline']:+.1f} MB (target <= 20 MB)")  # type: ignore[operator]
    print(f"host log: {sum(ends.values())} link ends {dict(ends.most_common())}; without code or address: {incomplete}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
