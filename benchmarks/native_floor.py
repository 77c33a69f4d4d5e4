"""What a race frame's network and signature work costs a node written in C on this machine: the floor under
any implementation of the protocol's per-frame work, beside the node's own figure.

Why: the node measures 1–1.7 ms of CPU per node-frame with 7 peers on the development host (8 processes on 2
cores), the target is 1 ms, and the cuts left in its Python are a few per cent each (docs/node.md, "CPU per
frame"). Whether the rest is the host (a process woken 60 times a second refills its caches, whatever it is
written in) or the Python runtime decides what could meet the target. ``native_floor.c`` answers it: N
processes in a full TCP mesh on 127.0.0.1 at 60 Hz, each doing for every frame exactly the node's work for
its inputs (read every peer's socket once, open each frame with ChaCha20-Poly1305, hash each input into its
signer's chain, verify one Ed25519 signature per run of 4, sign its own input, seal and write one frame to
every peer) with libsodium, the library the node signs and verifies with, and nothing else (no simulation
step, no bookkeeping: docs/node.md, "Against a node without its layers").

It is built here with the C compiler (``$CC``, else ``cc``) against libsodium's headers (Debian:
``libsodium-dev``); without them it says so and exits 1. Each process measures its own thread's CPU time over
the frames after a warm-up of 120. ``--lean PY`` adds runs of the same work in the leanest Python
(``lean_floor.py`` on interpreter PY: the node's libraries, none of its layers), which separates what Python
itself costs from what the node's layers cost; ``--lean-with codec``, ``digests`` or ``codec+digests`` adds
the lean loop with those of the node's own layers put back (its msgpack wire codec; its DAG-CBOR input
digests and keys). ``--beside PY`` (an interpreter with open4wd-node installed)
adds a demo race of the node with as many nodes. Each run does every kind once, each kind first in turn, and
each kind's ratio to a reference kind (``--reference``; the node when it runs, else the native floor) is
summarised with a 95 % interval over the runs, as ``race_pairs.py`` does.

    python benchmarks/native_floor.py [--nodes 8] [--frames 2000] [--runs 3] [--lean PY [--lean-with LAYERS]]
        [--beside PY] [--reference KIND]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from race_pairs import Figure, Side, ratio_summary, whole_race

SOURCE = Path(__file__).with_name("native_floor.c")
LEAN = Path(__file__).with_name("lean_floor.py")
WARMUP_FRAMES = 120  # as native_floor.c
START_DELAY_NS = 1_500_000_000  # time for every process to start and dial before frame 0
RUN_TIMEOUT_S = 900
MIN_FRAMES, MAX_FRAMES = WARMUP_FRAMES + 60, 36_000  # a second measured at least, ten minutes at most


def layer_set(text: str) -> tuple[str, ...]:
    """``--lean-with``: node layers joined by ``+``, each ``codec`` or ``digests`` (lean_floor.py)."""
    layers = tuple(dict.fromkeys(text.split("+")))
    if not layers or not set(layers) <= {"codec", "digests"}:
        raise ValueError(text)
    return layers


def frame_count(text: str) -> int:
    """``--frames``: an integer in MIN_FRAMES..MAX_FRAMES (argparse reports the ValueError as a usage error)."""
    value = int(text)
    if not MIN_FRAMES <= value <= MAX_FRAMES:
        raise ValueError(text)
    return value


@dataclass(frozen=True)
class NodeLine:
    """One process's report (``native_floor.c`` prints it when its frames are done)."""

    node: int
    frames: int
    cpu_ns: int
    worst_lag: int
    verifications: int
    heard: int
    bad_inputs: int
    refused: int

    @classmethod
    def parse(cls, line: str) -> "NodeLine":
        return cls(*(int(field) for field in line.split()))

    @property
    def per_frame_us(self) -> float:
        return self.cpu_ns / self.frames / 1000


