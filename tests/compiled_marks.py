"""``sources_only``: a test that reaches into a module's Python objects (a monkeypatched or subclassed class, a
double of another type in a typed attribute) can only run where that module is interpreted.

The suite runs twice in CI (``.ci/run``): against the checkout's sources, where every test runs, and against
the compiled build (``--import-mode=append``: the installed package first), where a compiled class cannot be
patched or subclassed from Python and a compiled attribute refuses a value of another type. Such a test is
skipped in the second run, saying which module is compiled; everything it checks is checked in the first."""

from __future__ import annotations

from types import ModuleType

import pytest


def is_compiled(module: ModuleType) -> bool:
    """Whether ``module`` was loaded from a compiled extension rather than its source."""
    return not (module.__file__ or "").endswith(".py")


def sources_only(module: ModuleType, why: str) -> pytest.MarkDecorator:
    """Skip the test where ``module`` is compiled, because ``why``."""
    return pytest.mark.skipif(is_compiled(module), reason=f"{module.__name__} is compiled here: {why}")
