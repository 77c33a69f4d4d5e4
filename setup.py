"""Build hook: the simulation's step, the race session and the race's shell compiled to C with mypyc where
the machine can compile them.

Everything else about the package is declared in ``pyproject.toml``. This file exists for one decision
(docs/sim.md "The compiled step", docs/node.md "The compiled race core"): the modules a frame runs
(``COMPILED``: the step; ``RACE_CORE``: the sans-IO race session, with the CPU budget's accounting and
the ingress buckets that every message passes; ``RACE_SHELL``: the links, the mesh and the runner around
it) are compiled unchanged by mypyc, which makes an 8-car step about 1.5× faster and a race node's
bookkeeping and messages cheaper. The sources stay the truth
and ship beside the compiled modules, so the package is the same program either way:

- a wheel (``pip install .``) compiles when it can; if the compiler fails, the wheel is pure Python and
  the build says so (all modules compiled or none: a half-compiled group cannot import);
- an editable install (``pip install -e .``) is pure Python, so that an edit of a source takes effect;
- ``OPEN4WD_COMPILE=0`` never compiles, ``OPEN4WD_COMPILE=1`` must compile (a failure fails the build).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

COMPILED = [
    "sim_core/intmath.py",
    "sim_core/state/layout.py",
    "sim_core/step/aero.py",
    "sim_core/step/contact.py",
    "sim_core/step/curves.py",
    "sim_core/step/conveyors.py",
    "sim_core/step/fluids.py",
    "sim_core/step/footprint.py",
    "sim_core/step/frame.py",
    "sim_core/step/launch.py",
    "sim_core/step/magnets.py",
    "sim_core/step/model.py",
    "sim_core/step/obstacles.py",
    "sim_core/step/physics.py",
    "sim_core/step/placement.py",
    "sim_core/step/ranking.py",
    "sim_core/step/rotors.py",
    "sim_core/step/rules.py",
    "sim_core/step/sweeps.py",
    "sim_core/step/thermal.py",
    "sim_core/step/weapons.py",
    "sim_core/step/weather.py",
]
"""The modules of a frame (``sim_core.step``: the frame and its stages), the state's layout and integer maths.
``sim_core.world`` and the state codec stay interpreted: they are the doors that judge whatever a caller or
a peer passes (a compiled function refuses an argument of another type with a ``TypeError`` before its own
checks can answer with the project's coded errors), and the codec's work is already done in C by
``struct`` (``sim_core/step/frame.py``)."""

RACE_CORE = [
    "protocol/race/costs.py",
    "protocol/race/inputs.py",
    "protocol/race/peers.py",
    "protocol/race/recovery.py",
    "protocol/race/session.py",
    "protocol/race/sync.py",
    "open4wd_node/race/part_clock.py",
    "protocol/link/token_bucket.py",
    "protocol/link/violations.py",
]
"""The race session and the parts it is composed of that run for every input and frame (docs/node.md, "The
compiled race core"). What a peer sends reaches them only as messages the wire decoder has already checked
field by field, type by type (``protocol.encoding``, interpreted), so a compiled function's own type checks
never meet a peer's bytes; the messages and actions stay interpreted classes that every layer builds. The
digests (``signing.py``) stay interpreted too: joins of cached bytes, they ran slower compiled. The CPU
budget's accounting core (``part_clock.py``, no trio in it) is compiled with them: the session calls it at
every part boundary; so are the link's token buckets and violation count, which every message sent and received is
charged to."""

RACE_SHELL = [
    "open4wd_node/net/link.py",
    "open4wd_node/net/link_rules.py",
    "protocol/link/noise.py",
    "open4wd_node/race/mesh.py",
    "open4wd_node/race/runner.py",
    "open4wd_node/race/pump.py",
    "open4wd_node/race/coalesce.py",
    "open4wd_node/race/log.py",
    "open4wd_node/runtime/wakeup.py",
    "open4wd_node/drivers/bot.py",
    "open4wd_node/net/outbox.py",
    "open4wd_node/race/world.py",
    "open4wd_node/runtime/clock.py",
    "open4wd_node/runtime/quiet_sleep.py",
]
"""The race's shell around the session, which runs for every message and tick: the links, their rules and
their Noise cipher, the mesh, the runner, the frame pump, ``TickSends``, the race log, ``Wakeup``, the
demo's bot, and the small pieces they call for every message or tick (the outboxes, the world's adapter,
the node clock, the pump's quiet wait): 3–5 % less CPU per node-frame, measured by mixed races
(docs/node.md, "Thirteenth pass"). These are async trio code, and mypyc compiles three constructs of async
code wrongly, so none of them may appear in a compiled module (``tests/test_compiled_sources.py`` holds
every group to that): an ``await`` in a ``finally``; one name bound by ``except ... as`` clauses of
different types in one function; and an attribute narrowed by a test (``is None``, ``isinstance``) and
read again after an ``await``, where another task may have changed it (a compiled function trusts the
narrowing; such a test goes through a method, ``Link._raise_if_closed``). The whole suite also runs
against the compiled build (``.ci/run``)."""

CHOICE = os.environ.get("OPEN4WD_COMPILE", "auto")
BUILDS = {"bdist_wheel", "build", "build_ext", "install"}  # the commands that build modules (not metadata)


def _note(message: str) -> None:
    print(f"open4wd-node build: {message}", file=sys.stderr)


def _wanted() -> bool:
    if CHOICE not in ("auto", "0", "1"):
        raise SystemExit(f"open4wd-node build: OPEN4WD_COMPILE must be auto, 0 or 1, not {CHOICE!r}")
    if CHOICE == "0" or not BUILDS & set(sys.argv):
        return False
    if CHOICE == "auto" and "editable_wheel" in sys.argv:
        _note("editable install: pure Python, so that edits of the sources take effect")
        return False
    return True


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
            _note(f"the C compiler failed ({type(exc).__name__}: {exc}); installing pure Python (slower step)")


def _forget_compiled_leftovers() -> None:
    """Remove compiled modules an earlier build left in ``build/``: a pure build copies that directory into
    its wheel, where a stale compiled module would shadow the source it was compiled from."""
    for leftover in (*Path("build").glob("lib*/sim_core/**/*.so"), *Path("build").glob("lib*/sim_core/**/*.pyd"),
                     *Path("build").glob("lib*/protocol/**/*.so"), *Path("build").glob("lib*/protocol/**/*.pyd"),
                     *Path("build").glob("lib*/open4wd_node/**/*.so"), *Path("build").glob("lib*/open4wd_node/**/*.pyd"),
                     *Path("build").glob("lib*/*__mypyc*")):
        leftover.unlink()


def _extensions() -> list[Any]:
    if not _wanted():
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:  # a build without its declared requirements (no build isolation)
        if CHOICE == "1":
            raise
        _note(f"mypyc is not available ({exc}); installing pure Python (slower step)")
        return []
    # mypy reads pyproject.toml; its sections for modules not compiled here are not a reason to fail
    groups = {"sim_core_compiled": COMPILED, "race_core_compiled": RACE_CORE, "race_shell_compiled": RACE_SHELL}
    try:
        return [extension for name, modules in groups.items()
                for extension in mypycify(["--no-warn-unused-configs", *modules], opt_level="3", group_name=name)]
    except (Exception, SystemExit) as exc:  # e.g. a newer mypy in the declared range that reports new errors
        if CHOICE == "1":
            raise
        _note(f"mypyc could not compile the step, the race core and its shell ({exc!r}); installing pure Python "
              "(slower)")
        return []


os.chdir(Path(__file__).resolve().parent)  # mypyc names modules by their paths from here; build/ is here
EXTENSIONS = _extensions()
if not EXTENSIONS and BUILDS & set(sys.argv):
    _forget_compiled_leftovers()
setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": AllOrNoneBuildExt})
