"""Every module, public class, function and method of the four packages says what it is (and what it
raises): a reader should never have to reverse-engineer a public name (docs/layout.md)."""

import ast

import pytest
from tests.layout import REPO_ROOT

PACKAGES = ("protocol", "sim_core", "open4wd_node", "open4wd_base")
MODULES = sorted(str(path.relative_to(REPO_ROOT)) for package in PACKAGES for path in (REPO_ROOT / package).rglob("*.py"))


def _undocumented(body: list[ast.stmt], prefix: str = "") -> list[str]:
    missing = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            if ast.get_docstring(node) is None:
                missing.append(f"{prefix}{node.name} (line {node.lineno})")
            if isinstance(node, ast.ClassDef):
                missing += _undocumented(node.body, f"{prefix}{node.name}.")
    return missing


@pytest.mark.parametrize("module", MODULES)
def test_public_names_have_docstrings(module):
    tree = ast.parse((REPO_ROOT / module).read_text(encoding="utf-8"))
    assert ast.get_docstring(tree) is not None, f"{module} has no module docstring"
    assert _undocumented(tree.body) == [], f"{module}: undocumented public names"


def test_the_check_sees_a_missing_docstring():
    tree = ast.parse("class Shown:\n    def method(self):\n        pass\n\n\ndef _private():\n    pass\n")
    assert _undocumented(tree.body) == ["Shown (line 1)", "Shown.method (line 2)"]
