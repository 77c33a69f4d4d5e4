"""The wheel's build environment (``[build-system] requires``) holds only what compiling the simulation's
frame needs: setuptools, wheel and mypy (whose mypyc compiles), mypy pinned as the test extra pins it, so
that the modules the node runs compiled are checked by the mypy the project's checks use. The frame
imports nothing but the standard library and sim_core (``sim_core/compiled.py``), so no runtime dependency
belongs in the build."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_build_needs_only_the_compiler_and_pins_mypy_as_the_checks_do():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    build = {(r := Requirement(text)).name: r.specifier for text in project["build-system"]["requires"]}
    test = {(r := Requirement(text)).name: r.specifier for text in project["project"]["optional-dependencies"]["test"]}
    runtime = {Requirement(text).name for text in project["project"]["dependencies"]}
    assert set(build) == {"setuptools", "wheel", "mypy"}
    assert build["mypy"] == test["mypy"]
    assert not set(build) & runtime
