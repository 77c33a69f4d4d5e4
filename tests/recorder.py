"""An event sink that keeps every event a node emits, for assertions (and signals the room's creation)."""

from __future__ import annotations

import trio

from open4wd_node.events import EventSink


class Recorder(EventSink):
    def __init__(self) -> None:
        super().__init__(as_json=True)
        self.events: list[tuple[str, dict]] = []
        self.created = trio.Event()

    def emit(self, event: str, **data) -> None:
        self.events.append((event, data))
        if event == "room-created":
            self.created.set()

    def of(self, name: str) -> list[dict]:
        return [d for e, d in self.events if e == name]
