"""Spectators: what a source pays per spectator, how late a viewer shows a frame, and whether 20 spectators
change the players' lag (docs/spectate.md, "Performance").

    python benchmarks/spectate_bench.py cpu [--frames 600]          # source CPU per spectator, wall clock
    python benchmarks/spectate_bench.py watch [--spectators 20] [--real]
    python benchmarks/spectate_bench.py live                          # racers as processes, wall clock

``cpu``: this process is one racer's spectator side only (listener, ``SpectatorHub``, ``SpectateSource``);
K spectators are real links from a helper process that reads and discards the stream. The source streams
``--frames`` frames at 60 Hz (three racers' signed inputs per frame, a vote and a checkpoint every 120),
and the process CPU time it took with K = 0, 1 and 20 spectators gives the cost of one spectator, in per
cent of a 16.7 ms frame.

``watch``: 3 racers and N spectators, whole nodes in one trio run over loopback (the test helpers). It
prints the racers' worst pump lag with no spectator and with N, and the delay from a frame being
confirmed at a racer (the earliest one) to a spectator showing it (median, p99). By default on the
autojump clock of the tests (protocol time: the jitter buffer and the stream's own delay, the same on any
machine); ``--real`` runs on the wall clock (one process for every node: the figures include the GIL
and this machine's load). Figures are printed, never asserted; print ``uptime`` beside them.

``live``: the 3 racers are real ``host``/``join`` processes; this process is one spectator (``MatchViewer``)
and prints, on the wall clock, the delay from a frame's inputs arriving from the source to the viewer
showing it (median, p99: the jitter buffer and the view pump; loopback transit adds well under a
millisecond), and the racers' worst lag as they report it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio
import trio.testing

from open4wd_node.net.listener import NodeListener
from open4wd_node.race.spectators import SpectatorHub
from open4wd_node.runtime.blocking import blocking_work_inline
from open4wd_node.runtime.context import NodeContext
from open4wd_node.spectate.watcher import MatchViewer
from protocol.identity.keys import Identity
from protocol.spectate.messages import FrameInput, RosterEntry, SpectateEndReason
from protocol.spectate.source import SpectateSource
from tests.open4wd_node.race.nodes import short_track
from tests.open4wd_node.spectate.nodes import watch_room

MATCH = "ab" * 32
RACERS = [Identity(bytes([i + 1]) * 32).peer_id for i in range(3)]
HELPER = """
import sys, trio
from open4wd_node.net.transport import dial
from open4wd_node.race.spectators import VIEWER_LIMITS
from open4wd_node.spectate.watcher import SOURCE_INGRESS
from protocol.identity.keys import Identity
from protocol.spectate.messages import SPECTATE_LINK, ModeSelect

async def drain(link):
    link.repurpose(SPECTATE_LINK, VIEWER_LIMITS, frozenset(), SOURCE_INGRESS)
    async for _ in link:
        pass

async def main(port, k):
    links = []
    for j in range(k):
        link = await dial("127.0.0.1", port, Identity(bytes([100 + j]) * 32), limits=VIEWER_LIMITS)
        await link.send(ModeSelect("replay", sys.argv[3], 1))
        links.append(link)
    print("ready", flush=True)
    async with trio.open_nursery() as nursery:
        for link in links:
            nursery.start_soon(drain, link)

