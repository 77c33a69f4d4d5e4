"""The wheel's build environment (``[build-system] requires``) pins each runtime dependency it needs exactly
as ``[project] dependencies`` does: mypyc compiles the race's shell against those libraries' types
(pyproject.toml, setup.py), and a build against another version than the one installed beside it would
check the shell against types the node never runs with."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_every_runtime_dependency_the_build_needs_is_pinned_as_the_node_pins_it():
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    runtime = {(r := Requirement(text)).name: r.specifier for text in project["project"]["dependencies"]}
    build = {(r := Requirement(text)).name: r.specifier for text in project["build-system"]["requires"]}
    shared = {name for name in build if name in runtime}
    assert {"trio", "structlog", "cryptography", "numpy"} <= shared
    assert {name: build[name] for name in shared} == {name: runtime[name] for name in shared}
