"""What the server's sans-IO hub asks its shell to do (``HubAction``): send a socket a frame, close it,
and the facts its metrics and logs count (a refusal, a registration, a departure, a relayed signal)."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.signaling.codes import Refusal
from protocol.identity.keys import PeerId


@dataclass(frozen=True)
class SendText:
    """Send socket ``conn`` the text frame ``text``."""

    conn: int
    text: str


@dataclass(frozen=True)
class CloseSocket:
    """Close socket ``conn`` with WebSocket ``code`` and ``reason`` (after what was sent to it before)."""

    conn: int
    code: int
    reason: str


@dataclass(frozen=True)
class Refused:
    """The hub refused or ignored what ``conn`` sent (``code``; ``detail`` for the log): counted and
    logged, whether the wire says anything or not."""

    conn: int
    code: Refusal
    detail: str


@dataclass(frozen=True)
class PeerRegistered:
    """``peer`` registered on ``conn`` in ``scope`` (``replaced``: it took over its own earlier socket)."""

    conn: int
    scope: str
    peer: PeerId
    replaced: bool


@dataclass(frozen=True)
class Departed:
    """``peer`` left ``scope`` (``reason``: left, closed, peer-timeout, room-closed)."""

    conn: int
    scope: str
    peer: PeerId
    reason: str


@dataclass(frozen=True)
class Relayed:
    """A ``kind`` signal from ``conn`` was delivered to ``target_conn``."""

    conn: int
    target_conn: int
    kind: str


HubAction = SendText | CloseSocket | Refused | PeerRegistered | Departed | Relayed
"""Everything ``SignalingHub`` returns."""
