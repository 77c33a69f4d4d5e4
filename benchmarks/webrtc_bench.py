"""WebRTC link figures: the trio bridge for aiortc, and the WebRTC link against the Noise link.

Every figure is a ratio to work measured in the same run, with the load average printed beside it.
Three parts (all by default; ``--part`` picks one):

``bridge`` (the choice of aiortc's own thread over trio-asyncio and guest mode). Each bridge runs in its
own process (importing trio-asyncio replaces asyncio's default loop policy, which guest mode cannot run
under), alternating ``--rounds`` times, with a process for no bridge at all (aiortc in ``asyncio.run``, the
floors in ``trio.run`` beforehand) to show what a bridge costs. trio-asyncio is measured where it is
installed (``pip install trio-asyncio``; the node does not need it). In each process, on loopback, 100-byte
messages, one in flight:
- floors: a raw TCP socket round trip in trio, and the Noise link's round trip (``open_link``);
- aiortc: the first DataChannel open (offer to open, both peers in the process), the round trip of a
  small message on a reliable ordered channel echoed by a trio task, and the CPU per message
  (``process_time``, every thread, over the round trips / 2 messages each); messages reach trio through
  the bridge's own path (trio-asyncio: aiortc's callback runs in a trio task; guest mode and the thread:
  ``TrioToken.run_sync_soon``, one per message).

``links`` (the product's carrier and its bridge): the first link open (``connect`` to both ends bound,
path measured) against the 200 ms target; one-way delivery median and CPU per message (``process_time``,
every thread) of the WebRTC link against the Noise link (targets ≤ 3× each); a relay-only link through a
local coturn (REST credentials) against the direct WebRTC link in the same run (target ≤ 0.5 ms added to
the median). Each round in a fresh process; ``--against DIR`` (another checkout's source tree, e.g. one
``git archive`` made) runs that tree's round after each of this one's, for a comparison in the same minutes.

``nat`` (root): the NAT lab of the tests (``tests/netns.py``): two peer processes, each behind its own NAT
in network namespaces, open a link by STUN hole punching (ordinary NATs, STUN only: with TURN offered
too, aioice's aggressive nomination often settles on the relay first) and through coturn (symmetric
NATs): each peer's time from ``connect``/``accept`` to the link open and bound (targets: punch ≤ 2 s,
TURN ≤ 5 s), against the same processes' direct loopback open in ``links`` as the floor.

``install``: a fresh venv with the node's other dependencies, then ``pip install aiortc`` into it: the
time and the site-packages bytes each step adds (pip from this machine's mirrors).

    python benchmarks/webrtc_bench.py [--part bridge|links|nat|install] [--rounds 3] [--samples 1000]
        [--against DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

REPO = Path(__file__).resolve().parent.parent
TREE = Path(os.environ.get("OPEN4WD_BENCH_TREE", REPO))  # the node's source tree measured (``--against``)
sys.path[:0] = [str(TREE), str(REPO / "benchmarks")]

from link_bench import BODY_BYTES, UNLIMITED, bench_message, noise_pair, raw_pair  # noqa: E402

BODY = b"x" * BODY_BYTES


def load() -> str:
    """The load average, 1/5/15 minutes."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


async def timed(exchange: Callable[[int], Awaitable[object]], samples: int) -> tuple[float, float]:
    """(median ms, CPU µs) of ``exchange(seq)`` over ``samples`` calls, after 50 unmeasured ones."""
    for seq in range(50):
        await exchange(seq)
    times = []
    cpu = time.process_time()
    for seq in range(samples):
        started = time.perf_counter()
        await exchange(seq)
        times.append(time.perf_counter() - started)
    cpu = time.process_time() - cpu
    return statistics.median(times) * 1000, cpu / samples * 1e6


