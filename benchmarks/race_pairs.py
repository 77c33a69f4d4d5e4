"""Is B's CPU per node-frame different from A's by more than this machine drifts? Two designs:

- **pairs** (the default): whole demo races on A and on B in turn, each pair's ratio B / A;
- **mixed** (``--mixed``): one demo race at a time in which half the nodes run A and half run B, each
  race's ratio of B's nodes' mean to A's nodes' mean.

Why: on a shared virtual machine the same demo race's CPU per node-frame moves by 10–30 % from one minute
to the next, and every part of the split moves with it (docs/node.md, "Comparing two builds"). Two figures taken
minutes apart compare the host's moods, not the code. Pairs cancel the drift slower than one race (about
a minute with 8 nodes); the order alternates (A B, B A, ...) because a drift within a pair would
otherwise favour one side every time: an A/A run of four pairs, all in the order A B, measured B 6–19 %
slower than A in each (so give an even number of pairs). The nodes of one race share the machine's mood,
and their figures lie within a few per cent of each other, so a mixed race resolves far smaller
differences (an A/A run of four: a 95 % interval of ±2 %, against ±10 % for four pairs). It needs both
sides to speak the same protocol, and the halves swap every race (the host, node 0, is on A's side in
even races and on B's in odd ones). A difference is resolved only when the 95 % interval of the mean
ratio (Student's t over the pairs or races) leaves out 1.

A side is a Python interpreter with open4wd-node installed (``--a /path/to/venv/bin/python``), optionally
followed by a directory that goes first on its import path (``--a PY:DIR``): a full copy of the installed
packages with some interpreted modules edited, a way to try a change on a compiled install without
building it again. A mixed race gives each node its side's interpreter and directory through a
``sitecustomize`` that it writes for the run (reading the node's ``--nickname``), so it replaces any
other ``sitecustomize``. ``--a-env KEY=VALUE`` and ``--b-env KEY=VALUE`` give a side environment
variables of its own; in a mixed race a node of that side starts again on its interpreter with them
(``os.execv``, the same process), since an interpreter reads settings such as ``PYTHONMALLOC`` only when
it starts. Give the same side twice to see the drift alone (an A/A run). Each race runs in a new empty
working directory, so that no source tree shadows the install.

    python benchmarks/race_pairs.py --a PY[:DIR] --b PY[:DIR] [--a-env K=V] [--b-env K=V] [--mixed]
        [--nodes 8] [--pairs 4] [--frames-per-tick 1]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RACE_TIMEOUT_S = 900
T_95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)
"""Student's t, two-sided 95 %, for 1..30 degrees of freedom (beyond that 2.0 is used)."""

SITECUSTOMIZE = '''"""Written by benchmarks/race_pairs.py --mixed: a node runs on its side's interpreter, with its side's
environment variables and its side's overlay first on its import path."""
import os
import sys

PYTHONS = {pythons!r}
ENVIRONMENTS = {environments!r}
OVERLAYS = {overlays!r}
if "--nickname" in sys.argv[:-1]:
    nickname = sys.argv[sys.argv.index("--nickname") + 1]
    if (nickname in PYTHONS or ENVIRONMENTS.get(nickname)) and not os.environ.get("OPEN4WD_RACE_PAIRS_EXECUTED"):
        os.environ.update(ENVIRONMENTS.get(nickname, {{}}), OPEN4WD_RACE_PAIRS_EXECUTED="1")
        python = PYTHONS.get(nickname, sys.executable)
        os.execv(python, [python, *sys.orig_argv[1:]])
    if OVERLAYS.get(nickname):
        sys.path.insert(0, OVERLAYS[nickname])
'''


