"""What the room state machines ask their shell to do: send, close a link, tell the user."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.encoding.wire import Message


@dataclass(frozen=True)
class Send:
    peer: str
    message: Message


@dataclass(frozen=True)
class CloseLink:
    peer: str
    code: str


@dataclass(frozen=True)
class Notify:
    """A user-visible event; ``event`` names follow the ``--json`` event stream."""

    event: str
    data: dict[str, Any] = field(default_factory=dict)