async def floor_round_trip(make: Callable[[], Awaitable[Any]], samples: int) -> tuple[float, float]:
    """(median round trip ms, CPU µs per message) of a link kind from ``link_bench``, echoed by a task."""
    a, b, links = await make()

    async def echo() -> None:
        while True:
            await b.send(await b.receive())

    async def round_trip(seq: int) -> None:
        await a.send(bench_message(seq))
        await a.receive()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(echo)
        rtt, cpu = await timed(round_trip, samples)
        nursery.cancel_scope.cancel()
    for link in links:
        await link.aclose()
    return rtt, cpu / 2  # two messages per round trip


# ---- part 1: the bridge -------------------------------------------------------------------------------

async def aiortc_pair() -> tuple[Any, Any, Any, Any]:
    """Two aiortc peers with one negotiated reliable channel, offered and answered in the process (asyncio side)."""
    from aiortc import RTCConfiguration, RTCPeerConnection

    a, b = RTCPeerConnection(RTCConfiguration(iceServers=[])), RTCPeerConnection(RTCConfiguration(iceServers=[]))
    ca = a.createDataChannel("room", negotiated=True, id=0)
    cb = b.createDataChannel("room", negotiated=True, id=0)
    await a.setLocalDescription(await a.createOffer())
    await b.setRemoteDescription(a.localDescription)
    await b.setLocalDescription(await b.createAnswer())
    await a.setRemoteDescription(b.localDescription)
    return a, b, ca, cb


async def aiortc_figures(call: Callable[..., Awaitable[Any]], to_trio: Callable[[Callable[..., None]], Callable[..., None]],
                         post: Callable[..., None], samples: int) -> tuple[float, float, float]:
    """(first open ms, round trip ms, CPU µs per message) of aiortc driven from trio through a bridge:
    ``call(fn)`` awaits an asyncio coroutine function, ``to_trio(f)`` wraps a callback so it runs ``f`` in trio,
    ``post(f, *args)`` runs a synchronous aiortc call on the asyncio side without waiting."""
    from open4wd_node.net.webrtc.hosts import gathering_on
    from protocol.webrtc.ice import HostAddresses

    async def pair() -> tuple[Any, Any, Any, Any]:
        with gathering_on(HostAddresses.only("127.0.0.1")):
            return await aiortc_pair()

    started = time.perf_counter()
    a, b, ca, cb = await call(pair)
    opened = trio.Event()
    ca.on("open", to_trio(opened.set))
    if ca.readyState == "open":
        opened.set()
    await opened.wait()
    open_ms = (time.perf_counter() - started) * 1000
    to_a, from_a = trio.open_memory_channel[bytes](100)
    to_b, from_b = trio.open_memory_channel[bytes](100)
    ca.on("message", to_trio(to_a.send_nowait))
    cb.on("message", to_trio(to_b.send_nowait))

    async def echo() -> None:
        async for message in from_b:
            post(cb.send, message)

    async def round_trip(seq: int) -> bytes:
        post(ca.send, BODY)
        return await from_a.receive()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(echo)
        rtt, cpu = await timed(round_trip, samples)
        nursery.cancel_scope.cancel()
    await call(a.close)
    await call(b.close)
    return open_ms, rtt, cpu / 2  # two messages per round trip


async def bridge_figures(call: Callable[..., Awaitable[Any]], to_trio: Callable[[Callable[..., None]], Callable[..., None]],
                         post: Callable[..., None], samples: int) -> dict[str, float]:
    """Floors and aiortc figures in one run of one bridge."""
    tcp_rtt, tcp_cpu = await floor_round_trip(raw_pair, samples)
    noise_rtt, noise_cpu = await floor_round_trip(noise_pair, samples)
    opens, rtts, cpus = [], [], []
    for _ in range(3):
        open_ms, rtt, cpu = await aiortc_figures(call, to_trio, post, samples)
        opens.append(open_ms)
        rtts.append(rtt)
        cpus.append(cpu)
    return {"tcp_rtt_ms": tcp_rtt, "tcp_cpu_us": tcp_cpu, "noise_rtt_ms": noise_rtt, "noise_cpu_us": noise_cpu,
            "open_ms": statistics.median(opens), "rtt_ms": statistics.median(rtts), "cpu_us": statistics.median(cpus)}


