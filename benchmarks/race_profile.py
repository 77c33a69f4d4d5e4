"""Where one racer's CPU goes, per frame: an N-node demo race in which one node runs under
cProfile, then the calls that matter counted per frame that node stepped.

    python benchmarks/race_profile.py [--nodes 8] [--node 1] [--top 25]

Counts, per frame: messages received and decoded, frames opened and sealed (AEAD), socket reads and
writes, Ed25519 verifications and signatures, trio task steps (scheduler batches), cancel scopes opened,
the pump's waits for its tick; then the top functions by own time. Run on an
editable (interpreted) install: cProfile sees no compiled function. The race's data directories and the
profile are removed afterwards. cProfile slows the profiled node several-fold (its lag means nothing);
the counts per frame are what this is for. Printed with the load average at the start.
"""

from __future__ import annotations

import argparse
import os
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio

import open4wd_node.demo.runner as demo_runner
from open4wd_node.demo.runner import run_demo
from open4wd_node.demo.setup import DemoOptions

COUNTED = {  # label -> (file suffix, function name)
    "socket reads (receive_some)": ("trio/_highlevel_socket.py", "receive_some"),
    "socket writes (send_all)": ("trio/_highlevel_socket.py", "send_all"),
    "frames opened (AEAD)": ("protocol/link/noise.py", "open"),
    "frames sealed (AEAD)": ("protocol/link/noise.py", "seal"),
    "messages decoded": ("open4wd_node/net/link_rules.py", "admit"),
    "messages handled (session.receive)": ("protocol/race/session.py", "receive"),
    "Ed25519 verify": ("protocol/identity/ed25519.py", "verify"),
    "Ed25519 sign": ("protocol/identity/ed25519.py", "sign"),
    "trio task steps": ("trio/_core/_run.py", "unrolled_run"),
    "cancel scopes entered": ("trio/_core/_run.py", "__enter__"),
    "checkpoints": ("trio/_core/_run.py", "checkpoint"),
    "pump ticks (trio.sleep_until)": ("trio/_timeouts.py", "sleep_until"),
    "events the pump took (receive_nowait)": ("trio/_channel.py", "receive_nowait"),
    "frames stepped": ("sim_core/world.py", "step"),
}


def counts(stats: pstats.Stats) -> dict[str, int]:
    """Call counts of the ``COUNTED`` functions (summed over same-named functions of the file)."""
    found = dict.fromkeys(COUNTED, 0)
    for (file, _line, name), (_cc, calls, *_rest) in stats.stats.items():  # type: ignore[attr-defined]
        for label, (suffix, function) in COUNTED.items():
            if name == function and file.endswith(suffix):
                found[label] += calls
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--node", type=int, default=1, help="which node runs under cProfile (0 is the host)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="race-profile-") as scratch:
        race_and_profile(args, Path(scratch))


def race_and_profile(args: argparse.Namespace, work: Path) -> None:
    """Race the demo in ``work`` with node ``args.node`` under cProfile, then print its figures."""
    profile = work / "node.prof"
    plain = demo_runner.cli_command

    def cli_command(data_dir: Path) -> list[str]:
        argv = plain(data_dir)
        if data_dir.name == f"node{args.node}":  # the interpreter's options stay first: cProfile runs the module
            module = argv.index("-m")
            argv[module:module] = ["-m", "cProfile", "-o", str(profile)]
        return argv

    demo_runner.cli_command = cli_command  # type: ignore[assignment]
    runs = trio.run(run_demo, DemoOptions(nodes=args.nodes), work, lambda index, event: None)
    result: dict[str, Any] = runs[args.node].last("result") or {}
    frames = (result.get("cpu") or {}).get("frames") or 1
    print(f"{args.nodes} nodes, node {args.node} profiled: {frames} frames, worst lag {result.get('max_lag')} "
          f"(inflated by the profiler), CPU per frame {result.get('cpu', {}).get('per_frame_us')} µs (profiled)")
    stats = pstats.Stats(str(profile), stream=sys.stdout)
    for label, calls in counts(stats).items():
        print(f"  {label:40} {calls / frames:8.2f} per frame ({calls})")
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
