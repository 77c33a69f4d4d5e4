"""What a copy of a machine's state costs against the handling of one message: the measurement behind
restoring the room machines after a bug and breaking the race session instead (docs/transport.md,
"Containment").

For each machine it runs the real sans-IO machine on the test harnesses (``tests/protocol/room/harness.py``:
an 8-member room up to its ReadySet; ``tests/protocol/race/harness.py``: a race of ``--nodes`` mid-way),
times every ``receive`` the run makes, then times ``protocol.transaction.snapshot`` of the machine's state
at the end (the race session's whole state but its world, key book and identity, which a restore would
need as well), and prints each as a ratio to the mean ``receive`` measured in the same run.

    .venv/bin/python benchmarks/containment_bench.py [--nodes 3] [--race-ms 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from protocol.identity.keys import Identity  # noqa: E402
from protocol.race.session import RaceSession  # noqa: E402
from protocol.room.host import HostRoom  # noqa: E402
from protocol.room.member import MemberRoom  # noqa: E402
from protocol.transaction import snapshot  # noqa: E402
from tests.protocol.race.harness import Mesh  # noqa: E402
from tests.protocol.room.harness import Net  # noqa: E402


class Timed:
    """Wraps a class's ``receive`` to sum the time of every call (the copy it makes inside included)."""

    def __init__(self, cls: type) -> None:
        self.cls, self.original = cls, cls.receive
        self.seconds, self.calls = 0.0, 0

        def receive(machine: Any, *args: Any) -> Any:
            start = time.perf_counter()
            try:
                return self.original(machine, *args)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        cls.receive = receive  # type: ignore[method-assign]

    def mean(self) -> float:
        self.cls.receive = self.original  # type: ignore[method-assign]
        return self.seconds / max(1, self.calls)


def per_call(work: Callable[[], object], repeat: int = 30) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        work()
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--race-ms", type=int, default=20_000)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")

    host_t, member_t = Timed(HostRoom), Timed(MemberRoom)
    ids = [Identity(bytes([i]) * 32) for i in range(1, 9)]
    net = Net(ids[0], min_players=8)
    for identity in ids[1:]:
        net.add_member(identity)
    host, member = host_t.mean(), member_t.mean()
    host_copy = per_call(lambda: snapshot(net.host, HostRoom._KEPT))
    member_copy = per_call(lambda: snapshot(net.members[ids[1].peer_id], MemberRoom._KEPT))
    for name, mean, copy, calls in (("room host", host, host_copy, host_t.calls),
                                     ("room member", member, member_copy, member_t.calls)):
        print(f"{name} (8 members): receive {mean * 1e6:5.0f} µs with its copy; the copy at the ReadySet "
              f"{copy / mean:5.2f}× a receive ({calls} messages)")

    race_t = Timed(RaceSession)
    mesh = Mesh(args.nodes, seed=1, length=args.race_ms * 60 // 1000 + 600)
    mesh.run(args.race_ms)
    race = race_t.mean()
    session = mesh.sessions[mesh.peers[0]]
    kept = frozenset({"world", "keys", "_identity", "_key", "setup", "_announce", "_handlers"})
    race_copy = per_call(lambda: snapshot(session, kept), repeat=10)
    world_copy = per_call(session.world.save_state, repeat=100)
    per_s = race_t.calls / args.nodes / (args.race_ms / 1000)
    print(f"race session ({args.nodes} nodes): receive {race * 1e6:5.0f} µs; a copy of its state {race_copy / race:6.1f}× "
          f"a receive (+ the world's save {world_copy / race:4.2f}×); {per_s:.0f} messages a second per node")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