def run_trio_asyncio(samples: int) -> dict[str, float]:
    """An asyncio loop of trio-asyncio inside ``trio.run`` (aiortc's callbacks run in a trio task)."""
    import trio_asyncio

    async def main() -> dict[str, float]:
        async with trio_asyncio.open_loop():
            return await bridge_figures(lambda fn, *a: trio_asyncio.aio_as_trio(fn)(*a), lambda f: f,
                                        lambda f, *a: f(*a), samples)

    return trio.run(main)


def run_guest(samples: int) -> dict[str, float]:
    """trio as a guest of ``asyncio.run`` (``trio.lowlevel.start_guest_run``)."""

    async def call(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        task = asyncio.get_running_loop().create_task(fn(*args))
        token, done = trio.lowlevel.current_trio_token(), trio.Event()
        task.add_done_callback(lambda _: token.run_sync_soon(done.set))
        try:
            await done.wait()
        except trio.Cancelled:
            task.cancel()
            raise
        return task.result()

    async def trio_main() -> dict[str, float]:
        token = trio.lowlevel.current_trio_token()
        return await bridge_figures(call, lambda f: lambda *args: token.run_sync_soon(f, *args), lambda f, *a: f(*a), samples)

    async def host() -> dict[str, float]:
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[Any] = loop.create_future()
        trio.lowlevel.start_guest_run(trio_main, run_sync_soon_threadsafe=loop.call_soon_threadsafe,
                                      done_callback=finished.set_result, host_uses_signal_set_wakeup_fd=True)
        result: dict[str, float] = (await finished).unwrap()
        return result

    return asyncio.run(host())


def run_plain_asyncio(samples: int) -> dict[str, float]:
    """No bridge, for what a bridge costs: the floors in ``trio.run``, then aiortc in ``asyncio.run`` with
    messages delivered to an asyncio queue."""

    async def floors() -> dict[str, float]:
        tcp_rtt, tcp_cpu = await floor_round_trip(raw_pair, samples)
        noise_rtt, noise_cpu = await floor_round_trip(noise_pair, samples)
        return {"tcp_rtt_ms": tcp_rtt, "tcp_cpu_us": tcp_cpu, "noise_rtt_ms": noise_rtt, "noise_cpu_us": noise_cpu}

    async def aiortc_only() -> tuple[float, float, float]:
        from open4wd_node.net.webrtc.hosts import gathering_on
        from protocol.webrtc.ice import HostAddresses

        started = time.perf_counter()
        with gathering_on(HostAddresses.only("127.0.0.1")):
            a, b, ca, cb = await aiortc_pair()
        opened = asyncio.get_running_loop().create_future()
        ca.on("open", lambda: opened.done() or opened.set_result(None))
        if ca.readyState != "open":
            await opened
        open_ms = (time.perf_counter() - started) * 1000
        answers: asyncio.Queue[bytes] = asyncio.Queue()
        ca.on("message", answers.put_nowait)
        cb.on("message", cb.send)

        async def round_trip(seq: int) -> bytes:
            ca.send(BODY)
            return await answers.get()

        rtt, cpu = await timed(round_trip, samples)
        await a.close()
        await b.close()
        return open_ms, rtt, cpu / 2

    figures = trio.run(floors)
    runs = [asyncio.run(aiortc_only()) for _ in range(3)]
    figures.update(open_ms=statistics.median(r[0] for r in runs), rtt_ms=statistics.median(r[1] for r in runs),
                   cpu_us=statistics.median(r[2] for r in runs))
    return figures


def run_thread(samples: int) -> dict[str, float]:
    """The node's bridge, bare: aiortc on its own asyncio loop in a thread; trio posts calls with
    ``call_soon_threadsafe`` and is handed callbacks with ``TrioToken.run_sync_soon``."""
    import threading

    async def main() -> dict[str, float]:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="aiortc", daemon=True)
        thread.start()
        token = trio.lowlevel.current_trio_token()

        async def call(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
            future = asyncio.run_coroutine_threadsafe(fn(*args), loop)
            done = trio.Event()
            future.add_done_callback(lambda _: token.run_sync_soon(done.set))
            await done.wait()
            return future.result()

        try:
            return await bridge_figures(call, lambda f: lambda *args: token.run_sync_soon(f, *args),
                                        lambda f, *a: loop.call_soon_threadsafe(f, *a), samples)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await trio.to_thread.run_sync(thread.join)

    return trio.run(main)


BRIDGES = {"trio-asyncio": run_trio_asyncio, "guest": run_guest, "thread": run_thread, "none (asyncio)": run_plain_asyncio}


def part_bridge(rounds: int, samples: int) -> None:
    """Each bridge in its own process, alternating; medians of the rounds, as ratios to the same process's floors."""
    import importlib.util

    names = [name for name in BRIDGES if name != "trio-asyncio" or importlib.util.find_spec("trio_asyncio")]
    results: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            done = subprocess.run([sys.executable, __file__, "--one-bridge", name, "--samples", str(samples)],
                                  capture_output=True, text=True, check=True)
            results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"== bridge: {rounds} rounds x {samples} round trips, {BODY_BYTES}-byte messages, loopback; load {load()}")
    print(f"{'bridge':15} {'open ms':>8} {'rtt ms':>8} {'/tcp':>6} {'/noise':>7} {'cpu us':>7} {'/noise':>7}"
          f" {'tcp rtt':>8} {'noise rtt':>9}")
    for name, runs in results.items():
        m = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        ratio_tcp = statistics.median(r["rtt_ms"] / r["tcp_rtt_ms"] for r in runs)
        ratio_noise = statistics.median(r["rtt_ms"] / r["noise_rtt_ms"] for r in runs)
        cpu_noise = statistics.median(r["cpu_us"] / r["noise_cpu_us"] for r in runs)
        print(f"{name:15} {m['open_ms']:>8.1f} {m['rtt_ms']:>8.3f} {ratio_tcp:>6.1f} {ratio_noise:>7.2f} "
              f"{m['cpu_us']:>7.0f} {cpu_noise:>7.2f} {m['tcp_rtt_ms']:>8.3f} {m['noise_rtt_ms']:>9.3f}")


