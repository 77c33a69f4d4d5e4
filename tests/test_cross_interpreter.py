"""The cross-interpreter check (``.ci/cross_interpreter.py``) compares what it should, and what it proves is
what ``pyproject.toml`` admits. The check itself builds and races in CI; here its comparison is fed reports
that differ where a real build could."""

from __future__ import annotations

import argparse
import copy
import importlib.util
import re
import sys
import tomllib
from typing import Any

import pytest
from tests.layout import REPO_ROOT
from tests.sim_core.step.test_step_golden import GOLDEN

spec = importlib.util.spec_from_file_location("cross_interpreter", REPO_ROOT / ".ci" / "cross_interpreter.py")
assert spec is not None and spec.loader is not None
cross = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = cross  # its dataclasses look their module up there
spec.loader.exec_module(cross)


def report(python: str, numpy: str) -> dict[str, Any]:
    return {
        "python": python, "numpy": numpy, "where": "/venv/lib/site-packages/sim_core/__init__.py", "compiled": True,
        "engine": "sim_core/8", "chains": {f"{s}/{seed}": list(pin) for (s, seed), pin in GOLDEN.items()},
        "synctest": {"final": "ab", "resimulated": 10}, "magnets": {"x": 1}, "weapons": {"y": 2},
        "baked": {"builtin:track-01": "11", "builtin:car-01": "22"},
    }


def test_builds_that_agree_with_the_pins_and_each_other_pass():
    lines = cross.compare({"a": report("3.11.7", "1.26.0"), "b": report("3.13.1", "2.5.5")})
    assert lines[0] == f"{len(GOLDEN)} golden chains equal to their pins in every build"
    assert "2 built-in assets baked to identical bytes" in lines


def test_one_asset_baked_differently_fails_naming_it():
    other = report("3.13.1", "2.5.5")
    other["baked"]["builtin:car-01"] = "23"
    with pytest.raises(cross.Mismatch, match=r"baked differ between a and b: builtin:car-01"):
        cross.compare({"a": report("3.11.7", "1.26.0"), "b": other})


def test_a_chain_off_its_pin_fails_even_when_both_builds_agree():
    first, second = report("3.11.7", "1.26.0"), report("3.13.1", "2.5.5")
    key = next(iter(first["chains"]))
    for built in (first, second):
        built["chains"][key] = copy.copy(built["chains"][key])
        built["chains"][key][0] = "0" * 64
    with pytest.raises(cross.Mismatch, match=rf"a: the golden chain {re.escape(key)} is"):
        cross.compare({"a": first, "b": second})


def test_a_sync_test_figure_that_differs_fails():
    other = report("3.13.1", "2.5.5")
    other["synctest"]["final"] = "ac"
    with pytest.raises(cross.Mismatch, match="synctest differ between a and b: final"):
        cross.compare({"a": report("3.11.7", "1.26.0"), "b": other})


def test_a_configuration_is_python_colon_numpy():
    assert cross.Config.parse("3.11:1.26.0") == cross.Config("3.11", "1.26.0")
    with pytest.raises(argparse.ArgumentTypeError, match="PYTHON:NUMPY"):
        cross.Config.parse("3.11")


def test_pyproject_admits_exactly_the_ends_the_check_builds():
    """``requires-python`` and the numpy pin end where the default configurations do: the oldest Python with
    the oldest numpy, the newest Python with a numpy of the pin's newest minor release."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    oldest, newest = (cross.Config.parse(text) for text in cross.DEFAULT_CONFIGS)
    python_range = re.fullmatch(r">=(\d+)\.(\d+),<(\d+)\.(\d+)", project["requires-python"])
    assert python_range is not None, project["requires-python"]
    low_major, low_minor, high_major, high_minor = map(int, python_range.groups())
    assert (oldest.python, newest.python) == (f"{low_major}.{low_minor}", f"{high_major}.{high_minor - 1}")
    (numpy_pin,) = [d for d in project["dependencies"] if d.startswith("numpy")]
    numpy_range = re.fullmatch(r"numpy>=(\d+)\.(\d+),<(\d+)\.(\d+)", numpy_pin)
    assert numpy_range is not None, numpy_pin
    low_major, low_minor, high_major, high_minor = map(int, numpy_range.groups())
    assert oldest.numpy.startswith(f"{low_major}.{low_minor}.")
    assert newest.numpy.startswith(f"{high_major}.{high_minor - 1}.")
