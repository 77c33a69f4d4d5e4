"""Signaling scopes: the room a socket joins (``/ws?room=<scope>``), the ``room`` a register proof is
bound to, and the ``scope`` every signal carries (spec/signaling.md §2).

A scope is ``room:`` + a lowercase UUID v4, or ``match:`` + a 64-hex match id. Anything else is refused,
the uppercase UUID and everything under ``/`` (``/turn-token`` binds the TURN proof) included.
"""

from __future__ import annotations

import re
import uuid

from protocol.errors import LocalError, ProtocolError
from protocol.signaling.codes import Refusal

ROOM_PREFIX = "room:"
MATCH_PREFIX = "match:"
_SCOPE = re.compile(r"room:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}|match:[0-9a-f]{64}")


def is_scope(value: object) -> bool:
    """Whether ``value`` is a valid scope."""
    return isinstance(value, str) and _SCOPE.fullmatch(value) is not None


def check_scope(value: object) -> str:
    """``value`` when it is a valid scope; ``ProtocolError`` ``scope-invalid`` otherwise."""
    if not is_scope(value):
        raise ProtocolError(Refusal.SCOPE_INVALID, "a scope is room:<lowercase UUID v4> or match:<64 lowercase hex>")
    assert isinstance(value, str)
    return value


def new_room_scope() -> str:
    """A fresh ``room:<uuid4>`` scope (122 random bits)."""
    return ROOM_PREFIX + str(uuid.uuid4())


def match_scope(match_id: str) -> str:
    """The scope of a match: ``match:<matchId>``; ``LocalError`` ``scope-invalid`` unless the id is 64
    lowercase hex characters (this node derives the id itself)."""
    scope = MATCH_PREFIX + match_id
    if not is_scope(scope):
        raise LocalError(Refusal.SCOPE_INVALID, f"a match id is 64 lowercase hex characters, got {match_id[:80]!r}")
    return scope
