"""What the live view and its track picture cost, against the race's own CPU measured in the same run.

    python benchmarks/live_view_bench.py [--draws 400] [--cars 8] [--race-nodes 4 | --race-nodes 0]

In one process: one draw of an 8-car race (read the round, build the table, render it to terminal bytes)
with the track picture beside the table and without it (in turn, draw by draw), the picture alone, the plain lines, and one tick
of the live page (read the round, encode the frame event for every browser). All as CPU time of this
thread. Then, unless ``--race-nodes 0``, a real demo race of that many node processes, whose ``cpu``
summary gives the race's own CPU per node-frame in the same run. The ratios printed:

- picture: what the picture adds to a node's process per second (4 draws) over what the node's race
  costs it per second (60 frames at its CPU per node-frame);
- live page: 10 ticks a second over the same, while a browser watches (nothing without one).

The view draws at most 4 times a second (``live_console.REFRESH_S``) from its own task; the frame pump
pays nothing per frame for it. A benchmark: it prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from rich.console import Console

from open4wd_node.race.pump import FramePump
from open4wd_node.race.world import WorldAdapter
from open4wd_node.view.live_console import LiveConsole, REFRESH_S
from open4wd_node.view.live_render import race_table
from open4wd_node.view.live_web import RATE_HZ, LiveWeb
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.view.track_picture import TrackPicture
from open4wd_node.view.web_view import board_state
from protocol.identity.keys import Identity
from protocol.race.keys import RaceKeyBook
from protocol.race.session import RaceSession
from protocol.race.setup import RaceSetup, loadout_digest
from sim_core import World

FRAMES_PER_S = 60


def watched_round(cars: int) -> LiveConsole:
    ids = sorted((Identity(bytes([i + 1]) * 32) for i in range(cars)), key=lambda ident: ident.peer_id)
    peers = [i.peer_id for i in ids]
    world = World.demo(cars, seed=3)
    for _ in range(600):
        world.step({})
    setup = RaceSetup(match_id="ab" * 32, round_index=0, slots={p: k for k, p in enumerate(peers)},
                      skills={p: frozenset() for p in peers}, loadouts={p: loadout_digest({"car": p}) for p in peers},
                      grid_context_digest="cd" * 32, grid_seed="5e" * 32)
    session = RaceSession(setup, ids[0], WorldAdapter(world), RaceKeyBook(setup.roster))
    console = LiveConsole(ids[0].peer_id, io.StringIO(), interactive=True, width=120)
    console.watch_round(RoundWatch(0, 1, setup.slots, world, session, FramePump(lambda: False, lambda: 0), 0))
    return console


def cpu_ms(fn: Callable[[], object], count: int) -> float:
    """CPU time of this thread per call, in ms (what the call costs the process, not the machine's mood)."""
    fn()  # warm: the picture's track dots are worked out once per size
    start = time.thread_time()
    for _ in range(count):
        fn()
    return (time.thread_time() - start) * 1000 / count


def interleaved_cpu_ms(a: Callable[[], object], b: Callable[[], object], count: int) -> tuple[float, float]:
    """CPU time per call of ``a`` and of ``b``, called in turn, so that both meet the machine's same moods
    (their difference is what matters, and it is smaller than the host's swings between two runs)."""
    a(), b()
    spent = [0.0, 0.0]
    for _ in range(count):
        for k, fn in enumerate((a, b)):
            start = time.thread_time()
            fn()
            spent[k] += time.thread_time() - start
    return spent[0] * 1000 / count, spent[1] * 1000 / count


def race_cpu_us(nodes: int) -> tuple[float, int]:
    """A real demo race of ``nodes`` processes: its mean CPU per node-frame (µs) and its frames."""
    with tempfile.TemporaryDirectory(prefix="open4wd-live-view-bench-") as data:
        out = subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", data, "demo",
                              "--nodes", str(nodes), "--json"], capture_output=True, text=True, check=True)
    cpu = json.loads(out.stdout)["cpu"]
    return cpu["per_frame_us"], cpu["frames"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--cars", type=int, default=8)
    parser.add_argument("--race-nodes", type=int, default=4, help="nodes of the demo race measured beside (0: none)")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    console = watched_round(args.cars)
    board = console.board
    terminal = Console(file=io.StringIO(), width=120, force_terminal=True, color_system="truecolor")
    world = board.watch.world
    race = board.race()
    web = LiveWeb(lambda: board_state(board))

    read_ms = cpu_ms(board.race, args.draws)
    draw_ms, bare_ms = interleaved_cpu_ms(lambda: terminal.print(race_table(board.race())),
                                          lambda: terminal.print(race_table(dataclasses.replace(board.race(), picture=None))),
                                          args.draws)
    picture_ms = cpu_ms(lambda: terminal.print(TrackPicture(race.picture)), args.draws)
    plain_ms = cpu_ms(console.plain, args.draws)
    tick_ms = cpu_ms(lambda: web.encode(board_state(board)), args.draws)  # what one tick does
    step_ms = cpu_ms(lambda: world.step({}), 300)
    draws_per_s = 1 / REFRESH_S
    added_ms = draw_ms - bare_ms
    print(f"{args.cars} cars, {args.draws} draws each, CPU time of this thread")
    print(f"  read the round (standings, statuses, places):   {read_ms:.3f} ms")
    print(f"  draw with the track picture:                     {draw_ms:.3f} ms")
    print(f"  draw without it (the table alone):               {bare_ms:.3f} ms")
    print(f"  the picture alone:                               {picture_ms:.3f} ms")
    print(f"  plain lines (off a terminal: no picture):        {plain_ms:.3f} ms")
    print(f"  one live-page tick (read, encode the frame):     {tick_ms:.3f} ms")
    print(f"  one simulation step (for scale):                 {step_ms:.3f} ms")
    print(f"  view at {draws_per_s:.0f} draws/s: {draw_ms * draws_per_s / 10:.2f} % of one core, of which the picture "
          f"{added_ms * draws_per_s / 10:.2f} %")
    if args.race_nodes:
        per_frame_us, frames = race_cpu_us(args.race_nodes)
        race_ms_per_s = per_frame_us / 1000 * FRAMES_PER_S
        print(f"  the race beside ({args.race_nodes} node processes, {frames} frames): {per_frame_us:.0f} µs per "
              f"node-frame = {race_ms_per_s:.1f} ms of CPU per second per node")
        print(f"  picture / race: {added_ms * draws_per_s / race_ms_per_s:.4f} "
              f"(the whole view: {draw_ms * draws_per_s / race_ms_per_s:.4f})")
        print(f"  live page / race, while a browser watches: {tick_ms * RATE_HZ / race_ms_per_s:.4f}")
    print(f"  load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
