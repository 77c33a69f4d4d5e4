"""Build hook: the simulation's frame compiled to C with mypyc where the machine can compile it, and a build
record stamped into the package.

Everything else about the package is declared in ``pyproject.toml``. This file exists for two decisions:

- One performance boundary. Only synchronous, self-contained numeric code is compiled: the modules of a
  frame, listed once in ``sim_core/compiled.py`` (``COMPILED_MODULES``), which mypyc makes about 1.5×
  faster for an 8-car step (docs/sim.md, "The compiled step"). The world and the state codec that judge
  what a caller or a peer passes, the race core and the node's shell stay plain Python. The sources ship
  beside the compiled modules, so the package is the same program either way:

  - a wheel (``pip install .``) compiles when it can; when mypyc or the C compiler is missing or fails,
    the wheel is pure Python (all modules compiled or none: a half-compiled group cannot import);
  - an editable install (``pip install -e .``) is pure Python, so that an edit of a source takes effect;
  - ``OPEN4WD_COMPILE=0`` never compiles, ``OPEN4WD_COMPILE=1`` must compile (a failure fails the build).

- The build says what it produced, even under ``pip -q``, which hides this file's messages: every build
  writes ``open4wd_node/build_record.json`` into the package (the modules it compiled, or why none; the
  git commit of the checkout it was built from; when), which ``open4wd-node version`` reports and
  ``open4wd_node.runtime.build_info`` gives the node's version record its ``commit_hash`` from.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
COMPILED_MODULES: tuple[str, ...] = runpy.run_path(str(HERE / "sim_core" / "compiled.py"))["COMPILED_MODULES"]
SOURCES = [module.replace(".", "/") + ".py" for module in COMPILED_MODULES]
RECORD = Path("open4wd_node") / "build_record.json"
CHOICE = os.environ.get("OPEN4WD_COMPILE", "auto")
BUILDS = {"bdist_wheel", "build", "build_ext", "install"}  # the commands that build modules (not metadata)
PACKAGES = ("sim_core", "protocol", "open4wd_node", "open4wd_base")


def _note(message: str) -> None:
    print(f"open4wd-node build: {message}", file=sys.stderr)


def _commit() -> str | None:
    """The checkout's git commit (``-dirty`` when its tracked files differ from it), or None outside a checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE, capture_output=True,
                               text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _record(build_lib: str, compiled: list[str], why_not: str | None) -> None:
    """Write the build record into the package being built (``build_lib``) and say it on stderr."""
    record = {"compiled": compiled, "not_compiled_because": why_not, "commit": _commit(),
              "built_at_ms": int(time.time() * 1000)}
    path = Path(build_lib) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    _note(f"compiled {len(compiled)} modules of sim_core" if compiled else f"pure Python ({why_not})")


class StampingBuildPy(build_py):
    """Copies the packages and stamps the build record of a pure build; ``AllOrNoneBuildExt`` replaces it
    when the modules were compiled."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode and not EXTENSIONS:
            _record(self.build_lib, [], WHY_NOT)


class AllOrNoneBuildExt(build_ext):
    """Builds the compiled group, or, when the compiler fails and compiling was not demanded, removes what
    it built and leaves the pure-Python package (the sources are in the wheel either way)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # a compiler's failure has many types (CompileError, LinkError, OSError)
            if CHOICE == "1":
                raise
            for extension in self.extensions:
                Path(self.get_ext_fullpath(extension.name)).unlink(missing_ok=True)
            _record(self.build_lib, [], f"the C compiler failed: {type(exc).__name__}: {exc}")
            return
        if not self.inplace:
            _record(self.build_lib, list(COMPILED_MODULES), None)


def _forget_compiled_leftovers() -> None:
    """Remove compiled modules an earlier build left in ``build/``: a build copies that directory into its
    wheel, where a stale compiled module (of this list or of an older one) would shadow its source."""
    for package in PACKAGES:
        for leftover in (*Path("build").glob(f"lib*/{package}/**/*.so"), *Path("build").glob(f"lib*/{package}/**/*.pyd")):
            leftover.unlink()
    for leftover in Path("build").glob("lib*/*__mypyc*"):
        leftover.unlink()


def _extensions() -> tuple[list[Any], str | None]:
    """The extensions to build, or none and why."""
    if CHOICE not in ("auto", "0", "1"):
        raise SystemExit(f"open4wd-node build: OPEN4WD_COMPILE must be auto, 0 or 1, not {CHOICE!r}")
    if CHOICE == "0":
        return [], "OPEN4WD_COMPILE=0"
    if not BUILDS & set(sys.argv):
        return [], "not a build of modules"
    if CHOICE == "auto" and "editable_wheel" in sys.argv:
        return [], "an editable install, so that edits of the sources take effect"
    try:
        from mypyc.build import mypycify
    except ImportError as exc:  # a build without its declared requirements (no build isolation)
        if CHOICE == "1":
            raise
        return [], f"mypyc is not available ({exc})"
    try:  # mypy reads pyproject.toml; its sections for modules not compiled here are not a reason to fail
        return mypycify(["--no-warn-unused-configs", *SOURCES], opt_level="3", group_name="sim_core_compiled"), None
    except (Exception, SystemExit) as exc:  # e.g. a newer mypy in the declared range that reports new errors
        if CHOICE == "1":
            raise
        return [], f"mypyc could not compile the step: {exc!r}"


os.chdir(HERE)  # mypyc names modules by their paths from here; build/ is here
if BUILDS & set(sys.argv):
    _forget_compiled_leftovers()
EXTENSIONS, WHY_NOT = _extensions()
setup(ext_modules=EXTENSIONS, cmdclass={"build_py": StampingBuildPy, "build_ext": AllOrNoneBuildExt})
