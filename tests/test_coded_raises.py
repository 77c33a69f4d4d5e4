"""Every test that expects a coded error checks its code, not only its class.

A coded error is any exception class of the repository that sets a ``code`` (``CodedError``,
``LinkClosed``) or derives from one (``ProtocolError``, ``UserError``, ``AssetRejected``, …): found by
reading the source (``repository_classes``), so a new family is held to the rule without being listed
here. A ``pytest.raises`` of such a class must be ``tests.coded.raises_coded`` (which checks the code), or
bind the ``ExceptionInfo`` and read its ``.value.code`` in an ``assert`` (or return it, or keep it for a
later ``assert``) before the name is bound again; a helper that returns the error itself is held to the
same rule at each of its calls (``unchecked_raises``). ``match=`` alone does not count: it reads the
message, which may say the same thing for several codes. Exceptions without a code (``ValueError``,
trio's) are out of scope.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.layout import REPO_ROOT, TESTS_DIR

SOURCE_DIRS = ("open4wd_base", "protocol", "sim_core", "open4wd_node", "fuzz", "tests")


@dataclass(frozen=True)
class Unchecked:
    """A ``pytest.raises`` of a coded class whose code nothing checks, or a call of a helper that returns
    such an error whose code is not read."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def python_files(folders: tuple[str, ...], root: Path = REPO_ROOT) -> list[Path]:
    """The Python files below ``folders`` of ``root``, in path order."""
    return sorted(path for folder in folders for path in (root / folder).rglob("*.py"))


def _sets_code(cls: ast.ClassDef) -> bool:
    """Whether a class gives its instances (``self.code = …``) or itself (``code = …``) a code."""
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == "code" and isinstance(target.value, ast.Name):
                if target.value.id == "self":
                    return True
            if isinstance(target, ast.Name) and target.id == "code" and node in cls.body and getattr(node, "value", None):
                return True
    return False


def _last_name(node: ast.expr) -> str | None:
    """``ProtocolError`` of ``ProtocolError`` or ``errors.ProtocolError``; None for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


@dataclass(frozen=True)
class ClassDefinition:
    """One ``class`` statement: its name, the names of its bases, and whether it gives itself a code."""

    name: str
    bases: frozenset[str]
    sets_code: bool


def class_definitions(trees: list[ast.Module]) -> list[ClassDefinition]:
    """Every class statement of ``trees``."""
    return [
        ClassDefinition(node.name, frozenset(filter(None, map(_last_name, node.bases))), _sets_code(node))
        for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
    ]


def coded_classes(definitions: list[ClassDefinition]) -> set[str]:
    """The names of the classes with a code: those that set one, and every class derived from one."""
    coded = {definition.name for definition in definitions if definition.sets_code}
    while derived := {definition.name for definition in definitions if definition.bases & coded} - coded:
        coded |= derived
    return coded


def ambiguous_names(definitions: list[ClassDefinition], coded: set[str]) -> set[str]:
    """Names given both to a coded class and to a class without a code: a ``pytest.raises`` names a class
    by its name, which would not say which one is meant."""
    return {d.name for d in definitions if d.name in coded and not d.sets_code and not d.bases & coded}


def _expected_names(call: ast.Call) -> list[str]:
    """The class names a ``pytest.raises`` call expects (one, or each of a tuple)."""
    expected = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "expected_exception"), None)
    if expected is None:
        return []
    elements = expected.elts if isinstance(expected, ast.Tuple) else [expected]
    return [name for name in map(_last_name, elements) if name is not None]


def _is_pytest_raises(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "raises" and (
        isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest"
    )


def _reads_code(node: ast.AST, owner: str) -> bool:
    """Whether ``node`` reads ``<owner>.code`` (``owner`` a name, or ``info.value``)."""
    return any(isinstance(inner, ast.Attribute) and inner.attr == "code" and ast.unparse(inner.value) == owner
               for inner in ast.walk(node))


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name`` (an assignment, a ``with … as``, a loop target)."""
    return any(isinstance(inner, ast.Name) and inner.id == name and isinstance(inner.ctx, ast.Store) for inner in ast.walk(node))


def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _own_statements(scope: ast.AST) -> list[ast.stmt]:
    """Every statement of a scope (a module or a function), nested blocks included, but not those of the
    functions and classes defined in it: a check must sit in the scope of the ``with`` it checks."""
    found: list[ast.stmt] = []
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.stmt):
            found.append(node)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


