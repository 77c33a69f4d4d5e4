"""Stall recovery (docs/race.md, "Performance"): whole nodes race over loopback TCP; one of them stands still for
``--stall`` seconds (its pump and its links, the in-process stand-in for SIGSTOP) after frame 60. Reports,
from the moment it resumes: when the others step again, when the stalled node's lag is back to at most
one tick (4 frames), and what every node dropped, probed and re-sent.

    python benchmarks/stall_bench.py [--nodes 2] [--stall 3] [--real]

By default the trio clock is the autojump ``MockClock`` of the tests (protocol time: CPU work costs no
time, so the figures are the protocol's own, the same on any machine); ``--real`` runs on the wall
clock (the figures then include this machine's speed).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import trio
import trio.testing

from open4wd_node.race.pump import FramePump
from open4wd_node.runtime.blocking import blocking_work_inline
from tests.open4wd_node.race.nodes import race, short_track

STALL_FRAME = 60
SAMPLE_S = 0.01


async def run(nodes: int, stall: float, tmp: Path) -> dict:
    pumps: list[FramePump] = []
    original = FramePump.__init__

    def keep(self, *args, **kwargs):  # every node's pump, to sample its frame and lag
        original(self, *args, **kwargs)
        pumps.append(self)

    FramePump.__init__ = keep  # type: ignore[method-assign]
    samples: list[tuple[float, list[tuple[int, int]]]] = []
    holder: dict = {}

    async def sample() -> None:
        while "result" not in holder:
            samples.append((trio.current_time(), [(p.current_frame(), p.lag) for p in pumps]))
            await trio.sleep(SAMPLE_S)

    async def match() -> None:
        holder["result"] = await race(tmp, nodes, track_bytes=short_track(40.0), stalls={nodes - 1: (STALL_FRAME, stall)},
                                      limit_s=600)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sample)
            await match()
            nursery.cancel_scope.cancel()
    finally:
        FramePump.__init__ = original  # type: ignore[method-assign]
    recorders, _ = holder["result"]
    stalled_index = next(i for i, p in enumerate(pumps) if p.step.__self__.me == recorders[nodes - 1].of("result")[0]["peer"])
    resumed = recorders[nodes - 1].first_at["fault"] + stall
    after = [(t, s) for t, s in samples if t >= resumed and len(s) == len(pumps)]
    base = after[0][1]
    others_move = next(t for t, s in after if all(s[i][0] > base[i][0] for i in range(len(s)) if i != stalled_index))
    caught_up = next(t for t, s in after if s[stalled_index][1] <= 4)
    results = [rec.of("result")[0] for rec in recorders]
    return {
        "others_step_again_s": round(others_move - resumed, 3),
        "stalled_node_caught_up_s": round(caught_up - resumed, 3),
        "outcomes": [r["outcome"] for r in results],
        "drops": [r["drops"] for r in results],
        "probes_sent": [r["liveness"]["probes_sent"] for r in results],
        "resends": [r["liveness"]["resends"] for r in results],
        "agree": len({str(r["standings"]) for r in results}) == 1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--stall", type=float, default=3.0)
    parser.add_argument("--real", action="store_true", help="the wall clock instead of the autojump clock")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.real:
            report = trio.run(run, args.nodes, args.stall, Path(tmp))
        else:
            with blocking_work_inline():
                report = trio.run(run, args.nodes, args.stall, Path(tmp), clock=trio.testing.MockClock(autojump_threshold=0))
    clock = "wall clock" if args.real else "protocol time (autojump clock)"
    print(f"{args.nodes} nodes, one stopped {args.stall:g} s after frame {STALL_FRAME} ({clock}):")
    for key, value in report.items():
        print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