@dataclass(frozen=True)
class Side:
    """One install to race: its interpreter, an optional overlay directory put first on the path, and
    environment variables of its own (an interpreter's settings: ``PYTHONMALLOC``, ``GLIBC_TUNABLES``)."""

    name: str
    python: Path
    overlay: Path | None
    environment: dict[str, str]

    @classmethod
    def parse(cls, name: str, text: str, environment: list[str]) -> Side:
        """``PY`` or ``PY:DIR``, and ``KEY=VALUE`` settings; a missing interpreter or overlay, or a setting
        without ``=``, is the caller's mistake, said at once."""
        python_text, _, overlay_text = text.partition(":")
        python = Path(python_text)
        overlay = Path(overlay_text).resolve() if overlay_text else None
        if not (python.is_file() and os.access(python, os.X_OK)):
            raise SystemExit(f"race_pairs: --{name.lower()}: {python} is not an executable interpreter")
        if overlay is not None and not overlay.is_dir():
            raise SystemExit(f"race_pairs: --{name.lower()}: the overlay {overlay} is not a directory")
        bad = [item for item in environment if "=" not in item or item.startswith("=")]
        if bad:
            raise SystemExit(f"race_pairs: --{name.lower()}-env takes KEY=VALUE, not {bad[0]!r}")
        return cls(name, python, overlay, dict(item.split("=", 1) for item in environment))


@dataclass(frozen=True)
class Figure:
    """One side's CPU per node-frame in one race (a whole race, or its half of a mixed one)."""

    side: str
    per_frame_us: float
    detail: str


