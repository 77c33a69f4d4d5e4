"""Static guarantees of the consensus path: integer arithmetic only, no forbidden imports."""

import ast

import pytest
from tests.layout import REPO_ROOT

SIM_CORE = REPO_ROOT / "sim_core"
CONSENSUS_MODULES = ("constants", "step/aero", "step/contact", "specs/inputs", "intmath", "state/layout", "step/model",
                     "step/physics", "step/ranking", "specs/route", "step/rules", "state/codec", "step/sweeps", "step/thermal",
                     "specs/track", "specs/vehicle", "world")
FORBIDDEN_IMPORTS = {"trio", "protocol", "open4wd_node", "random", "time", "math.sin", "numpy"}


def _tree(name: str) -> ast.Module:
    return ast.parse((SIM_CORE / f"{name}.py").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", CONSENSUS_MODULES)
def test_no_float_literal_true_division_or_power(name):
    for node in ast.walk(_tree(name)):
        assert not (isinstance(node, ast.Constant) and isinstance(node.value, float)), f"{name}: float literal"
        assert not isinstance(node, (ast.Div, ast.Pow)) or name == "constants", f"{name}: / or ** in the step"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("float", "pow", "round"), f"{name}: {node.func.id}()"


@pytest.mark.parametrize("name", CONSENSUS_MODULES + ("harness/synctest", "harness/scripted", "__init__"))
def test_no_forbidden_imports(name):
    for node in ast.walk(_tree(name)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for imported in names:
            assert imported.split(".")[0] not in FORBIDDEN_IMPORTS and imported not in FORBIDDEN_IMPORTS, \
                f"{name} imports {imported}"
