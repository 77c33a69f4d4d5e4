"""What the room state machines ask their shell to do: the shared link actions, and tell the user."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.actions import CloseLink, Send

__all__ = ["CloseLink", "Notify", "Send"]


@dataclass(frozen=True)
class Notify:
    """A user-visible event; ``event`` names follow the ``--json`` event stream."""

    event: str
    data: dict[str, Any] = field(default_factory=dict)