# ---- part 2: the product's links -----------------------------------------------------------------------

async def carrier_figures(samples: int, relay: bool) -> dict[str, float]:
    """First open, delivery median and CPU per message of two links over WebRTC carriers (``relay``: through a
    local coturn)."""
    from dataclasses import replace

    from open4wd_node.net.webrtc.connector import WebRTCSettings, webrtc_endpoint, webrtc_link
    from open4wd_node.net.webrtc.signaling import SignalingHub
    from open4wd_node.signal.coturn import local_coturn
    from protocol.identity.keys import Identity
    from protocol.webrtc.channels import LinkKind
    from protocol.webrtc.ice import HostAddresses, IceServer, IceTransportPolicy, turn_rest_credentials

    alice, bob = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
    settings = WebRTCSettings(hosts=HostAddresses.only("127.0.0.1"))
    async with local_coturn() as coturn:
        def relayed(peer: str) -> WebRTCSettings:
            creds = turn_rest_credentials(coturn.settings.secret, peer, int(time.time()))
            return replace(settings, policy=IceTransportPolicy.RELAY,
                           ice_servers=(IceServer.parse(coturn.turn_url, creds.username, creds.credential),))

        hub = SignalingHub("room:2f1c3b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b")
        a_settings, b_settings = (relayed(alice.peer_id), relayed(bob.peer_id)) if relay else (settings, settings)
        async with webrtc_endpoint(hub.endpoint(alice.peer_id), LinkKind.ROOM, a_settings) as a_end, \
                webrtc_endpoint(hub.endpoint(bob.peer_id), LinkKind.ROOM, b_settings) as b_end:
            links: dict[str, Any] = {}
            started = time.perf_counter()

            async def answer() -> None:
                links["b"] = await b_end.accept()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer)
                links["a"] = await a_end.connect(bob.peer_id)
            open_ms = (time.perf_counter() - started) * 1000
            a, b = (webrtc_link(links[end], limits=UNLIMITED) for end in ("a", "b"))  # as the Noise pair

            async def delivery(seq: int) -> object:
                await a.send(bench_message(seq))
                return await b.receive()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(_drain, a)  # the link's housekeeping (pongs) is read, as a node reads every link
                median, cpu = await timed(delivery, samples)
                nursery.cancel_scope.cancel()
            path = a.carrier.path.value
            await a.aclose()
    return {"open_ms": open_ms, "median_ms": median, "cpu_us": cpu, "path": path}


