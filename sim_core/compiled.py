"""Which modules of ``sim_core`` a wheel compiles with mypyc, and which of them run compiled in this process.

The one performance boundary of the package: only synchronous, self-contained numeric code is compiled,
the frame of the simulation (``sim_core.step``), the state's layout and the integer maths it runs on.
Everything else, the ``World`` that judges what callers pass, the state codec that judges a peer's
snapshot, the race core and the node's shell, is plain Python: a compiled function refuses an argument
of another type with a ``TypeError`` before any coded check can answer, so the doors stay interpreted.

``setup.py`` reads ``COMPILED_MODULES`` from this file (without importing the package), so the list the
build compiles and the list ``open4wd-node version`` reports are the same list.
"""

from __future__ import annotations

from importlib.util import find_spec

COMPILED_MODULES = (
    "sim_core.intmath",
    "sim_core.state.layout",
    "sim_core.step.aero",
    "sim_core.step.contact",
    "sim_core.step.curves",
    "sim_core.step.conveyors",
    "sim_core.step.fluids",
    "sim_core.step.footprint",
    "sim_core.step.frame",
    "sim_core.step.launch",
    "sim_core.step.magnets",
    "sim_core.step.model",
    "sim_core.step.obstacles",
    "sim_core.step.physics",
    "sim_core.step.placement",
    "sim_core.step.ranking",
    "sim_core.step.rotors",
    "sim_core.step.rules",
    "sim_core.step.sweeps",
    "sim_core.step.thermal",
    "sim_core.step.weapons",
    "sim_core.step.weather",
)
"""The modules a frame runs, compiled all together or not at all (a half-compiled group cannot import)."""


def is_compiled(module: str) -> bool:
    """Whether ``module`` would load from a compiled extension here; nothing is imported."""
    spec = find_spec(module)
    return spec is not None and spec.origin is not None and not spec.origin.endswith(".py")


def compiled_modules() -> list[str]:
    """The modules of ``COMPILED_MODULES`` that load compiled in this process (all or none, in a wheel's install)."""
    return [module for module in COMPILED_MODULES if is_compiled(module)]


def step_is_compiled() -> bool:
    """True when the frame (``sim_core.step.frame``) loads compiled: what the benchmarks print beside a figure."""
    return is_compiled("sim_core.step.frame")