def unchecked_raises(tree: ast.Module, coded: set[str], path: str = "<test>") -> list[Unchecked]:
    """Every ``pytest.raises`` of a coded class in ``tree`` whose code nothing checks.

    Checked is a ``with pytest.raises(…) as name`` followed, in the same scope and before ``name`` is
    bound again, by an ``assert`` that reads ``name.value.code``, or by a ``return`` or an assignment of
    it (``codes[side] = name.value.code``, asserted later). A
    helper that returns ``name.value`` hands the error to its callers: then each call of it in the module
    must have its result's ``.code`` read (``_unchecked_calls``). The call form (``pytest.raises(X,
    function, …)``) and a ``with`` that binds nothing are never checked."""
    parents = _parents(tree)
    found = []
    for call in ast.walk(tree):
        if not _is_pytest_raises(call):
            continue
        assert isinstance(call, ast.Call)
        names = _expected_names(call)
        if not set(names) & coded:
            continue
        item = parents.get(call)
        if isinstance(item, ast.withitem) and isinstance(item.optional_vars, ast.Name):
            block = parents[item]
            assert isinstance(block, ast.stmt)
            scope = _scope_of(block, parents)
            name = item.optional_vars.id
            after = _after(block, _own_statements(scope), name, parents)
            if any(_reads_code(statement, f"{name}.value") for statement in after if isinstance(statement, CHECKS)):
                continue
            returned = any(isinstance(statement, ast.Return) and statement.value is not None
                           and ast.unparse(statement.value) == f"{name}.value" for statement in after)
            if returned and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [Unchecked(path, line, f"the code of the {' | '.join(names)} that {scope.name}() returns is not read")
                          for line in _unchecked_calls(tree, parents, scope.name)]
                continue
        found.append(Unchecked(path, call.lineno, f"pytest.raises({' | '.join(names)}) checks no code"))
    return sorted(found, key=lambda unchecked: unchecked.line)


CHECKS = (ast.Assert, ast.Return, ast.Assign)
"""Where a read of the code counts as its check: an ``assert``, or handed on to be checked (returned by a
helper, kept for a later ``assert``)."""


