"""The modules setup.py compiles with mypyc avoid the two constructs mypyc (2.4) compiles wrongly.

- An ``await`` inside a ``finally``: when the coroutine is awaited while its caller handles an exception, the
  ``finally`` raises that handled exception again after its ``try`` ended normally, so ``except X: await
  close()`` fails with the ``X`` it had handled (a link's timeout surfaced as the ``ProtocolError`` it had
  already turned into ``LinkClosed``). A compiled coroutine cleans up in ``except BaseException: ...; raise``
  and after the ``try`` instead.
- One name bound by ``except ... as`` clauses of different types in one function: the compiled function
  keeps one variable of the first type and raises ``TypeError`` when another type arrives
  (``except LinkClosed as exc`` then ``except PeerError as exc``). Each type gets its own name.

Both were found by running the whole suite against a build that also compiled the race's shell, the links
and the mesh among it (docs/node.md, "Twelfth pass"), and both were reproduced in isolation. The modules
compiled today have neither; this test reads the lists of compiled modules from setup.py itself and fails on
either construct, so that a module added to a group, or a later edit, cannot bring one in unseen."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUPS = ("COMPILED", "RACE_CORE")


def compiled_modules() -> list[str]:
    """Every path in setup.py's compiled groups (the literal lists, read without running setup.py)."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    groups = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
              if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id in GROUPS}
    assert set(groups) == set(GROUPS), f"setup.py no longer defines {set(GROUPS) - set(groups)}"
    return [path for group in GROUPS for path in groups[group]]


def awaits_in_finally(source: str) -> list[int]:
    """The lines of every ``finally`` block that contains an ``await``, ``async with`` or ``async for``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Try) and any(
                isinstance(inner, (ast.Await, ast.AsyncWith, ast.AsyncFor))
                for statement in node.finalbody for inner in ast.walk(statement)):
            lines.append(node.finalbody[0].lineno)
    return lines


def names_of_several_types(source: str) -> list[tuple[str, str]]:
    """(function, name) for every name that ``except ... as`` clauses of one function bind to different types."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            types: dict[str, set[str]] = {}
            for node in ast.walk(function):
                if isinstance(node, ast.ExceptHandler) and node.name and node.type is not None:
                    types.setdefault(node.name, set()).add(ast.unparse(node.type))
            found += [(function.name, name) for name, kinds in types.items() if len(kinds) > 1]
    return found


def test_no_compiled_module_awaits_in_a_finally_or_reuses_an_exception_name():
    modules = compiled_modules()
    assert "protocol/race/session.py" in modules and len(modules) > 25
    sources = {path: (ROOT / path).read_text(encoding="utf-8") for path in modules}
    assert {path: lines for path, source in sources.items() if (lines := awaits_in_finally(source))} == {}
    assert {path: names for path, source in sources.items() if (names := names_of_several_types(source))} == {}


def test_the_check_finds_an_await_in_a_finally_and_nothing_else():
    source = """
async def f():
    try:
        pass
    finally:
        await g()

async def h():
    try:
        pass
    except BaseException:
        await g()
        raise
    finally:
        x = 1
"""
    assert awaits_in_finally(source) == [6]


def test_the_check_finds_a_name_bound_to_two_exception_types_in_one_function():
    source = """
def f():
    try:
        pass
    except KeyError as exc:
        pass
    except ValueError as exc:
        pass

def g():
    try:
        pass
    except KeyError as exc:
        pass
    try:
        pass
    except KeyError as exc:
        pass
"""
    assert names_of_several_types(source) == [("f", "exc")]
