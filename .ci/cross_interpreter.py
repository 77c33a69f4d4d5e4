"""Determinism across interpreters: the node built on the oldest and the newest supported Python, each
with the oldest and the newest supported numpy, computes the same simulation and races itself.

Players run different Pythons and numpy versions; a peer that computes one bit differently forks every
race it is in. This check builds the node (``pip install .``, compiled where a C compiler is present) in
one fresh virtual environment per configuration, then:

1. **Figures.** In each build, from an empty directory (so the installed package, not the checkout's
   sources, is imported; the checkout is only appended to the path for the ``tests`` helpers): the golden
   frame chains, three rollback sync-tests (a built-in round; magnets and fluids; launchers, rotors and
   entities), and the SHA-256 of every built-in asset baked there (baking reads GLB geometry with numpy's
   floats: the one place floats meet what the race uses). Every build's figures must equal the golden pins
   and each other's.
2. **A race.** A node of the first build hosts a one-lap room on 127.0.0.1 and a node of the second joins
   it; both must finish with every checksum vote agreed and the same standings.

``pyproject.toml``'s ``requires-python`` and numpy range are exactly what this proves (their ends). Run by
``.ci/run``; by hand: ``python .ci/cross_interpreter.py [--config PYTHON:NUMPY]…`` (prints what it
compared; exit 1 with the first difference).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHECKOUT = Path(__file__).resolve().parents[1]
PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
DEFAULT_CONFIGS = ("3.11:1.26.0", "3.13:2.5.5")
"""The ends of what pyproject.toml admits: the oldest Python with the oldest numpy, the newest with the newest."""
RACE_LIMIT_S = 300  # only a hang reaches it
LOCAL_ONLY = (".git", ".venv", "build", "*.egg-info", "artefacts", "__pycache__", ".*_cache", ".hypothesis")
"""What a build copies no part of: this checkout's own tools, outputs and caches."""

FIGURES = """
import hashlib, json, sys
sys.path.append(sys.argv[1])  # after site-packages: the installed node, the checkout's tests helpers
import numpy, sim_core
from sim_core.assets.bake import bake
from sim_core.assets.builtins import BUILTIN_REFS, builtin_bytes
from tests.sim_core.compiled_runs import golden_chains, magnet_figures, synctest_figures, weapons_and_entities_figures
print(json.dumps({
    "python": sys.version.split()[0], "numpy": numpy.__version__, "where": sim_core.__file__,
    "compiled": sim_core.step_is_compiled(), "engine": sim_core.ENGINE_ID,
    "chains": golden_chains(), "synctest": synctest_figures(), "magnets": magnet_figures(),
    "weapons": weapons_and_entities_figures(),
    "baked": {ref: hashlib.sha256(bake(builtin_bytes(ref))).hexdigest() for ref in BUILTIN_REFS},
}))
"""


class Mismatch(Exception):
    """Two builds disagree, or a build does not work: the check fails with this sentence."""


@dataclass(frozen=True)
class Config:
    """One build: a Python version (a pyenv interpreter) and the numpy version installed with the node."""

    python: str
    numpy: str

    @classmethod
    def parse(cls, text: str) -> Config:
        python, _, numpy = text.partition(":")
        if not python or not numpy:
            raise argparse.ArgumentTypeError(f"a configuration is PYTHON:NUMPY (e.g. 3.11:1.26.0), not {text!r}")
        return cls(python, numpy)

    @property
    def name(self) -> str:
        return f"py{self.python}-numpy{self.numpy}"

    def interpreter(self) -> Path:
        """The newest installed pyenv interpreter of this minor version."""
        found = sorted(PYENV.glob(f"{self.python}.*/bin/python"), key=lambda p: [int(x) for x in p.parts[-3].split(".")])
        if not found:
            raise Mismatch(f"no Python {self.python} under {PYENV} (pyenv install {self.python})")
        return found[-1]


