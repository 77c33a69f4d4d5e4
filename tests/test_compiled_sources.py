"""The modules setup.py compiles with mypyc avoid the three constructs mypyc (2.4) compiles wrongly.

- An ``await`` inside a ``finally``: when the coroutine is awaited while its caller handles an exception, the
  ``finally`` raises that handled exception again after its ``try`` ended normally, so ``except X: await
  close()`` fails with the ``X`` it had handled (a link's timeout surfaced as the ``ProtocolError`` it had
  already turned into ``LinkClosed``). A compiled coroutine cleans up in ``except BaseException: ...; raise``
  and after the ``try`` instead.
- One name bound by ``except ... as`` clauses of different types in one function: the compiled function
  keeps one variable of the first type and raises ``TypeError`` when another type arrives
  (``except LinkClosed as exc`` then ``except PeerError as exc``). Each type gets its own name.
- An attribute narrowed by a test (``self._closed is not None``, ``isinstance(self.x, T)``) and read again
  after an ``await`` within the test's reach: mypy keeps the narrowing across the ``await``, the compiled
  code trusts it, and when another task changed the attribute meanwhile it raises ``TypeError`` (``None
  object expected; got LinkClosed``). Such a test goes through a method (``Link._raise_if_closed``), or the
  value is read once into a local. The same holds without an ``await`` when a call in between changes the
  attribute: one of the class's methods that assigns it, or an object the instance holds calling back into
  it (the fifth pass's ``self.ended`` in ``RaceSession.tick``: docs/node.md, "The compiled race core").

All three were found by running the whole suite against a build that also compiled the race's shell, the
links and the mesh among it (docs/node.md, "Twelfth pass"), the first two reproduced in isolation. This test
reads the lists of compiled modules from setup.py itself and fails on any of them, so that a module added to
a group, or a later edit, cannot bring one in unseen. The third is found from the syntax as mypy's rules of
reach have it (a test narrows inside its branch, and after it when its branch always leaves; an assignment
ends it, and ``self.x = None`` narrows anew), which is close but not exact: the whole suite run against the
compiled build (``.ci/run``) is the check that settles it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUPS = ("COMPILED", "RACE_CORE", "RACE_SHELL")
LEAVES = (ast.Raise, ast.Return, ast.Continue, ast.Break)


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


def _member(node: ast.AST) -> str | None:
    """``a.b`` for an attribute of a plain name (``self._closed``), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _own_attribute(node: ast.AST) -> str | None:
    """``x`` for ``self.x``, else None."""
    member = _member(node)
    return member[len("self."):] if member is not None and member.startswith("self.") else None


def _assigned_targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment (plain, augmented or annotated) assigns; nothing for any other node."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def _narrowed_by(test: ast.expr) -> set[str]:
    """The attributes a condition narrows: compared ``is`` / ``is not`` with None, or checked by ``isinstance``."""
    found = set()
    for node in ast.walk(test):
        if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot))
                and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None):
            subject = _member(node.left)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" and node.args:
            subject = _member(node.args[0])
        else:
            continue
        if subject is not None:
            found.add(subject)
    return found


