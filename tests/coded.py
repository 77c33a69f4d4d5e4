"""``raises_coded``: ``pytest.raises`` for the node's coded errors, which also checks the ``code``.

A coded error's class says whose fault it is and its ``code`` says what went wrong: a test that checks the
class alone still passes when the wrong refusal fires (a ``ProtocolError`` for a bad signature where a
replayed frame was meant). tests/test_coded_raises.py holds every ``pytest.raises`` of a coded class to
this helper or to an explicit check of ``.value.code``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def raises_coded(kind: type[BaseException], code: str, *, match: str | None = None) -> Iterator[pytest.ExceptionInfo[Any]]:
    """Expect ``kind`` carrying ``code`` (and a message matching ``match``, when given) from the block;
    the ``ExceptionInfo`` is returned for further checks of the error."""
    with pytest.raises(kind, match=match) as caught:
        yield caught
    assert caught.value.code == code, f"expected {kind.__name__} {code!r}, got {caught.value!r}"