async def _drain(link: Any) -> None:
    """Read ``link`` (its peer sends nothing but the link's own pings and pongs)."""
    async for _ in link:
        pass


async def noise_delivery(samples: int) -> dict[str, float]:
    """The Noise link's one-way delivery median and CPU per message, measured as ``carrier_figures`` does."""
    a, b, links = await noise_pair()

    async def delivery(seq: int) -> object:
        await a.send(bench_message(seq))
        return await b.receive()

    median, cpu = await timed(delivery, samples)
    for link in links:
        await link.aclose()
    return {"median_ms": median, "cpu_us": cpu}


def links_round(samples: int) -> dict[str, dict[str, Any]]:
    """Noise, direct WebRTC and relayed WebRTC, one after the other in one trio run of this process."""
    from open4wd_node.net.webrtc.bridge import asyncio_bridge

    async def main() -> dict[str, dict[str, Any]]:
        async with asyncio_bridge():
            return {"noise": await noise_delivery(samples), "webrtc": await carrier_figures(samples, relay=False),
                    "webrtc-relay": await carrier_figures(samples, relay=True)}

    return trio.run(main)


def part_links(rounds: int, samples: int, against: Path | None) -> None:
    """``links_round`` ``rounds`` times, each in a fresh process; with ``against`` (another checkout's source
    tree), its round after each of this tree's, so the two are compared in the same minutes."""
    trees = {"this tree": TREE} | ({f"against {against}": against} if against is not None else {})
    results: dict[str, dict[str, list[dict[str, Any]]]] = {name: {} for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            done = subprocess.run([sys.executable, __file__, "--one-links", "--samples", str(samples)],
                                  env={**os.environ, "OPEN4WD_BENCH_TREE": str(tree)}, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"the links round of {name} failed: {done.stderr[-3000:]}")
            for kind, figures in json.loads(done.stdout.strip().splitlines()[-1]).items():
                results[name].setdefault(kind, []).append(figures)
    for name, measured in results.items():
        print(f"== links, {name}: {rounds} rounds x {samples} one-way deliveries, {BODY_BYTES}-byte bodies, "
              f"loopback, a process per round; load {load()}")
        links_summary(measured)


def links_summary(results: dict[str, list[dict[str, Any]]]) -> None:
    """The medians of one tree's rounds, as ratios to the Noise link of the same rounds."""
    noise = results["noise"]
    for kind in ("webrtc", "webrtc-relay"):
        runs = results[kind]
        target = " (target <= 200)" if kind == "webrtc" else " (TURN allocations)"
        print(f"{kind:13} path {runs[0]['path']:6} first open {statistics.median(r['open_ms'] for r in runs):6.1f} ms"
              f"{target}  delivery median {statistics.median(r['median_ms'] for r in runs):.3f} ms  "
              f"cpu/msg {statistics.median(r['cpu_us'] for r in runs):.0f} us")
    print(f"{'noise':13} delivery median {statistics.median(r['median_ms'] for r in noise):.3f} ms  "
          f"cpu/msg {statistics.median(r['cpu_us'] for r in noise):.0f} us")
    direct = results["webrtc"]
    delivery = statistics.median(w["median_ms"] / n["median_ms"] for w, n in zip(direct, noise, strict=True))
    cpu = statistics.median(w["cpu_us"] / n["cpu_us"] for w, n in zip(direct, noise, strict=True))
    added = statistics.median(r["median_ms"] - d["median_ms"] for r, d in zip(results["webrtc-relay"], direct, strict=True))
    print(f"webrtc / noise delivery median: {delivery:.2f}x (target <= 3)   cpu per message: {cpu:.2f}x (target <= 3)")
    print(f"through coturn, added to the direct median: {added:+.3f} ms (target <= 0.5)")


# ---- part 3: NAT lab ----------------------------------------------------------------------------------

def part_nat(rounds: int) -> None:
    """The lab's two scenarios, ``rounds`` times each, alternating: each peer's open time and path."""
    import tempfile as scratch
    from functools import partial

    from tests.netns import nat_lab
    from tests.open4wd_node.net.webrtc.nat_lab import run_scenario

    times: dict[str, list[float]] = {"ordinary": [], "symmetric": []}
    paths: dict[str, set[str]] = {"ordinary": set(), "symmetric": set()}
    for _ in range(rounds):
        for kind in times:
            with nat_lab(symmetric=kind == "symmetric") as lab, scratch.TemporaryDirectory() as workdir:
                reports = trio.run(partial(run_scenario, lab, Path(workdir), turn=kind == "symmetric"))
            for report in reports:
                if "error" in report:
                    raise SystemExit(f"{kind} NATs: {report}")
                times[kind].append(report["open_ms"])
                paths[kind].add(report["path"])
    print(f"== nat: {rounds} rounds, two peer processes behind NATs in network namespaces; load {load()}")
    for kind, target in (("ordinary", 2000), ("symmetric", 5000)):
        print(f"{kind:9} NATs: path {'/'.join(sorted(paths[kind]))}, open median {statistics.median(times[kind]):.0f} ms, "
              f"max {max(times[kind]):.0f} ms (target <= {target} ms)")


# ---- part 4: install ----------------------------------------------------------------------------------

def site_bytes(venv: Path) -> int:
    """Bytes under the venv's site-packages."""
    (site,) = venv.glob("lib/python*/site-packages")
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file() and not p.is_symlink())