def _scope_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The function (or the module) whose own statement ``node`` is."""
    scope = parents[node]
    while not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        scope = parents[scope]
    return scope


def _after(block: ast.stmt, statements: list[ast.stmt], name: str, parents: dict[ast.AST, ast.AST]) -> list[ast.stmt]:
    """The statements of the scope after ``block``, up to the next one that binds ``name`` again; those of
    the other branch of an ``if`` that ``block`` is in never run after it."""
    end = block.end_lineno or block.lineno
    elsewhere = set()
    node: ast.AST = block
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.If):
            branch = parent.orelse if node in parent.body else parent.body if node in parent.orelse else []
            elsewhere |= {inner for statement in branch for inner in ast.walk(statement)}
        node = parent
    later = []
    for statement in statements:
        if statement.lineno <= end or statement in elsewhere:
            continue  # the block itself (nothing in it runs after the raise), or another branch
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            if any(item.optional_vars is not None and _binds(item.optional_vars, name) for item in statement.items):
                break
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = statement.target if isinstance(statement, (ast.For, ast.AsyncFor)) else statement
            if _binds(targets, name):
                break
        later.append(statement)
    return later


def _unchecked_calls(tree: ast.Module, parents: dict[ast.AST, ast.AST], helper: str) -> list[int]:
    """The lines of the calls of ``helper`` whose result's ``.code`` is not read: neither at once
    (``helper(…).code``) nor, when the result is assigned to a name, by a later ``assert`` of its scope."""
    missed = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and _last_name(call.func) == helper):
            continue
        result: ast.AST = call
        while isinstance(parents[result], ast.Await):
            result = parents[result]
        user = parents[result]
        if isinstance(user, ast.Attribute) and user.attr == "code":
            continue
        if isinstance(user, ast.Assign) and len(user.targets) == 1 and isinstance(user.targets[0], ast.Name):
            name = user.targets[0].id
            after = _after(user, _own_statements(_scope_of(user, parents)), name, parents)
            if any(_reads_code(statement, name) for statement in after if isinstance(statement, ast.Assert)):
                continue
        missed.append(call.lineno)
    return missed


TEXTS = {path: path.read_text(encoding="utf-8") for path in python_files(SOURCE_DIRS)}
CLASS_STATEMENT = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?", re.MULTILINE)
MAY_SET_CODE = re.compile(r"\bcode[ \t]*(?::[^=\n]*)?=[^=]")


def _may_define(text: str, coded: set[str]) -> bool:
    """Whether a file may hold a class that sets a code or is (or derives from) one of ``coded``: the
    text is searched first, so that only those files are parsed (the parse decides)."""
    if MAY_SET_CODE.search(text):
        return True
    return any(name in coded or set(re.findall(r"\w+", bases or "")) & coded for name, bases in CLASS_STATEMENT.findall(text))


@functools.cache
def repository_classes() -> tuple[list[ClassDefinition], frozenset[str]]:
    """The class statements of the repository that the rule needs, and the names of the coded classes:
    every file that may define one is parsed, again as the coded names grow, until they stop growing."""
    parsed: dict[Path, list[ClassDefinition]] = {}
    coded: set[str] = set()
    while wanted := [path for path, text in TEXTS.items() if path not in parsed and _may_define(text, coded)]:
        parsed.update((path, class_definitions([ast.parse(TEXTS[path], str(path))])) for path in wanted)
        coded = coded_classes([definition for found in parsed.values() for definition in found])
    return [definition for found in parsed.values() for definition in found], frozenset(coded)


def test_the_coded_families_are_found():
    """The scan finds the families it exists for (a scan that found nothing would pass every test)."""
    _, coded = repository_classes()
    assert {"CodedError", "PeerError", "LocalError", "SimError", "ProtocolError", "UserError", "UsageError",
            "AssetRejected", "LinkClosed"} <= coded
    assert not {"ValueError", "EntryInvalid", "CircuitOver", "Finding"} & coded


def test_coded_class_names_are_unambiguous():
    definitions, coded = repository_classes()
    assert ambiguous_names(definitions, set(coded)) == set()


TEST_FILES = sorted(path for path, text in TEXTS.items() if path.is_relative_to(TESTS_DIR) and "raises" in text)


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda path: str(path.relative_to(TESTS_DIR)))
def test_every_coded_raises_checks_its_code(path):
    tree = ast.parse(TEXTS[path], str(path))
    unchecked = unchecked_raises(tree, set(repository_classes()[1]), str(path.relative_to(REPO_ROOT)))
    assert unchecked == [], "use tests.coded.raises_coded, or assert on .value.code:\n" + "\n".join(map(str, unchecked))


ERRORS_SNIPPET = '''
class CodedError(Exception):
    def __init__(self, code):
        self.code = code


class LocalError(CodedError):
    pass


class Finding:
    code: str
'''

SNIPPET = '''
import pytest
from tests.coded import raises_coded


class ShellError(LocalError):
    pass


def test_unchecked():
    with pytest.raises(LocalError):
        decode(b"")
    with pytest.raises(errors.ShellError, match="bad-frame"):
        decode(b"")
    with pytest.raises((ValueError, LocalError)) as caught:
        decode(b"")
    assert caught.value.message
    pytest.raises(LocalError, decode, b"")


def test_checked_only_by_a_later_with():
    with pytest.raises(LocalError) as caught:
        decode(b"")
    with pytest.raises(LocalError) as caught:
        decode(b"x")
    assert caught.value.code == "bad-frame"


def test_checked():
    with raises_coded(LocalError, "bad-frame"):
        decode(b"")
    with pytest.raises(LocalError) as caught:
        decode(b"")
    assert caught.value.code == "bad-frame"
    with pytest.raises(ValueError):
        int("x")
    for data in (b"", b"x"):
        with pytest.raises(LocalError) as refused:
            decode(data)
        assert refused.value.code in {"empty", "short"}
    with pytest.raises(LocalError) as caught:
        decode(b"")
    codes = {"first": caught.value.code}
    assert codes == {"first": "empty"}


def code_of(data):
    with pytest.raises(LocalError) as caught:
        decode(data)
    return caught.value.code


def refusal(data):
    with pytest.raises(ShellError) as caught:
        decode(data)
    return caught.value


def test_helpers():
    assert code_of(b"") == "empty"
    assert refusal(b"").code == "empty"
    error = refusal(b"x")
    assert error.code == "short"
    error = refusal(b"y")
    assert error.message
    if data:
        error = refusal(data)
    else:
        error = refusal(b"z")
    assert error.code == "short"
'''


def test_the_check_sees_unchecked_blocks_and_accepts_checked_ones():
    definitions = class_definitions([ast.parse(ERRORS_SNIPPET), ast.parse(SNIPPET)])
    coded = coded_classes(definitions)
    assert coded == {"CodedError", "LocalError", "ShellError"}
    assert [str(found) for found in unchecked_raises(ast.parse(SNIPPET), coded)] == [
        "<test>:11: pytest.raises(LocalError) checks no code",
        "<test>:13: pytest.raises(ShellError) checks no code",
        "<test>:15: pytest.raises(ValueError | LocalError) checks no code",
        "<test>:18: pytest.raises(LocalError) checks no code",
        "<test>:22: pytest.raises(LocalError) checks no code",
        "<test>:64: the code of the ShellError that refusal() returns is not read",
    ]


def test_a_name_of_a_coded_class_and_of_another_class_is_ambiguous():
    definitions = class_definitions([ast.parse(ERRORS_SNIPPET), ast.parse("class LocalError:\n    pass\n")])
    assert ambiguous_names(definitions, coded_classes(definitions)) == {"LocalError"}