trio.run(main, int(sys.argv[1]), int(sys.argv[2]))
"""


async def stream(k: int, frames: int) -> float:
    """Source CPU seconds for ``frames`` frames at 60 Hz to ``k`` reading spectators."""
    async with trio.open_nursery() as nursery:
        listener = NodeListener(Identity(b"\x01" * 32))
        address = await nursery.start(listener.run, "127.0.0.1", 0)
        spectators = [Identity(bytes([100 + j]) * 32).peer_id for j in range(k)]
        source = SpectateSource(MATCH, spectators, capacity=max(1, k))
        hub = SpectatorHub(source, listener)
        await nursery.start(hub.run)
        source.round_started(0, "builtin:track-02", [RosterEntry(p, i, "00" * 32) for i, p in enumerate(RACERS)])
        helper = subprocess.Popen([sys.executable, "-c", HELPER, str(address.port), str(k), MATCH],
                                  stdout=subprocess.PIPE, text=True)
        if k:
            await trio.to_thread.run_sync(helper.stdout.readline)
            while source.load < k:
                await trio.sleep(0.05)
        state = os.urandom(6000)  # about a sim_core state of 3 cars
        signature = os.urandom(64)
        start_cpu, start = time.process_time(), trio.current_time()
        for frame in range(frames):
            if frame % 120 == 1:
                hub.deliver(source.checkpoint(frame, state))
            inputs = [FrameInput(p, [["boost", False]] if frame % 7 == 0 else [], signature) for p in RACERS]
            hub.deliver(source.confirmed(frame, inputs))
            if frame % 120 == 8 and frame > 8:
                for p in RACERS:
                    source.ballot(p, frame - 8, b"\x11" * 32, signature)
                hub.deliver(source.vote_decided(frame - 8, {p: b"\x11" * 32 for p in RACERS}))
            await trio.sleep_until(start + (frame + 1) / 60)
        hub.deliver(source.end(SpectateEndReason.MATCH_END))
        await hub.flush(5)
        cpu = time.process_time() - start_cpu
        dropped = dict(hub.dropped)
        nursery.cancel_scope.cancel()
    helper.kill()
    helper.wait()
    if dropped:
        print(f"  (spectators dropped: {dropped})")
    return cpu


def cpu(frames: int) -> None:
    base = trio.run(stream, 0, frames)
    print(f"source CPU for {frames} frames at 60 Hz with no spectator: {base:.2f} s")
    for k in (1, 20):
        used = trio.run(stream, k, frames)
        per = (used - base) / k / frames
        print(f"  {k:2d} spectators: {used:.2f} s; per spectator and frame {per * 1e3:.3f} ms "
              f"= {per / (1 / 60) * 100:.2f} % of a 16.7 ms frame")


async def watched(spectators: int, tmp: Path, now) -> tuple[list[int], list[float]]:
    confirmed: dict[int, float] = {}
    shown: list[float] = []
    original_confirmed, original_frame = SpectateSource.confirmed, MatchViewer._frame

    def confirm(self, frame, inputs):  # the earliest racer to confirm each frame
        confirmed.setdefault(frame, now())
        return original_confirmed(self, frame, inputs)

    def show(self, action):
        if action.frame in confirmed:
            shown.append(now() - confirmed[action.frame])
        return original_frame(self, action)

    SpectateSource.confirmed, MatchViewer._frame = confirm, show  # type: ignore[method-assign]
    try:
        room = await watch_room(tmp, 3, spectators, track_bytes=short_track(40.0), limit_s=600)
    finally:
        SpectateSource.confirmed, MatchViewer._frame = original_confirmed, original_frame  # type: ignore[method-assign]
    lags = [r.of("result")[0]["max_lag"] for r in room.racers]
    outcomes = sorted({s.of("result")[0]["outcome"] for s in room.spectators}) if spectators else []
    print(f"  {spectators:2d} spectators: racers' max lag {lags} frames; spectators' outcomes {outcomes}")
    return lags, shown


def watch(spectators: int, real: bool) -> None:
    print("clock:", "wall (one process for every node)" if real else "autojump (protocol time)")
    for n in (0, spectators):
        with tempfile.TemporaryDirectory() as tmp:
            if real:
                _, delays = trio.run(watched, n, Path(tmp), time.perf_counter)
            else:
                with blocking_work_inline():
                    clock = trio.testing.MockClock(autojump_threshold=0)
                    _, delays = trio.run(watched, n, Path(tmp), trio.current_time, clock=clock)
        if delays:
            ms = sorted(d * 1000 for d in delays)
            print(f"     confirmed -> shown: median {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.1f} ms "
                  f"over {len(ms)} frames shown")


def live() -> None:
    import json

    from open4wd_node.assets.cars import CarChoice
    from open4wd_node.assets.room_assets import NodeRoomAssets
    from open4wd_node.assets.store import AssetStore
    from open4wd_node.net.reach import contact_dialler, with_listener
    from open4wd_node.room.session import JoinOptions, join_room
    from open4wd_node.runtime.config import DEFAULTS
    from open4wd_node.events.sink import EventSink
    from protocol.room.invitation import Invitation
    from protocol.spectate.viewer import SpectateViewer

    track = short_track(40.0)
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for name in ("host", "p1", "p2", "viewer"):
            ref = AssetStore.in_data_dir(tmp / name).put(track)
        cli = [sys.executable, "-m", "open4wd_node.cli.main"]
        listen = ["--listen", "127.0.0.1:0", "--json"]
        procs = {"host": subprocess.Popen([*cli, "--data-dir", str(tmp / "host"), "host", "--track", ref, "--laps", "1",
                                           "--min-players", "3", "--max-players", "3", "--auto-ready", *listen],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)}
        invites = next(e for e in map(json.loads, procs["host"].stdout) if e["event"] == "room-created")["invites"]
        arrived: dict[int, float] = {}
        delays: list[float] = []
        original_inputs, original_frame = SpectateViewer._on_inputs, MatchViewer._frame

        def on_inputs(self, msg):
            arrived.setdefault(msg.frame, time.perf_counter())
            return original_inputs(self, msg)

        def show(self, action):
            if action.frame in arrived:
                delays.append(time.perf_counter() - arrived[action.frame])
            return original_frame(self, action)

        SpectateViewer._on_inputs, MatchViewer._frame = on_inputs, show  # type: ignore[method-assign]
        identity = Identity(b"\x64" * 32)
        context = NodeContext(tmp / "viewer", DEFAULTS)

        async def body(lis):
            events = EventSink(as_json=True, stream=open(os.devnull, "w"))  # noqa: SIM115
            options = JoinOptions(spectate=True)
            async with trio.open_nursery() as nursery:
                async def players() -> None:
                    while not joined:
                        await trio.sleep(0.05)
                    for name in ("p1", "p2"):
                        procs[name] = subprocess.Popen([*cli, "--data-dir", str(tmp / name), "join", invites["participant"],
                                                        "--auto-ready", *listen], stdout=subprocess.PIPE,
                                                       stderr=subprocess.DEVNULL, text=True)

                joined: list[bool] = []
                original_emit = events.emit

                def emit(event):
                    if event.EVENT == "joined":
                        joined.append(True)
                    original_emit(event)

                events.emit = emit  # type: ignore[method-assign]
                nursery.start_soon(players)
                outcome = await join_room(context, identity, Invitation.parse(invites["spectator"]), options,
                                          CarChoice.parse("speed"), events, lis)
            assets = NodeRoomAssets(AssetStore.in_data_dir(tmp / "viewer"), DEFAULTS)
            return await MatchViewer(identity, events, outcome.started, outcome.addresses, assets, tmp / "viewer" / "races",
                                     dial=contact_dialler(lis)).run()

        report = trio.run(with_listener, identity, "127.0.0.1", 0, body)
        lags = {}
        for name, proc in procs.items():
            out, _ = proc.communicate(timeout=600)
            result = [e for e in map(json.loads, out.splitlines()) if e["event"] == "result"]
            lags[name] = result[0]["max_lag"] if result else None
    ms = sorted(d * 1000 for d in delays)
    print(f"spectator: {report.outcome}, {report.agreed} hashes matched, {report.mismatches} did not")
    print(f"inputs arrived -> shown: median {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.1f} ms "
          f"over {len(ms)} frames; racers' worst lag {lags} frames")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    c = sub.add_parser("cpu")
    c.add_argument("--frames", type=int, default=600)
    w = sub.add_parser("watch")
    w.add_argument("--spectators", type=int, default=20)
    w.add_argument("--real", action="store_true")
    sub.add_parser("live")
    args = parser.parse_args()
    if args.part == "cpu":
        cpu(args.frames)
    elif args.part == "live":
        live()
    else:
        watch(args.spectators, args.real)


if __name__ == "__main__":
    main()
