"""Bytes a race node sends each peer, and whether a race keeps real time over thin links: the sans-IO race
sessions of ``tests/protocol/race/harness.py`` (the real session, signatures and wire encoding; the small
``CounterWorld`` in place of the simulation) on a simulated clock, every direction of every link carrying
at most ``--cap`` bytes a second (a message waits until the link has sent the ones before it, then
travels 0–40 ms), each message counted with its 4-byte length and Noise's 16-byte tag.

Figures are in protocol time (the simulated clock), so they do not depend on this machine's speed:

- ``B/s per peer``: the bytes one node sends one peer per second of race, averaged over every directed
  link, and as a ratio to the cap (``of cap``);
- ``real time``: frames raced per tick of the harness's frame pump (one frame per 16 ms tick at most:
  1.00 is a race that keeps real time; the slowest node's frames count);
- ``inputs/msg``: inputs per ``race-inputs``.

    .venv/bin/python benchmarks/thin_link_bench.py [--nodes 4] [--frames 1800] [--caps none,32768,24576] [--seeds 1,2,3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from protocol.race.messages import RaceInputs  # noqa: E402
from tests.protocol.race.harness import TICK_MS, Mesh, Send  # noqa: E402


def race(nodes: int, frames: int, cap: int | None, seed: int) -> dict[str, float]:
    """One race to its end over links capped at ``cap`` bytes a second (None: no cap)."""
    mesh = Mesh(nodes, seed=seed, length=frames, bytes_per_s=cap)
    mesh.run_to_end(limit_ms=frames * 1000 // 60 * 8)
    seconds = mesh.now / 1000
    links = nodes * (nodes - 1)
    sent = [a.message for p in mesh.peers for a in mesh.actions[p]
            if isinstance(a, Send) and isinstance(a.message, RaceInputs)]
    inputs = sum(span.count for message in sent for span in message.spans)
    return {
        "bytes_per_peer_s": sum(mesh.sent_bytes.values()) / links / seconds,
        "realtime": min(mesh.sessions[p].current_frame for p in mesh.peers) / (mesh.now / TICK_MS),
        "inputs_per_message": inputs / max(1, len(sent)),
        "agreed": float(len({mesh.state(p) for p in mesh.peers}) == 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--frames", type=int, default=1800, help="frames of the round (60 a second)")
    parser.add_argument("--caps", default="none,32768,24576", help="bytes a second per link direction; none: no cap")
    parser.add_argument("--seeds", default="1,2,3", help="one race per seed; figures are medians over them")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"{args.nodes} nodes, {args.frames} frames, seeds {args.seeds}; protocol time (medians over the seeds)")
    print(f"{'cap B/s':>10} {'B/s per peer':>13} {'of cap':>7} {'real time':>10} {'inputs/msg':>11} {'agreed':>7}")
    for text in args.caps.split(","):
        cap = None if text == "none" else int(text)
        runs = [race(args.nodes, args.frames, cap, seed) for seed in seeds]
        rate = statistics.median(r["bytes_per_peer_s"] for r in runs)
        share = "" if cap is None else f"{rate / cap:.2f}"
        print(f"{text:>10} {rate:>13.0f} {share:>7} {statistics.median(r['realtime'] for r in runs):>10.2f} "
              f"{statistics.median(r['inputs_per_message'] for r in runs):>11.2f} "
              f"{sum(r['agreed'] for r in runs):>4.0f}/{len(runs)}")


if __name__ == "__main__":
    main()
