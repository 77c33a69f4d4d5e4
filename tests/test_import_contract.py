"""The import contract (docs/layout.md, "Rules that keep it so"): which package may import what, read from the source itself.

- ``protocol`` (sans-IO) imports neither trio nor the shell nor the simulation;
- ``sim_core`` (pure) imports neither trio nor the shell nor the protocol;
- ``open4wd_base`` (shared by all three) imports only the standard library;
- the shell ``open4wd_node`` never reaches into a private (``_``) name of the others.
"""

import ast
import sys
from pathlib import Path

import pytest

from tests.layout import REPO_ROOT

THIRD_PARTY = {
    "protocol": {"cryptography", "msgpack", "msgspec", "nacl"},  # nacl: Ed25519 through libsodium (protocol/identity/ed25519.py)
    "sim_core": {"numpy", "pygltflib", "DracoPy"},
    "open4wd_base": set(),
}
OWN = {"protocol": {"protocol", "open4wd_base"}, "sim_core": {"sim_core", "open4wd_base"}, "open4wd_base": {"open4wd_base"}}
CORES = ("protocol", "sim_core", "open4wd_base")


def modules(package: str) -> list[Path]:
    return sorted((REPO_ROOT / package).rglob("*.py"))


def imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(module, imported names, line) for every import statement, relative imports made absolute."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            found.append((node.module or "", [alias.name for alias in node.names], node.lineno))
    return found


@pytest.mark.parametrize("package", CORES)
def test_the_cores_import_only_what_they_may(package):
    allowed = set(sys.stdlib_module_names) | THIRD_PARTY[package] | OWN[package]
    wrong = [f"{path.relative_to(REPO_ROOT)}:{line} imports {module}"
             for path in modules(package) for module, _, line in imports(path) if module.split(".")[0] not in allowed]
    assert wrong == []


def test_the_shell_never_reaches_into_private_names():
    wrong = []
    for path in modules("open4wd_node"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}  # local name -> module of a core package, for attribute access
        for module, names, line in imports(path):
            if module.split(".")[0] in CORES:
                wrong += [f"{path.relative_to(REPO_ROOT)}:{line} imports {module}.{name}" for name in names
                          if name.startswith("_") and name != "__version__"]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases.update({(a.asname or a.name.split(".")[0]): a.name for a in node.names if a.name.split(".")[0] in CORES})
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in CORES:
                aliases.update({(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in aliases):
                wrong.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}")
    assert wrong == []