def build(work: Path) -> Path:
    """The benchmark's binary, compiled into ``work``; exits 1 with the compiler's words when it cannot be."""
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        raise SystemExit(f"native_floor: no C compiler ({compiler!r} is not on PATH; set CC)")
    binary = work / "native_floor"
    out = subprocess.run([compiler, "-O2", "-o", str(binary), str(SOURCE), "-lsodium"], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise SystemExit("native_floor: the build failed; it needs libsodium's headers and library "
                         f"(Debian: libsodium-dev):\n{out.stderr[-2000:]}")
    return binary


@dataclass(frozen=True)
class FloorProgram:
    """A kind of floor node: how to start it (``head``: the binary, or an interpreter and lean_floor.py) and
    the options it takes after its positional arguments (``tail``)."""

    kind: str
    head: tuple[str, ...]
    tail: tuple[str, ...] = ()

    def argv(self, positional: list[str]) -> list[str]:
        return [*self.head, *positional, *self.tail]


def run(program: FloorProgram, nodes: int, frames: int) -> list[NodeLine]:
    """One run of ``nodes`` processes of ``program``; every process's report, checked: all reported, every
    input heard chained and every frame opened (else the figure is not of the work it claims: exits 1)."""
    listeners = [socket.create_server(("127.0.0.1", 0), backlog=nodes) for _ in range(nodes)]
    try:
        ports = [str(listener.getsockname()[1]) for listener in listeners]
        start = time.monotonic_ns() + START_DELAY_NS  # CLOCK_MONOTONIC, as the processes read it
        processes = [
            subprocess.Popen(program.argv([str(nodes), str(frames), str(index), str(listener.fileno()), *ports, str(start)]),
                             pass_fds=(listener.fileno(),), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for index, listener in enumerate(listeners)]
        outputs = [process.communicate(timeout=RUN_TIMEOUT_S) for process in processes]
    finally:
        for listener in listeners:
            listener.close()
    failed = [f"node {index} exited {process.returncode}: {err.strip().splitlines()[-1] if err.strip() else ''}"
              for index, (process, (_, err)) in enumerate(zip(processes, outputs, strict=True)) if process.returncode != 0]
    if failed:  # one node's failure resets its peers' links: every failure is listed, the cause among them
        raise SystemExit("native_floor: " + "; ".join(failed))
    lines = [NodeLine.parse(out) for out, _ in outputs]
    expected_heard = (nodes - 1) * frames * 0.9  # every peer's inputs, but the last few before the peers stop
    broken = [line for line in lines if line.bad_inputs or line.refused or line.heard < expected_heard]
    if broken:
        raise SystemExit(f"native_floor: node {broken[0].node} did not do the work it reports: {broken[0]}")
    return lines


def describe(lines: list[NodeLine], load: float) -> str:
    verifications = sum(line.verifications for line in lines) / len(lines) / (lines[0].frames + WARMUP_FRAMES)
    return (f"load at start {load:.2f}, worst lag {max(line.worst_lag for line in lines)}, "
            f"{verifications:.2f} verifications per frame; by node "
            + ", ".join(f"{line.per_frame_us:.0f}" for line in lines))


def floor_figure(program: FloorProgram, nodes: int, frames: int) -> Figure:
    """One run of a floor program (the native binary, or the lean Python one)."""
    load = os.getloadavg()[0]
    lines = run(program, nodes, frames)
    return Figure(program.kind, statistics.fmean(line.per_frame_us for line in lines), describe(lines, load))


def interpreter(path: Path | None) -> Path | None:
    if path is not None and not path.is_file():
        raise SystemExit(f"native_floor: no interpreter at {path}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=8, choices=range(2, 17), metavar="2..16")
    parser.add_argument("--frames", type=frame_count, default=2000, metavar=f"{MIN_FRAMES}..{MAX_FRAMES}",
                        help="frames per run (60 a second)")
    parser.add_argument("--runs", type=int, default=3, choices=range(1, 51), metavar="1..50")
    parser.add_argument("--lean", type=Path, metavar="PY",
                        help="also run the same work in lean Python (lean_floor.py) on this interpreter")
    parser.add_argument("--lean-with", type=layer_set, action="append", default=[], metavar="LAYERS",
                        help="with --lean: also the lean loop with these of the node's layers put back (codec, "
                             "digests or codec+digests; PY must have open4wd-node installed); repeatable")
    parser.add_argument("--reference", metavar="KIND",
                        help="the kind every other is compared with (default: node with --beside, else native)")
    parser.add_argument("--beside", type=Path, metavar="PY",
                        help="also run the node's demo race on this interpreter (open4wd-node installed)")
    args = parser.parse_args()
    lean, beside = interpreter(args.lean), interpreter(args.beside)
    if args.lean_with and lean is None:
        raise SystemExit("native_floor: --lean-with needs --lean PY")
    if beside is not None and args.nodes > 8:
        raise SystemExit("native_floor: the demo races at most 8 nodes; give --nodes 2..8 with --beside")
    print(f"{args.runs} run(s) of {args.nodes} processes, {args.frames} frames, on {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    leans = [("lean", ()), *(("lean+" + "+".join(layers), layers) for layers in args.lean_with)] if lean else []
    kinds = ["native", *(kind for kind, _ in leans), *(["node"] if beside is not None else [])]
    reference = args.reference or ("node" if beside is not None else "native")
    if reference not in kinds:
        raise SystemExit(f"native_floor: --reference {reference} is not one of the kinds run: {', '.join(kinds)}")
    with tempfile.TemporaryDirectory(prefix="open4wd-native-floor-") as work:
        programs = {"native": FloorProgram("native", (str(build(Path(work))),)),
                    **{kind: FloorProgram(kind, (str(lean), str(LEAN)), layers) for kind, layers in leans}}
        figures: dict[str, list[Figure]] = {kind: [] for kind in kinds}
        for index in range(args.runs):
            for kind in kinds[index % len(kinds):] + kinds[:index % len(kinds)]:  # each kind first in turn
                if kind == "node":
                    assert beside is not None
                    figure = whole_race(Side("node", beside, None, {}), args.nodes, 1)
                else:
                    figure = floor_figure(programs[kind], args.nodes, args.frames)
                print(f"{figure.side}: CPU per node-frame {figure.per_frame_us:.0f} µs ({figure.detail})", flush=True)
                figures[kind].append(figure)
    for kind, listed in figures.items():
        values = [figure.per_frame_us for figure in listed]
        print(f"{kind}: mean {statistics.fmean(values):.0f} µs per node-frame ({', '.join(f'{v:.0f}' for v in values)})")
    for kind in kinds:
        if kind != reference:
            pairs = list(zip(figures[reference], figures[kind], strict=True))
            print(f"(A = {reference}, B = {kind}) {ratio_summary(pairs)}")


if __name__ == "__main__":
    main()