def part_install() -> None:
    """Time and bytes of the node's other dependencies, then of aiortc added to them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    ours = [d for d in project["dependencies"] if d.split(">")[0].split("<")[0].strip() == "aiortc"]
    others = [d for d in project["dependencies"] if d not in ours]
    with tempfile.TemporaryDirectory(prefix="open4wd-install-bench-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        empty = site_bytes(venv)
        started = time.perf_counter()
        subprocess.run([*pip, *others], check=True)
        others_s, others_bytes = time.perf_counter() - started, site_bytes(venv) - empty
        started = time.perf_counter()
        subprocess.run([*pip, *ours], check=True)
        ours_s, ours_bytes = time.perf_counter() - started, site_bytes(venv) - empty - others_bytes
        shutil.rmtree(venv)
    print(f"== install: pip from this machine's mirrors into a fresh venv; load {load()}")
    print(f"the node's other dependencies: {others_s:.1f} s, {others_bytes / 1e6:.0f} MB")
    print(f"aiortc added:                  {ours_s:.1f} s, {ours_bytes / 1e6:.0f} MB "
          f"({ours_s / others_s:.2f}x the time, {ours_bytes / others_bytes:.2f}x the bytes)")


def main() -> None:
    """Parse the options and run the parts asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("bridge", "links", "nat", "install"), action="append")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=1_000)
    parser.add_argument("--against", type=Path, help="links: also measure this source tree (another checkout of "
                        "the node), alternating with this one")
    parser.add_argument("--one-bridge", choices=tuple(BRIDGES), help=argparse.SUPPRESS)
    parser.add_argument("--one-links", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_bridge:
        print(json.dumps(BRIDGES[args.one_bridge](args.samples)))
        return
    if args.one_links:
        print(json.dumps(links_round(args.samples)))
        return
    parts = args.part or ["bridge", "links", "nat", "install"]
    if "bridge" in parts:
        part_bridge(args.rounds, args.samples)
    if "links" in parts:
        part_links(args.rounds, args.samples, args.against)
    if "nat" in parts:
        part_nat(args.rounds)
    if "install" in parts:
        part_install()


if __name__ == "__main__":
    main()
