"""What every sans-IO machine (room host, room member, race session) may ask its shell to do about
links, whatever the subsystem: send a message, close a link, and count a peer's broken rule.

Each subsystem adds its own actions and its typed user-visible events beside these, and names the
union of all of them (``RoomAction``, ``RaceAction``). Every machine takes input through one
convention, ``receive(peer, message, now_ms) -> list[action]``, where ``peer`` is the authenticated
sender (the link's PeerId, never a field of the message).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from protocol.encoding.wire import Message
from protocol.identity.keys import PeerId


@dataclass(frozen=True)
class Send:
    """Send ``message`` to ``peer`` (over its link, or to this node itself in a host's own seat)."""

    peer: PeerId
    message: Message


@dataclass(frozen=True)
class CloseLink:
    """Close the link to ``peer``, telling it ``code``."""

    peer: PeerId
    code: str


@dataclass(frozen=True)
class Misbehaviour:
    """What ``peer`` sent broke a rule (a ``PeerError`` with ``code``) and was dropped; the shell logs it
    and counts it against that peer's link. Never produced for this node's own mistakes."""

    peer: PeerId
    code: str


@dataclass(frozen=True)
class UserEvent:
    """Base of the typed user-visible events a machine reports (one frozen dataclass per event).

    ``EVENT`` is the stable ``--json`` event name and the fields are exactly that event's JSON data
    keys, in order, so the shell prints ``{"event": e.EVENT, **e.data()}`` and the output stays the
    same whatever the machine's internals. Subclasses may override ``data`` to leave out a key that a
    given view of the event never had.
    """

    EVENT: ClassVar[str] = ""

    def data(self) -> dict[str, Any]:
        """The event's JSON data: each field by name, in declaration order (a shallow copy)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
