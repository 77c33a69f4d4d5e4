"""What the live view costs: one draw of an 8-car race (read the round, build the table, render it to
terminal bytes) against the 60 Hz frame budget, and the plain-lines form.

    python benchmarks/live_view_bench.py [--draws 400] [--cars 8]

The view draws at most 4 times a second (``live_console.REFRESH_S``), so its share of one core is about
4 × (read + render); the frame pump itself pays nothing per frame for the view. A benchmark: it prints
figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import time

from rich.console import Console

from open4wd_node.race.pump import FramePump
from open4wd_node.view.live_console import LiveConsole, REFRESH_S
from open4wd_node.view.round_watch import RoundWatch
from open4wd_node.view.live_render import race_table
from open4wd_node.race.world import WorldAdapter
from protocol.identity.keys import Identity
from protocol.race.session import RaceSession
from protocol.race.keys import RaceKeyBook
from protocol.race.setup import RaceSetup, loadout_digest
from sim_core import World


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
    console = LiveConsole(ids[0].peer_id, io.StringIO(), interactive=True, width=100)
    console.watch_round(RoundWatch(0, 1, setup.slots, world, session, FramePump(lambda: False, lambda: 0), 0))
    return console


def per_call_ms(fn, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - start) * 1000 / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--cars", type=int, default=8)
    args = parser.parse_args()
    console = watched_round(args.cars)
    board = console.board
    terminal = Console(file=io.StringIO(), width=100, force_terminal=True, color_system="truecolor")
    world = board.watch.world

    read_ms = per_call_ms(board.race, args.draws)
    draw_ms = per_call_ms(lambda: terminal.print(race_table(board.race())), args.draws)
    plain_ms = per_call_ms(console.plain, args.draws)
    step_ms = per_call_ms(lambda: world.step({}), 300)
    draws_per_s = 1 / REFRESH_S
    print(f"{args.cars} cars, {args.draws} draws each")
    print(f"  read the round (standings, statuses):      {read_ms:.3f} ms")
    print(f"  read + build + render to terminal bytes:   {draw_ms:.3f} ms per draw")
    print(f"  plain lines (off a terminal):              {plain_ms:.3f} ms")
    print(f"  one simulation step (for scale):           {step_ms:.3f} ms of the 16.667 ms frame budget")
    print(f"  view at {draws_per_s:.0f} draws/s: {draw_ms * draws_per_s / 10:.2f} % of one core")


if __name__ == "__main__":
    main()
