"""Race figures: input delivery on loopback, an 8-frame rollback inside a live session, Ed25519 through
OpenSSL and libsodium, the floor (each piece of work a frame cannot avoid with 7 peers, measured alone, and
their sum per node-frame), and, with --processes, N real node processes racing at 60 Hz: their worst lag in
frames (wall clock) and their CPU per node-frame split by part (CPU time), as a ratio to the floor measured
just before in the same run (the least of three measurements: a single one moves by half on a shared
machine), beside the CPU a tick costs a process that does nothing else (``idle_ticks``,
measured beside them).

    python benchmarks/race_bench.py [--samples 2000] [--processes 2,4,8] [--frames-per-tick 1,2,3]
        [--transport tcp,webrtc-direct] [--rounds N [--pause SECONDS]]

``--transport`` races every configuration once over each transport of the demo (``tcp``: TCP + Noise;
``webrtc-direct``: WebRTC links through a local ``open4wd-node signal``, host candidates on 127.0.0.1;
``webrtc``: the same relayed by a local coturn), one after the other, and prints each WebRTC race's CPU per
node-frame as a ratio to the TCP race just before it.

Every figure is printed with the machine's load average at the start. CPU per node-frame is CPU time,
so a loaded machine does not add its waiting to it, but it does inflate it (cold caches: docs/node.md,
"The floor"), and the floor with it: the ratio of the two, measured minutes apart at most, is the figure to
compare between builds and machines. The worst lag is meaningful only on a quiet machine. The races run in
a fresh temporary data directory, removed afterwards. The script uses only what every build of the node
has, so it measures an older install as well (run it with that install's Python, from outside a checkout).
To see where one node's time goes, call by call: benchmarks/race_profile.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import trio

from open4wd_node.race.mesh import RACE_CONTROL_TYPES, RACE_LIMITS
from open4wd_node.race.world import WorldAdapter, chip_skills
from open4wd_node.net.transport import dial, serve
from protocol.identity.keys import Identity
from protocol.race.session import VERIFY_LAG_FRAMES, RaceSession
from protocol.race.keys import RaceKeyBook, announce, verify_race_signature
from protocol.race.messages import RACE_LINK, RaceInputs
from protocol.race.spans import build_span, span_entries
from protocol.race.setup import RaceSetup
from protocol.race.signing import NO_PREVIOUS_INPUT, SKILL_ORDER, canonical_events, input_digest
from sim_core import World

MATCH = "cd" * 32


async def input_delivery(samples: int) -> list[float]:
    """One-way time of a signed input, sign → send → receive → decode → verify, from echo round trips."""
    a, b = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
    race_id = f"{MATCH}#0"
    key_a = a.race_key(race_id)
    book = RaceKeyBook([a.peer_id, b.peer_id])
    book.add(a.peer_id, announce(a, race_id))
    times: list[float] = []

    async def echo(link) -> None:
        link.repurpose(RACE_LINK, RACE_LIMITS, RACE_CONTROL_TYPES)
        async for msg in link:
            (span,) = msg.spans
            ((frame, events, signature),) = span_entries(span, frozenset(SKILL_ORDER))
            assert verify_race_signature(book.key(race_id, a.peer_id),
                                         input_digest(race_id, frame, events, span.prev), signature)
            await link.send(msg)

    async with trio.open_nursery() as nursery:
        address = await nursery.start(serve, echo, b, "127.0.0.1", 0)
        link = await dial(address.host, address.port, a, expected_peer=b.peer_id, limits=RACE_LIMITS,
                          expensive=RACE_CONTROL_TYPES)
        link.repurpose(RACE_LINK, RACE_LIMITS, RACE_CONTROL_TYPES)
        for frame in range(samples):
            start = time.perf_counter()
            events = (("boost", False),)
            signature = key_a.sign(input_digest(race_id, frame, events, NO_PREVIOUS_INPUT))
            await link.send(RaceInputs(frame - 1, [build_span("", frame, NO_PREVIOUS_INPUT, [events], [signature])], []))
            await link.receive()
            times.append((time.perf_counter() - start) / 2 * 1e3)
            await trio.sleep(1 / 90)  # under the input bucket's 90 per second
        nursery.cancel_scope.cancel()
    return times


def rollback_in_session(repeats: int, clock: Callable[[], float] = time.perf_counter,
                        world: World | None = None) -> list[float]:
    """An 8-car session that learns, 8 frames late, that one peer's input differed from the prediction
    (µs per ``advance_frame`` that rolled back 8 frames, timed by ``clock`` in seconds), racing ``world``
    (default: the demo round, seed 3)."""
    ids = [Identity(bytes([i + 1]) * 32) for i in range(8)]
    world = world or World.demo(8, seed=3)
    peers = sorted(i.peer_id for i in ids)
    slots = {p: n for n, p in enumerate(peers)}
    skills = {p: chip_skills(world, slots[p]) for p in peers}
    setup = RaceSetup(MATCH, 0, slots, skills, {p: "00" * 32 for p in peers}, "aa" * 32, "bb" * 32)
    me = next(i for i in ids if i.peer_id == peers[0])
    late = next(i for i in ids if i.peer_id == peers[1])
    book = RaceKeyBook(peers)
    session = RaceSession(setup, me, WorldAdapter(world), book)
    race_id = session.race_id
    for ident in ids:
        if ident is not me:
            session.receive(ident.peer_id, announce(ident, race_id), 0)
    keys = {i.peer_id: i.race_key(race_id) for i in ids}
    chains = {peer: NO_PREVIOUS_INPUT for peer in peers}  # each peer's newest input digest: its next one's prev
    press = [[next(s for s in ("boost", "brake", "jump", "slam") if s in skills[late.peer_id]), False]]

    def send(peer: str, frame: int, events) -> None:
        ev = tuple(tuple(e) for e in events)
        digest = input_digest(race_id, frame, ev, chains[peer])
        span = build_span("", frame, chains[peer], [canonical_events(ev)], [keys[peer].sign(digest)])
        chains[peer] = digest
        session.receive(peer, RaceInputs(-1, [span], []), 0)

    times = []
    frame = 0
    while len(times) < repeats:
        for peer in peers[2:]:
            send(peer, frame, [])
        if frame >= 8:  # the late peer is 8 frames behind; now and then its input was not the prediction
            send(late.peer_id, frame - 8, press if (frame - 8) % 16 == 1 else [])
        session.add_local_input([], 0)
        start = clock()
        report = session.advance_frame(0)
        elapsed = clock() - start
        assert report.stepped, report.waiting
        if report.rollback_frames >= 8:
            times.append(elapsed * 1e6)
        frame += 1
    return times


def ed25519_costs(repeats: int) -> dict[str, float]:
    """CPU µs per Ed25519 verify and sign of a 32-byte digest: OpenSSL (``cryptography``) and libsodium."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from protocol.identity.ed25519 import PrivateKey, PublicKey

    message = bytes(range(32))
    openssl = Ed25519PrivateKey.from_private_bytes(bytes([5]) * 32)
    sodium = PrivateKey(bytes([5]) * 32)
    signature = sodium.sign(message)
    openssl_public, sodium_public = openssl.public_key(), PublicKey(sodium.public_key)

    def cost(call) -> float:
        start = time.thread_time_ns()
        for _ in range(repeats):
            call()
        return (time.thread_time_ns() - start) / repeats / 1000

    return {"openssl verify": cost(lambda: openssl_public.verify(signature, message)),
            "libsodium verify": cost(lambda: sodium_public.verify(message, signature)),
            "openssl sign": cost(lambda: openssl.sign(message)), "libsodium sign": cost(lambda: sodium.sign(message))}


