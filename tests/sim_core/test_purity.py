"""Static guarantees of the consensus path: integer arithmetic only, no forbidden imports.

The consensus modules are found, not listed: every module of the packages a step runs (``sim_core/step``,
``sim_core/specs``, ``sim_core/state``), so a new module there is checked from its first commit, plus the
few top-level modules the step uses (the constants, the integer maths, the world that drives the step).
"""

import ast

import pytest
from tests.layout import REPO_ROOT

SIM_CORE = REPO_ROOT / "sim_core"
CONSENSUS_PACKAGES = ("step", "specs", "state")
CONSENSUS_TOP_LEVEL = ("constants", "intmath", "world")
FORBIDDEN_IMPORTS = {"trio", "protocol", "open4wd_node", "random", "time", "numpy"}
TRANSCENDENTAL = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "expm1", "exp2",
                  "log", "log1p", "log2", "log10", "pow", "sqrt", "cbrt", "hypot", "dist", "fsum"}
"""``math``'s float functions: none may reach the step (its integer ``isqrt`` may)."""


def _modules(package: str) -> list[str]:
    return sorted(path.relative_to(SIM_CORE).with_suffix("").as_posix() for path in (SIM_CORE / package).rglob("*.py"))


CONSENSUS_MODULES = tuple(m for p in CONSENSUS_PACKAGES for m in _modules(p)) + CONSENSUS_TOP_LEVEL


def _tree(name: str) -> ast.Module:
    return ast.parse((SIM_CORE / f"{name}.py").read_text(encoding="utf-8"))


def test_the_consensus_modules_are_found_in_their_packages():
    assert {"step/frame", "step/weather", "specs/items", "specs/route", "state/codec", "state/__init__"} <= set(CONSENSUS_MODULES)
    assert len(CONSENSUS_MODULES) >= 39  # every module of the three packages, __init__ included, and the top level


@pytest.mark.parametrize("name", CONSENSUS_MODULES)
def test_no_float_literal_true_division_or_power(name):
    for node in ast.walk(_tree(name)):
        assert not (isinstance(node, ast.Constant) and isinstance(node.value, float)), f"{name}: float literal"
        assert not isinstance(node, (ast.Div, ast.Pow)) or name == "constants", f"{name}: / or ** in the step"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("float", "pow", "round"), f"{name}: {node.func.id}()"


def _forbidden_use(tree: ast.Module) -> list[str]:
    """Every forbidden import (a module, or a float function of ``math``) and every ``math.<float
    function>`` read in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] in FORBIDDEN_IMPORTS]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module.split(".")[0] in FORBIDDEN_IMPORTS:
                found.append(module)
            elif module == "math":
                found += [f"math.{alias.name}" for alias in node.names if alias.name in TRANSCENDENTAL]
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math"
              and node.attr in TRANSCENDENTAL):
            found.append(f"math.{node.attr}")
    return found


@pytest.mark.parametrize("name", CONSENSUS_MODULES + ("harness/synctest", "harness/scripted", "__init__"))
def test_no_forbidden_imports(name):
    assert _forbidden_use(_tree(name)) == [], f"{name} uses what the step may not"


@pytest.mark.parametrize(("source", "found"), [
    ("import numpy as np", ["numpy"]),
    ("from random import Random", ["random"]),
    ("from math import isqrt, cos", ["math.cos"]),
    ("import math\nx = math.exp(1)", ["math.exp"]),
    ("import math\nx = math.isqrt(9)", []),
])
def test_the_import_check_finds_each_kind_of_forbidden_use(source, found):
    assert _forbidden_use(ast.parse(source)) == found