def demo(python: Path, nodes: int, frames_per_tick: int, path: list[Path], environment: dict[str, str]) -> dict[str, Any]:
    """Run one demo race of ``nodes`` processes on ``python`` with ``path`` first on the import path and
    ``environment`` set, in a new empty working directory; its JSON summary, with the load average at its
    start."""
    env = {**os.environ, **environment}
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in path] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="open4wd-race-pairs-") as work:
        out = subprocess.run(
            [str(python), "-m", "open4wd_node.cli.main", "--data-dir", str(Path(work) / "data"), "demo",
             "--nodes", str(nodes), "--frames-per-tick", str(frames_per_tick), "--json"],
            cwd=work, env=env, capture_output=True, text=True, timeout=RACE_TIMEOUT_S, check=False)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        raise SystemExit(f"race_pairs: the demo failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(lines[-1])
    return {**summary, "load_at_start": load}


def _race_line(summary: dict[str, Any]) -> str:
    return (f"load at start {summary['load_at_start']:.2f}, worst lag {summary['max_lag']}, "
            f"{summary['agreed_hashes']} agreed hashes")


def whole_race(side: Side, nodes: int, frames_per_tick: int) -> Figure:
    """A demo race with every node on ``side``."""
    summary = demo(side.python, nodes, frames_per_tick, [side.overlay] if side.overlay else [], side.environment)
    cpu = summary["cpu"]
    split = ", ".join(f"{part} {us:.0f}" for part, us in cpu["parts_us"].items())
    return Figure(side.name, cpu["per_frame_us"], f"{_race_line(summary)}, parts {split}")


def mixed_race(sides: tuple[Side, Side], b_nodes: set[int], nodes: int, frames_per_tick: int) -> tuple[Figure, Figure]:
    """A demo race whose nodes in ``b_nodes`` run side B and the others side A; the demo itself runs on
    A's interpreter, and a node of B's starts there and replaces itself with B's (``os.execv``, the same
    process) when B's is another or B has environment variables of its own."""
    a, b = sides
    side_of = {f"node{i}": b if i in b_nodes else a for i in range(nodes)}
    pythons = {name: str(side.python) for name, side in side_of.items() if side.python != a.python}
    environments = {name: side.environment for name, side in side_of.items()}
    overlays = {name: str(side.overlay or "") for name, side in side_of.items()}
    with tempfile.TemporaryDirectory(prefix="open4wd-race-pairs-site-") as site:
        (Path(site) / "sitecustomize.py").write_text(
            SITECUSTOMIZE.format(pythons=pythons, environments=environments, overlays=overlays))
        summary = demo(a.python, nodes, frames_per_tick, [Path(site)], {})
    by_node = {int(i): us for i, us in summary["cpu"]["by_node_us"].items()}
    if len(by_node) != nodes:
        raise SystemExit(f"race_pairs: only nodes {sorted(by_node)} of {nodes} reported their CPU")
    figures = []
    for side, members in ((a, [i for i in range(nodes) if i not in b_nodes]), (b, sorted(b_nodes))):
        listed = ", ".join(f"node {i} {by_node[i]:.0f}" for i in members)
        figures.append(Figure(side.name, statistics.fmean(by_node[i] for i in members),
                              f"{_race_line(summary)}; {listed}"))
    return figures[0], figures[1]


def ratio_summary(pairs: list[tuple[Figure, Figure]]) -> str:
    """Each pair's B / A, their mean with its 95 % interval, and whether the difference is resolved."""
    ratios = [b.per_frame_us / a.per_frame_us for a, b in pairs]
    mean = statistics.fmean(ratios)
    if len(ratios) < 2:
        return f"B / A: {ratios[0]:.3f} (one pair: no spread, so nothing is resolved)"
    t = T_95[len(ratios) - 2] if len(ratios) - 1 <= len(T_95) else 2.0
    half = t * statistics.stdev(ratios) / math.sqrt(len(ratios))
    verdict = "resolved" if abs(mean - 1) > half else "not resolved: 1 is inside the interval"
    listed = ", ".join(f"{r:.3f}" for r in ratios)
    return f"B / A: {listed}; mean {mean:.3f}, 95 % interval {mean - half:.3f}..{mean + half:.3f}: {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, metavar="PY[:DIR]", help="side A: an interpreter, optionally an overlay")
    parser.add_argument("--b", required=True, metavar="PY[:DIR]", help="side B: an interpreter, optionally an overlay")
    parser.add_argument("--a-env", action="append", default=[], metavar="KEY=VALUE", help="a setting of side A's")
    parser.add_argument("--b-env", action="append", default=[], metavar="KEY=VALUE", help="a setting of side B's")
    parser.add_argument("--mixed", action="store_true", help="half the nodes of each race on each side")
    parser.add_argument("--nodes", type=int, default=8, choices=range(2, 9), metavar="2..8")
    parser.add_argument("--pairs", type=int, default=4, choices=range(1, 101), metavar="1..100",
                        help="pairs of races, or mixed races")
    parser.add_argument("--frames-per-tick", type=int, default=1, choices=range(1, 5), metavar="1..4")
    args = parser.parse_args()
    sides = Side.parse("A", args.a, args.a_env), Side.parse("B", args.b, args.b_env)
    design = "mixed races" if args.mixed else "pairs of races"
    print(f"{args.pairs} {design} of {args.nodes} nodes, {args.frames_per_tick} frame(s) per tick, on "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; A = {args.a} {' '.join(args.a_env)}, "
          f"B = {args.b} {' '.join(args.b_env)}", flush=True)
    pairs: list[tuple[Figure, Figure]] = []
    for index in range(args.pairs):
        if args.mixed:
            a, b = mixed_race(sides, set(range(1 - index % 2, args.nodes, 2)), args.nodes, args.frames_per_tick)
            shown = (a, b)
        else:
            order = sides if index % 2 == 0 else sides[::-1]
            first, second = (whole_race(side, args.nodes, args.frames_per_tick) for side in order)
            a, b = (first, second) if index % 2 == 0 else (second, first)
            shown = (first, second)
        for figure in shown:
            print(f"{figure.side}: CPU per node-frame {figure.per_frame_us:.0f} µs ({figure.detail})", flush=True)
        pairs.append((a, b))
    for name, figures in (("A", [a for a, _ in pairs]), ("B", [b for _, b in pairs])):
        values = [f.per_frame_us for f in figures]
        print(f"{name}: mean {statistics.fmean(values):.0f} µs per node-frame ({', '.join(f'{v:.0f}' for v in values)})")
    print(ratio_summary(pairs))


if __name__ == "__main__":
    main()