def _own_expressions(statement: ast.stmt) -> list[ast.AST]:
    """A statement's own expressions: not its nested statements, nor nested functions and lambdas."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        found.append(node)
        stack += [child for child in ast.iter_child_nodes(node)
                  if not isinstance(child, (ast.stmt, ast.excepthandler, ast.Lambda))]
    return found


class _Reach:
    """Walks one coroutine's statements in order, keeping each narrowed attribute's test line and the line of
    the first ``await`` since (None before one: where the narrowing lapses, ``changes``), and notes
    (attribute, test line, await line, read line) for every read of a narrowed attribute after an ``await``."""

    def __init__(self) -> None:
        self.found: list[tuple[str, int, int, int]] = []

    def block(self, statements: list[ast.stmt], narrowed: dict[str, tuple[int, int | None]]) -> None:
        for statement in statements:
            self.statement(statement, narrowed)

    def statement(self, statement: ast.stmt, narrowed: dict[str, tuple[int, int | None]]) -> None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # its own scope
        if isinstance(statement, (ast.If, ast.While)):
            self.expressions(_own_expressions(statement.test), narrowed)
            inside = self.narrow(dict(narrowed), statement.test)
            self.block(statement.body, inside)
            otherwise = self.narrow(dict(narrowed), statement.test)
            self.block(statement.orelse, otherwise)
            for branch in (inside, otherwise):  # an await in a branch is an await after the statement
                for name, (_, lapsed) in branch.items():
                    if name in narrowed and narrowed[name][1] is None and lapsed is not None:
                        narrowed[name] = (narrowed[name][0], lapsed)
            if isinstance(statement, ast.While):  # the loop ends on a test that narrows, after the body's awaits
                self.narrow(narrowed, statement.test)
            elif statement.body and isinstance(statement.body[-1], LEAVES) and not statement.orelse:
                self.narrow(narrowed, statement.test)  # only the path with no branch goes on
            elif statement.orelse and isinstance(statement.orelse[-1], LEAVES):
                for name in _narrowed_by(statement.test):  # the body's path goes on, with its awaits
                    if name in inside and name not in narrowed:
                        narrowed[name] = inside[name]
            return
        if isinstance(statement, ast.Assert):
            self.expressions(_own_expressions(statement.test), narrowed)
            self.narrow(narrowed, statement.test)
            return
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = _assigned_targets(statement)
            assigned = {id(node) for target in targets for node in ast.walk(target)}
            self.expressions([node for node in _own_expressions(statement) if id(node) not in assigned], narrowed)
            for target in targets:
                for node in ast.walk(target):
                    narrowed.pop(_member(node) or "", None)  # a new value: mypy's narrowing restarts
            value = getattr(statement, "value", None)
            if isinstance(value, ast.Constant) and value.value is None:
                for target in targets:  # ``self.x = None`` narrows ``self.x`` to None from here on
                    if (name := _member(target)) is not None:
                        narrowed[name] = (statement.lineno, None)
            return
        self.expressions(_own_expressions(statement), narrowed)
        if isinstance(statement, (ast.AsyncWith, ast.AsyncFor)):
            self.suspends(narrowed, statement.lineno)
        for field in ("body", "handlers", "orelse", "finalbody"):
            for child in getattr(statement, field, None) or []:
                if isinstance(child, ast.ExceptHandler):
                    self.block(child.body, narrowed)
                else:
                    self.statement(child, narrowed)

    def expressions(self, nodes: list[ast.AST], narrowed: dict[str, tuple[int, int | None]]) -> None:
        for node in nodes:
            name = _member(node)
            if name in narrowed and isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                line, lapsed = narrowed[name]
                if lapsed is not None:
                    self.found.append((name, line, lapsed, node.lineno))
                    del narrowed[name]
        self.changes(narrowed, nodes)

    def changes(self, narrowed: dict[str, tuple[int, int | None]], nodes: list[ast.AST]) -> None:
        """What may change every narrowed attribute behind the narrowing: here the first ``await``."""
        awaits = [node.lineno for node in nodes if isinstance(node, ast.Await)]
        if awaits:
            self.lapse(narrowed, min(awaits))

    def suspends(self, narrowed: dict[str, tuple[int, int | None]], line: int) -> None:
        """An ``async with`` or ``async for`` awaits at ``line``."""
        self.lapse(narrowed, line)

    @staticmethod
    def narrow(narrowed: dict[str, tuple[int, int | None]], test: ast.expr) -> dict[str, tuple[int, int | None]]:
        for name in _narrowed_by(test):
            narrowed.setdefault(name, (test.lineno, None))
        return narrowed

    @staticmethod
    def lapse(narrowed: dict[str, tuple[int, int | None]], line: int, names: set[str] | None = None) -> None:
        """The narrowings of ``names`` (all when None) may no longer hold after ``line``."""
        for name, (tested, lapsed) in narrowed.items():
            if lapsed is None and (names is None or name in names):
                narrowed[name] = (tested, line)


class _CallReach(_Reach):
    """``_Reach`` for the synchronous case. What may change a narrowed ``self.x`` behind the narrowing:
    - a call of one of the class's own methods that assigns ``self.x``, itself or through the methods it
      calls;
    - a call through an object the instance holds (``self._recovery.tick(...)``) or one given ``self``: it
      may call back (a port, a callback) into any method, so every attribute a method other than
      ``__init__`` assigns (the fifth pass's ``self.ended``: ``tick`` returned early while it was set, then
      a timer of the recovery ended the session through its port, and the compiled ``self.ended is None``
      that followed raised)."""

    def __init__(self, assigns: dict[str, set[str]]) -> None:
        super().__init__()
        self.assigns = assigns
        self.mutable = {f"self.{attr}" for method, attrs in assigns.items() if method != "__init__" for attr in attrs}

    def changes(self, narrowed: dict[str, tuple[int, int | None]], nodes: list[ast.AST]) -> None:
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            method = _own_attribute(node.func)
            held = isinstance(node.func, ast.Attribute) and _own_attribute(node.func.value) is not None
            if method in self.assigns:
                self.lapse(narrowed, node.lineno, {f"self.{attr}" for attr in self.assigns[method]})
            elif held or any(isinstance(arg, ast.Name) and arg.id == "self" for arg in node.args):
                self.lapse(narrowed, node.lineno, self.mutable)

    def suspends(self, narrowed: dict[str, tuple[int, int | None]], line: int) -> None:
        """Awaits are ``narrowings_across_awaits``'s."""


