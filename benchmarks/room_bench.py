"""Room figures (issue "A newcomer's first hour", deliverable 3): how long a healthy room takes from the
first join to match-start, with whole nodes (host_room / join_room) in one process over real loopback
TCP on the real clock. Every member joins with auto-ready and the room needs all of them
(``--min-players`` = nodes), as in tests/open4wd_node/room/test_rooms_tcp.py. All nodes share one interpreter, so
the figures include every node's CPU work one after the other (separate machines would overlap it).

Figures, per room size, medians over the repetitions (seconds):

- host-ready → ready-set: the first ``ready`` the host reports → the host's ``ready-set``
  (the issue measured 2.98 s here: a dropped version request waited out VERSION_COLLECT_TIMEOUT_MS);
- first join → all compatible: the host's first ``member-joined`` → the moment the last node has
  reported every other node compatible;
- ready-set → countdown: acks, both grid phases and the LockedStartPackage (no timer in a healthy room);
- ready-set → match-start: the above plus the intentional 5 s countdown.

    python benchmarks/room_bench.py [--sizes 2 4 8] [--repeats 5]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from open4wd_node.room import session as room_session
from open4wd_node.assets.cars import CarChoice
from open4wd_node.runtime.choices import PLAYERS
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.context import NodeContext
from open4wd_node.events.sink import EventSink
from open4wd_node.events.vocabulary import NodeEvent, RoomCreated
from open4wd_node.runtime.logs import configure_logging
from open4wd_node.net.reach import with_listener
from open4wd_node.room.session import HostOptions, JoinOptions
from open4wd_node.runtime.values import IntRange
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation

ROOM_LIMIT_S = 60  # only a hung room reaches this


class TimedEvents(EventSink):
    """Keeps each event with the perf_counter time it was emitted at; prints nothing."""

    def __init__(self) -> None:
        super().__init__(as_json=True)
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self.created = trio.Event()

    def view(self, lines: list[str]) -> None:
        pass

    def emit(self, event: NodeEvent) -> None:
        self.events.append((time.perf_counter(), event.EVENT, event.data()))
        if isinstance(event, RoomCreated):
            self.created.set()

    def first(self, event: str) -> float:
        return next(t for t, e, _ in self.events if e == event)

    def all_compatible_at(self, others: int) -> float:
        """When this node had reported ``others`` distinct peers compatible."""
        seen: set[str] = set()
        for t, e, d in self.events:
            if e == "compatibility" and d["compatible"]:
                seen.add(d["peer"])
                if len(seen) == others:
                    return t
        raise RuntimeError(f"only {len(seen)} of {others} peers were reported compatible")


async def one_room(nodes: int, data_dir: Path) -> dict[str, float]:
    sinks = [TimedEvents() for _ in range(nodes)]
    car = CarChoice.parse("speed")
    started: list[int] = []

    async def host() -> None:
        identity = Identity(bytes([1]) * 32)
        ctx = NodeContext(data_dir / "n0", DEFAULTS)
        options = HostOptions(min_players=nodes, max_players=nodes, auto_ready=True)
        outcome = await with_listener(identity, "127.0.0.1", 0, lambda listener: room_session.host_room(
            ctx, identity, options, car, sinks[0], listener))
        started.append(outcome.started is not None)

    async def member(i: int) -> None:
        await sinks[0].created.wait()
        identity = Identity(bytes([i + 1]) * 32)
        invite = Invitation.parse(next(d for _, e, d in sinks[0].events if e == "room-created")["invite"])
        ctx = NodeContext(data_dir / f"n{i}", DEFAULTS)
        outcome = await with_listener(identity, "127.0.0.1", 0, lambda listener: room_session.join_room(
            ctx, identity, invite, JoinOptions(auto_ready=True), car, sinks[i], listener))
        started.append(outcome.started is not None)

    with trio.fail_after(ROOM_LIMIT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host)
            for i in range(1, nodes):
                nursery.start_soon(member, i)
    if sum(started) != nodes:
        raise RuntimeError(f"only {sum(started)} of {nodes} nodes reached match-start")
    h = sinks[0]
    ready_set = h.first("ready-set")
    return {
        "host-ready → ready-set": ready_set - h.first("ready"),
        "first join → all compatible": max(s.all_compatible_at(nodes - 1) for s in sinks) - h.first("member-joined"),
        "ready-set → countdown": h.first("countdown") - ready_set,
        "ready-set → match-start": h.first("match-start") - ready_set,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=PLAYERS, nargs="+", default=[2, 4, 8], help="room sizes (nodes)")
    parser.add_argument("--repeats", type=IntRange(1, 1000), default=5, help="rooms per size")
    args = parser.parse_args()
    configure_logging("console", logging.WARNING)  # link-ended lines at the end of every room are noise here
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    for nodes in args.sizes:
        runs = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(trio.run(one_room, nodes, Path(tmp)))
        print(f"{nodes} nodes, {args.repeats} rooms (median, max):")
        for name in runs[0]:
            values = [r[name] for r in runs]
            print(f"  {name:<28} {statistics.median(values):7.3f} s  {max(values):7.3f} s")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