def floor_costs(repeats: int) -> dict[str, float]:
    """CPU µs of each piece of work a frame cannot avoid with 7 peers, measured alone (thread CPU time):
    the pieces of the floor under CPU per node-frame (docs/node.md, "The floor")."""
    import socket

    from protocol.encoding.wire import decode_message, encode_message
    from protocol.identity.ed25519 import PrivateKey, PublicKey
    from protocol.link.handshake import DIALER, LISTENER, Handshake

    race_id = f"{MATCH}#0"
    me = Identity(bytes([9]) * 32)
    key = me.race_key(race_id)
    public = PublicKey(announce(me, race_id).publicKey)
    events = (("boost", False),)
    digest = input_digest(race_id, 100, events, NO_PREVIOUS_INPUT)
    signature = key.sign(digest)
    one = RaceInputs(99, [build_span("", 100, NO_PREVIOUS_INPUT, [events], [signature])], [])
    five = RaceInputs(99, [build_span("", 100, NO_PREVIOUS_INPUT, [events] * 5, [signature] * 5)], [])
    body_one, body_five = encode_message(one), encode_message(five)
    dialer, listener = Handshake(me, DIALER, 0), Handshake(Identity(bytes([8]) * 32), LISTENER, 0)
    listener.start()
    (first,) = dialer.start()
    (second,) = listener.receive(first, 0)
    (third,) = dialer.receive(second, 0)
    listener.receive(third, 0)
    seal, opener = dialer.result.send, listener.result.receive
    frames = [seal.seal(body_one) for _ in range(repeats)]
    server = socket.create_server(("127.0.0.1", 0))
    left = socket.create_connection(server.getsockname())
    right, _ = server.accept()
    server.close()
    for end in (left, right):
        end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as trio's TCP streams
    right.setblocking(False)
    world = World.demo(8, seed=3)
    sodium = PrivateKey(bytes([5]) * 32)

    def cost(call, count: int = repeats) -> float:
        start = time.thread_time_ns()
        for _ in range(count):
            call()
        return (time.thread_time_ns() - start) / count / 1000

    sealed = iter(frames)
    wire = seal.seal(body_one)

    def write_and_read() -> None:
        left.send(wire)
        right.recv(65536)

    figures = {
        "verify": cost(lambda: public.verify(digest, signature)),
        "input digest": cost(lambda: input_digest(race_id, 100, events, digest)),
        "sign": cost(lambda: sodium.sign(digest)),
        "decode race-inputs (1 input)": cost(lambda: decode_message(body_one)),
        "decode race-inputs (5 inputs)": cost(lambda: decode_message(body_five)),
        "encode race-inputs (1 input)": cost(lambda: encode_message(one)),
        "AEAD seal": cost(lambda: seal.seal(body_one)),
        "AEAD open": cost(lambda: opener.open(next(sealed))),
        "loopback TCP write + read": cost(write_and_read),
        "simulation step (8 cars) + save": cost(lambda: (world.save_state(), world.step()), max(1, repeats // 10)),
    }
    left.close()
    right.close()
    return figures


def floor_us(f: dict[str, float], peers: int = 7) -> float:
    """The least CPU a node-frame can cost with ``peers`` peers, from the pieces measured alone: each peer's
    input's digest, one verification per run of ``VERIFY_LAG_FRAMES + 1`` of its inputs (docs/race.md,
    "Chained inputs"), and its message read, opened and decoded; this node's input signed and its message
    encoded, sealed and written to each peer; one simulation step."""
    per_peer = (f["verify"] / (VERIFY_LAG_FRAMES + 1) + f["input digest"] + f["decode race-inputs (1 input)"]
                + f["encode race-inputs (1 input)"]
                + f["AEAD seal"] + f["AEAD open"] + f["loopback TCP write + read"])
    return peers * per_peer + f["sign"] + f["input digest"] + f["simulation step (8 cars) + save"]


async def idle_ticks(seconds: float | None) -> float:
    """CPU µs per tick of a trio loop that only sleeps to the next 1/60 s (``trio.sleep_until``, as a node's
    pump does): what a node's frame costs before any work, on this machine under its current load (the
    wake-up of a process that slept ~15 ms, and its caches, which the other processes replaced meanwhile:
    docs/node.md, "The floor"). Runs for ``seconds``, or (None) until its standard
    input closes; the median of its one-second windows, so that the demo's set-up, when the racers are not
    racing yet, weighs little."""
    windows: list[float] = []
    start = trio.current_time()
    tick = 0
    closed = trio.Event()

    async def watch_stdin() -> None:
        await trio.to_thread.run_sync(sys.stdin.buffer.read)
        closed.set()

    async with trio.open_nursery() as nursery:
        if seconds is None:
            nursery.start_soon(watch_stdin)
        while not windows or not (closed.is_set() or (seconds is not None and tick >= seconds * 60)):
            cpu = time.thread_time_ns()
            for _ in range(60):
                tick += 1
                await trio.sleep_until(start + tick / 60)
            windows.append((time.thread_time_ns() - cpu) / 60 / 1000)
        nursery.cancel_scope.cancel()
    return statistics.median(windows)


def after_wake(samples: int = 120) -> tuple[float, float]:
    """CPU µs of the same pure-Python work (a walk over 4,000 ints) run right after a sleep to the next
    1/60 s and then once more at once (medians): how much slower a frame's work runs on this machine
    because the process slept before it."""
    values = list(range(200_000))

    def work() -> int:
        total = 0
        for index in range(0, 200_000, 50):
            total += values[index]
        return total

    first: list[int] = []
    again: list[int] = []
    start = time.monotonic()
    for tick in range(1, samples + 1):
        time.sleep(max(0.0, start + tick / 60 - time.monotonic()))
        t0 = time.thread_time_ns()
        work()
        t1 = time.thread_time_ns()
        work()
        first.append(t1 - t0)
        again.append(time.thread_time_ns() - t1)
    return statistics.median(first) / 1000, statistics.median(again) / 1000


def processes(count: int, frames_per_tick: int = 1, transport: str = "tcp") -> dict:
    """Race ``count`` node processes (the demo) linked over ``transport`` in a fresh data directory, their
    pumps stepping ``frames_per_tick`` frames per wake-up; ``idle_tick_us``: ``idle_ticks`` measured beside them."""
    over = [] if transport == "tcp" else ["--transport", transport]  # an older install knows no --transport
    probe = subprocess.Popen([sys.executable, __file__, "--idle-probe"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    before = _host_ticks()
    try:
        with tempfile.TemporaryDirectory(prefix="open4wd-race-bench-") as data_dir:
            out = subprocess.run([sys.executable, "-P", "-m", "open4wd_node.cli.main", "--data-dir", data_dir,
                                  "demo", "--nodes", str(count), "--frames-per-tick", str(frames_per_tick), *over,
                                  "--json"],
                                 capture_output=True, text=True, timeout=900)
    finally:
        idle, _ = probe.communicate("", timeout=60)
    if out.returncode != 0:
        raise SystemExit(f"the demo of {count} nodes over {transport} failed ({out.returncode}): {out.stderr[-2000:]}")
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "idle_tick_us": float(idle),
            "host": _host_shares(before, _host_ticks())}


HOST_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _host_ticks() -> list[int] | None:
    """The whole machine's CPU time by kind so far (Linux's /proc/stat, in clock ticks), or None elsewhere."""
    try:
        with open("/proc/stat") as stat:
            return [int(v) for v in stat.readline().split()[1:1 + len(HOST_FIELDS)]]
    except (OSError, ValueError):
        return None


def _host_shares(before: list[int] | None, after: list[int] | None) -> str:
    """How the machine's CPUs spent a race: busy, idle and stolen by the hypervisor (a virtual machine whose
    host runs other guests on its cores may lose time there; the node's CPU time does not count it)."""
    if before is None or after is None or len(before) != len(after) or sum(after) <= sum(before):
        return "unknown"
    spent = dict(zip(HOST_FIELDS, (b - a for a, b in zip(before, after, strict=True)), strict=False))
    total = sum(spent.values())
    busy = total - spent["idle"] - spent["iowait"] - spent["steal"]
    return (f"busy {100 * busy / total:.1f} %, idle {100 * (spent['idle'] + spent['iowait']) / total:.1f} %, "
            f"stolen {100 * spent['steal'] / total:.2f} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--processes", default="", help="also run N node processes (the demo) for each N of a "
                        "comma-separated list, e.g. 2,4,8")
    parser.add_argument("--frames-per-tick", default="1", help="race each N of --processes once for each of these "
                        "frames per pump tick, a comma-separated list of 1..4 (docs/node.md \"Frames per tick\")")
    parser.add_argument("--transport", default="tcp", help="race each configuration over each of these demo "
                        "transports in turn, a comma-separated list of tcp, webrtc-direct, webrtc")
    parser.add_argument("--rounds", type=int, default=1, help="race every configuration this many times, "
                        "--pause seconds apart, then summarise each (a shared machine's figure moves by half again "
                        "within minutes)")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between two rounds (default 0)")
    parser.add_argument("--idle-probe", action="store_true", help=argparse.SUPPRESS)  # processes() runs this
    args = parser.parse_args()
    if args.rounds < 1 or not 0 <= args.pause <= 3600:
        parser.error("--rounds is at least 1 and --pause 0..3600 seconds")
    if args.idle_probe:
        print(f"{trio.run(idle_ticks, None):.1f}")
        return
    counts = [int(n) for n in args.processes.split(",") if n.strip()]
    ticks = [int(n) for n in args.frames_per_tick.split(",") if n.strip()]
    transports = [t.strip() for t in args.transport.split(",") if t.strip()]
    if not transports or not set(transports) <= {"tcp", "webrtc-direct", "webrtc"}:
        parser.error("--transport is a comma-separated list of tcp, webrtc-direct, webrtc")
    print(f"load average at start {_load()} on {os.cpu_count()} cores")
    print(f"an idle 60 Hz tick, alone                      {trio.run(idle_ticks, 3.0):.0f} µs of CPU (a trio loop "
          "that only waits for its next tick as a node's pump does: what every frame costs a node before any work)")
    woken, warm = after_wake()
    print(f"the same work right after a 1/60 s sleep       {woken:.0f} µs, at once again {warm:.0f} µs "
          f"({woken / warm:.2f}×: a frame's work runs slower because its process slept before it)")
    delivery = trio.run(input_delivery, args.samples)
    print(f"input delivery (loopback, signed + verified)  median {statistics.median(delivery):.3f} ms, "
          f"p99 {sorted(delivery)[int(len(delivery) * 0.99)]:.3f} ms over {len(delivery)} inputs")
    rollback = rollback_in_session(100)
    print(f"8-frame rollback in a live 8-car session      median {statistics.median(rollback) / 1000:.3f} ms "
          f"(max {max(rollback) / 1000:.3f} ms over {len(rollback)})")
    crypto = ed25519_costs(2000)
    print("Ed25519 CPU per call                          " + ", ".join(f"{k} {v:.1f} µs" for k, v in crypto.items()))
    floor = floor_costs(2000)
    print("the floor's pieces, CPU per call              " + ", ".join(f"{k} {v:.1f} µs" for k, v in floor.items()))
    print(f"floor per node-frame with 7 peers             {floor_us(floor):.0f} µs (7 × every per-peer piece, "
          "+ sign, + one step: nothing else, no scheduling, no session bookkeeping, no redundant copies)")
    configurations = [(c, t, over) for c in counts for t in ticks for over in transports]
    rows = []
    tcp_cpu: dict[tuple[int, int], float] = {}  # the last TCP race's CPU per node-frame of each configuration
    for round_index in range(args.rounds):
        if round_index:
            time.sleep(args.pause)
        for count, per_tick, transport in configurations:
            load = _load()
            started = time.strftime("%H:%M:%S UTC", time.gmtime())
            floor_now = min(floor_us(floor_costs(1000)) for _ in range(3))  # just before the race, least of three
            summary = processes(count, per_tick, transport)
            cpu = summary.get("cpu") or {}
            ratio = cpu.get("per_frame_us", 0) / floor_now
            if transport == "tcp":
                tcp_cpu[count, per_tick] = cpu.get("per_frame_us", 0)
            against_tcp = (f"; {cpu.get('per_frame_us', 0) / tcp_cpu[count, per_tick]:.2f}× the TCP race's CPU per "
                           "node-frame just before" if transport != "tcp" and tcp_cpu.get((count, per_tick)) else "")
            print(f"{count} node processes at 60 Hz over {transport}, {per_tick} frame(s) per tick (load average at "
                  f"start {load}, {started}): worst lag {summary['max_lag']} frames, "
                  f"{summary['finished']} finished, {summary['agreed_hashes']} agreed hashes, "
                  f"{summary['disagreements']} disagreements, {summary['elapsed_s']} s; CPU per node-frame "
                  f"{ratio:.2f}× the floor measured just before ({cpu.get('per_frame_us', 0):.0f} µs against "
                  f"{floor_now:.0f} µs; worst node {cpu.get('worst_per_frame_us', 0) / floor_now:.2f}×); an idle 60 Hz "
                  f"tick beside them {summary['idle_tick_us']:.0f} µs; the machine's CPUs meanwhile {summary['host']}"
                  f"{against_tcp}")
            rows.append((count, per_tick, transport, load, summary["max_lag"], cpu, summary["idle_tick_us"], floor_now))
    if rows:
        print(_table(rows))
    if args.rounds > 1:
        for configuration in dict.fromkeys(configurations):
            print(_spread(*configuration, [(row_cpu.get("per_frame_us", 0) / floor_row, lag)
                                           for nodes, frames, over, _, lag, row_cpu, _, floor_row in rows
                                           if (nodes, frames, over) == configuration]))


MAX_LAG_FRAMES = 8  # what 8 node processes on 2 cores must keep to


def _spread(count: int, per_tick: int, transport: str, figures: list[tuple[float, int]]) -> str:
    """One configuration's CPU per node-frame over the rounds, as ratios to each round's floor: the least,
    median and most, and how many rounds kept the worst lag within ``MAX_LAG_FRAMES``."""
    ratios = [ratio for ratio, _ in figures]
    kept = sum(1 for _, lag in figures if lag <= MAX_LAG_FRAMES)
    return (f"{count} nodes over {transport}, {per_tick} frame(s) per tick, {len(figures)} rounds: CPU per node-frame least "
            f"{min(ratios):.2f}×, median {statistics.median(ratios):.2f}×, most {max(ratios):.2f}× the floor; "
            f"worst lag within {MAX_LAG_FRAMES} frames in {kept} of {len(figures)}")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _table(rows: list[tuple[int, int, str, str, int, dict, float, float]]) -> str:
    """The CPU split per node-frame as a markdown table: the whole as a ratio to the floor measured just
    before the race, the parts in µs per frame (mean of the nodes), with an idle tick's CPU measured beside."""
    parts = list(next((cpu["parts_us"] for *_, cpu, _, _ in rows if cpu), {}))
    lines = ["| nodes | frames per tick | transport | load at start | worst lag (frames) | CPU per node-frame / floor "
             "| floor (µs) | " + " | ".join(f"{p} (µs)" for p in parts) + " | idle tick beside (µs) |",
             "|---" * (8 + len(parts)) + "|"]
    for count, per_tick, transport, load, lag, cpu, idle, floor in rows:
        split = " | ".join(f"{cpu['parts_us'][p]:.0f}" for p in parts) if cpu else " | ".join("-" for _ in parts)
        lines.append(f"| {count} | {per_tick} | {transport} | {load} | {lag} | "
                     f"{cpu.get('per_frame_us', 0) / floor:.2f}× | {floor:.0f} "
                     f"| {split} | {idle:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