def build(config: Config, root: Path) -> Path:
    """A fresh virtual environment with the node (and this numpy) installed from the checkout, and the two
    packages the checkout's scenario helpers import (pytest, hypothesis); its python."""
    venv = root / config.name
    subprocess.run([str(config.interpreter()), "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # Each build from its own copy of the sources: a build writes build/ inside the tree it builds (mypyc's
    # generated C included), which two builds at once would share and a later install would find stale.
    source = root / f"{config.name}-source"
    shutil.copytree(CHECKOUT, source, ignore=shutil.ignore_patterns(*LOCAL_ONLY))
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", str(source), f"numpy=={config.numpy}",
                           "pytest", "hypothesis"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise Mismatch(f"{config.name}: the install failed:\n{done.stderr[-3000:]}")
    return python


def figures(config: Config, python: Path, root: Path) -> dict[str, Any]:
    """The build's figures, computed by the installed package (from an empty directory)."""
    empty = root / f"{config.name}-run"
    empty.mkdir()
    done = subprocess.run([str(python), "-P", "-c", FIGURES, str(CHECKOUT)], cwd=empty, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise Mismatch(f"{config.name}: computing the figures failed:\n{done.stderr[-3000:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    if report["python"].rsplit(".", 1)[0] != config.python or report["numpy"] != config.numpy:
        raise Mismatch(f"{config.name}: the build runs Python {report['python']} with numpy {report['numpy']}")
    if "site-packages" not in Path(report["where"]).parts:
        raise Mismatch(f"{config.name}: the figures came from {report['where']}, not the installed package")
    if shutil.which("cc") is not None and not report["compiled"]:
        raise Mismatch(f"{config.name}: the build fell back to pure Python although a C compiler is here")
    return report


def compare(reports: dict[str, dict[str, Any]]) -> list[str]:
    """What every build agreed on (one line each); ``Mismatch`` at the first figure two builds differ on,
    or where the golden chains differ from their pins."""
    sys.path.insert(0, str(CHECKOUT))
    from tests.sim_core.step.test_step_golden import GOLDEN

    pins = {f"{scenario}/{seed}": list(pin) for (scenario, seed), pin in GOLDEN.items()}
    (first_name, first), *others = reports.items()
    for name, report in reports.items():
        for key, pinned in pins.items():
            if report["chains"].get(key) != pinned:
                raise Mismatch(f"{name}: the golden chain {key} is {report['chains'].get(key)}, pinned {pinned}")
    for figure in ("engine", "chains", "synctest", "magnets", "weapons", "baked"):
        for name, report in others:
            if report[figure] != first[figure]:
                differing = ([k for k in first[figure] if first[figure][k] != report[figure].get(k)]
                             if isinstance(first[figure], dict) else [])
                raise Mismatch(f"{figure} differ between {first_name} and {name}"
                               + (f": {', '.join(differing[:5])}" if differing else f": {first[figure]} / {report[figure]}"))
    return [f"{len(pins)} golden chains equal to their pins in every build",
            "3 rollback sync-tests (built-in round; magnets and fluids; launchers, rotors, entities) identical",
            f"{len(first['baked'])} built-in assets baked to identical bytes",
            f"engine {first['engine']}; builds: " + ", ".join(f"{n} ({'compiled' if r['compiled'] else 'pure Python'})"
                                                         for n, r in reports.items())]


class Node:
    """A node process of one build whose ``--json`` events are read as they come."""

    def __init__(self, python: Path, data_dir: Path, *argv: str) -> None:
        self.err = open(data_dir.with_suffix(".err"), "w")  # noqa: SIM115 - closed in ``finish``
        self.proc = subprocess.Popen([str(python), "-P", "-m", "open4wd_node.cli.main", "--data-dir", str(data_dir),
                                      *argv, "--json"], cwd=data_dir.parent, stdout=subprocess.PIPE, stderr=self.err,
                                     stdin=subprocess.DEVNULL, text=True)
        self.events: list[dict[str, Any]] = []
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(json.loads(line))
        self._lines.put(None)

    def wait_for(self, event: str) -> dict[str, Any]:
        deadline = time.monotonic() + RACE_LIMIT_S
        while not (found := [e for e in self.events if e["event"] == event]):
            try:
                item = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise Mismatch(f"no {event} within {RACE_LIMIT_S} s: {self.events[-3:]}") from None
            if item is None:
                self.err.flush()
                stderr = Path(self.err.name).read_text()[-2000:]
                raise Mismatch(f"a node ended before {event}: {self.events[-3:]}\n{stderr}")
            self.events.append(item)
        return found[0]

    def finish(self) -> int:
        try:
            code = self.proc.wait(timeout=RACE_LIMIT_S)
            while (item := self._lines.get(timeout=RACE_LIMIT_S)) is not None:
                self.events.append(item)
            return code
        except (subprocess.TimeoutExpired, queue.Empty):
            raise Mismatch(f"a node did not end within {RACE_LIMIT_S} s: {self.events[-3:]}") from None
        finally:
            self.proc.kill()
            self.err.close()


def race(host_python: Path, join_python: Path, root: Path) -> str:
    """A one-lap race between a node of each build; what they agreed on."""
    room = ("--track", "builtin:track-01", "--laps", "1", "--min-players", "2", "--max-players", "2",
            "--spectators", "0", "--time-limit", "60")
    host = Node(host_python, root / "host", "host", *room, "--auto-ready", "--listen", "127.0.0.1:0")
    nodes = [host]
    try:
        invite = host.wait_for("room-created")["invites"]["participant"]
        nodes.append(Node(join_python, root / "join", "join", invite, "--auto-ready", "--listen", "127.0.0.1:0"))
        results = [node.wait_for("result") for node in nodes]
        codes = [node.finish() for node in nodes]
    finally:
        for node in nodes:
            node.proc.kill()
    if codes != [0, 0] or any(r["outcome"] != "finished" for r in results):
        raise Mismatch(f"the race did not finish on both: exit {codes}, outcomes {[r['outcome'] for r in results]}")
    if any(r["disagreements"] for r in results) or min(r["agreed_hashes"] for r in results) < 5:
        raise Mismatch(f"the builds' state hashes did not agree: {[(r['agreed_hashes'], r['disagreements']) for r in results]}")
    if results[0]["standings"] != results[1]["standings"]:
        raise Mismatch(f"the standings differ: {results[0]['standings']} / {results[1]['standings']}")
    return f"a race between them: {min(r['agreed_hashes'] for r in results)} checksum votes, every one agreed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Config.parse, action="append", metavar="PYTHON:NUMPY",
                        help=f"a build to compare (repeatable; default {' and '.join(DEFAULT_CONFIGS)})")
    args = parser.parse_args(argv)
    configs = args.config or [Config.parse(text) for text in DEFAULT_CONFIGS]
    with tempfile.TemporaryDirectory(prefix="open4wd-cross-") as tmp:
        root = Path(tmp)
        try:
            with ThreadPoolExecutor(len(configs)) as pool:  # the builds compile at the same time
                pythons = dict(zip(configs, pool.map(lambda c: build(c, root), configs), strict=True))
            reports = {c.name: figures(c, python, root) for c, python in pythons.items()}
            lines = compare(reports)
            lines.append(race(pythons[configs[0]], pythons[configs[-1]], root))
        except Mismatch as failed:
            print(f"cross-interpreter check FAILED: {failed}", file=sys.stderr)
            return 1
    for line in lines:
        print(f"cross-interpreter: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