def narrowings_across_awaits(source: str) -> list[tuple[str, str, int, int, int]]:
    """(coroutine, attribute, test line, await line, read line) for every attribute a coroutine narrows by a
    test and reads again after an ``await`` within the test's reach (module docstring)."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if isinstance(function, ast.AsyncFunctionDef):
            reach = _Reach()
            reach.block(function.body, {})
            found += [(function.name, *hit) for hit in reach.found]
    return found


def _assigned_by_methods(cls: ast.ClassDef) -> dict[str, set[str]]:
    """Each method's ``self`` attributes it assigns, itself or through the class's methods it calls."""
    methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    direct: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for name, function in methods.items():
        direct[name], calls[name] = set(), set()
        for node in ast.walk(function):
            direct[name] |= {attr for target in _assigned_targets(node) for part in ast.walk(target)
                             if (attr := _own_attribute(part)) is not None}
            if isinstance(node, ast.Call) and (callee := _own_attribute(node.func)) in methods:
                calls[name].add(callee)
    closure = {name: set(attrs) for name, attrs in direct.items()}
    changed = True
    while changed:
        changed = False
        for name in methods:
            for callee in calls[name]:
                if not closure[callee] <= closure[name]:
                    closure[name] |= closure[callee]
                    changed = True
    return closure


def narrowings_across_calls(source: str) -> list[tuple[str, str, int, int, int]]:
    """(method, attribute, test line, call line, read line) for every ``self`` attribute a method narrows by a
    test and reads again, within the test's reach, after calling a method of its class that assigns it."""
    found = []
    for cls in ast.walk(ast.parse(source)):
        if isinstance(cls, ast.ClassDef):
            assigns = _assigned_by_methods(cls)
            for function in cls.body:
                if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    reach = _CallReach(assigns)
                    reach.block(function.body, {})
                    found += [(function.name, *hit) for hit in reach.found]
    return found


def test_no_compiled_module_holds_a_construct_mypyc_compiles_wrongly():
    modules = compiled_modules()
    assert "protocol/race/session.py" in modules and "open4wd_node/net/link.py" in modules and len(modules) > 35
    sources = {path: (ROOT / path).read_text(encoding="utf-8") for path in modules}
    assert {path: lines for path, source in sources.items() if (lines := awaits_in_finally(source))} == {}
    assert {path: names for path, source in sources.items() if (names := names_of_several_types(source))} == {}
    assert {path: hits for path, source in sources.items() if (hits := narrowings_across_awaits(source))} == {}
    assert {path: hits for path, source in sources.items() if (hits := narrowings_across_calls(source))} == {}


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


def test_the_check_finds_an_attribute_narrowed_before_an_await_and_read_after_it():
    source = """
async def send(self):
    if self._closed is not None:
        raise self._closed.copy()
    async with self._lock:
        if self._closed is not None:
            raise self._closed.copy()

async def read(self):
    if self._reads_back is None:
        await wait()
    if self._reads_back is not None:
        await self._reads_back.wait()

async def end(self):
    await self._shutdown()
    assert self._closed is not None
    raise self._closed.copy()

async def reset(self):
    assert self._owed is not None
    await send()
    self._owed = None
    return self._owed

async def branch(self):
    if isinstance(self.message, Ping):
        await self.pong()
        return self.message.nonce
"""
    assert narrowings_across_awaits(source) == [("send", "self._closed", 3, 5, 6), ("branch", "self.message", 27, 28, 29)]


def test_the_check_finds_an_attribute_narrowed_before_a_call_that_assigns_it_and_read_after_it():
    """The fifth pass's ``RaceSession.tick``: it returned early while ``self.ended`` was set, then a timer
    ended the session through ``_end``, and the compiled ``self.ended is None`` that followed raised."""
    source = """
class Session:
    def tick(self, now):
        if self.ended is not None:
            return []
        actions = self._watchdog(now)
        if self.ended is None:
            actions += self._resend(now)
        return actions

    def fresh(self):
        if self.ended is not None:
            return []
        self._resend(0)
        self.ended = None
        self._watchdog(0)
        return self.ended

    def before(self):
        if self.ended is None:
            x = self.ended
            other.end()
            self._resend(0)
            return self.ended

    def leave(self):
        if self.ended is None:
            self._recovery.tick(self)
            return self.ended.value

    def _watchdog(self, now):
        return self._end("timeout")

    def _end(self, reason):
        self.ended = reason
        return []

    def _resend(self, now):
        self.sent = now
        return []
"""
    assert narrowings_across_calls(source) == [("tick", "self.ended", 4, 6, 7), ("fresh", "self.ended", 15, 16, 17),
                                               ("leave", "self.ended", 27, 28, 29)]
