"""What a sans-IO machine is after a bug: back to its state before the message, or broken.

A machine's handler may change several fields before it raises something unexpected (not the
``PeerError`` its rules raise before they change anything): a bug of this node, triggered by what a peer
sent. Left as it is, the machine would go on from a state no rule produced. So every machine that takes a
peer's messages makes each message a transaction, one of two ways, chosen by what a copy of its state
costs against the work of a message (docs/transport.md, "Containment"):

- **restored** (the room's host and member machines): the mutable state is copied before each message
  and put back after a bug (``snapshot``, ``restore``); the machine goes on as if the message never came.
- **broken** (the race session, the spectator's viewer): their state is large and their messages many, a
  copy costs hundreds of times a message's work; after a bug the machine ends itself (``ended`` /
  ``ENDED``), takes nothing more, and says what it asks of the shell as it stops (a race's leave).

Either way the machine raises ``MachineFault`` (chained to the bug), and the shell logs both reasons (the
machine's outcome, the link's close) and closes the link the message came on.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from open4wd_base.errors import LocalError
from protocol.identity.keys import PeerId


class FaultOutcome(StrEnum):
    """What a machine is after a bug in one of its handlers."""

    RESTORED = "restored"  # back to its state before the message
    BROKEN = "broken"  # ended: it takes nothing more


class MachineFault(LocalError):
    """A bug of this node while ``machine`` handled a message from ``peer``: it is now ``outcome``, and
    ``actions`` are what it asks of the shell as it stops (a broken machine's end; none when restored).
    Always raised ``from`` the bug, whose traceback the shell logs."""

    def __init__(self, machine: str, peer: PeerId, outcome: FaultOutcome, cause: BaseException,
                 actions: Sequence[Any] = ()) -> None:
        super().__init__("internal-error", f"{machine} failed on a message from {peer[-4:]} "
                                           f"({type(cause).__name__}: {cause}); it is {outcome.value}")
        self.machine = machine
        self.peer = peer
        self.outcome = outcome
        self.actions = list(actions)


def snapshot(machine: object, kept: frozenset[str]) -> dict[str, Any]:
    """A deep copy of ``machine``'s attributes, except those named in ``kept``: its collaborators (an
    identity, an asset store) and values it only ever replaces, never changes in place, which stay shared."""
    state = vars(machine)
    memo = {id(state[name]): state[name] for name in kept if name in state}  # shared wherever they are held
    return {name: value if name in kept else copy.deepcopy(value, memo) for name, value in state.items()}


def restore(machine: object, saved: dict[str, Any]) -> None:
    """Put back what ``snapshot`` copied: every attribute as it was, none added since."""
    state = vars(machine)
    state.clear()
    state.update(saved)
