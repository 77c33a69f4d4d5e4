"""``EventSink``: the one place a node tells its user what happens, each event a typed value.

Every part of the node (room, race, spectator, listener, daemons) hands its events to the sink it was
given; the sink prints each at once: one JSON object per line (``--json``: ``{"event": name, **data}``,
the stable interface of docs/node.md "Events"), or its readable line (``open4wd_node.events.text``). The
live views (``open4wd_node.view``), the control API's tee, the tests' recorders and an embedder's own
sink extend it; here the view hooks do nothing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TextIO

from open4wd_node.events.text import event_text
from open4wd_node.events.vocabulary import NodeEvent

if TYPE_CHECKING:
    from open4wd_node.events.round_watch import RoundWatch
    from protocol.room.member import MemberRoom


def event_json(event: NodeEvent) -> str:
    """The event's ``--json`` line: ``{"event": name, **data}`` (values JSON cannot hold as text)."""
    return json.dumps({"event": event.EVENT, **event.data()}, default=str)


class EventSink:
    """Prints each event at once: JSON lines (``as_json``), or readable lines, on ``stream`` (stdout)."""

    def __init__(self, *, as_json: bool, stream: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stream = stream or sys.stdout

    def emit(self, event: NodeEvent) -> None:
        """Print the event now: one JSON object, or its readable line (routine events have none)."""
        line = event_json(event) if self.as_json else event_text(event.EVENT, event.data())
        if line is not None:  # the readable view leaves out routine events (agreed checksums)
            print(line, file=self.stream, flush=True)

    def room_changed(self, member: MemberRoom) -> None:
        """The room driver's member machine after every change (the live view reads it when it draws)."""

    def watch_round(self, watch: RoundWatch) -> None:
        """A round is about to be raced (the live view reads ``watch`` when it draws, never per frame)."""

    @asynccontextmanager
    async def showing(self) -> AsyncIterator[None]:
        """While a node runs: a live view draws here (in its own task); plain event lines need nothing."""
        yield
