"""Whether this install runs the frame compiled (setup.py, docs/sim.md "The compiled step"): what
``open4wd-node version`` and the benchmarks report beside their figures, since the step's speed depends on it."""

from __future__ import annotations

from importlib.util import find_spec


def step_is_compiled() -> bool:
    """True when ``sim_core.step.frame`` would load as a compiled module; nothing of the step is imported."""
    spec = find_spec("sim_core.step.frame")
    return spec is not None and spec.origin is not None and not spec.origin.endswith(".py")
