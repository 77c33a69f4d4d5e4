"""An event sink that keeps every event a node emits, for assertions (and signals the room's creation).

With ``inner`` (a ``LiveConsole``, say) every event and view hook also goes on to that sink, so a test
can watch what a person would see while it asserts on the events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from open4wd_node.view.events import EventSink


class Recorder(EventSink):
    def __init__(self, inner: EventSink | None = None) -> None:
        super().__init__(as_json=True)
        self.inner = inner
        self.events: list[tuple[str, dict]] = []
        self.first_at: dict[str, float] = {}  # event -> when (trio's clock) it was first emitted
        self.created = trio.Event()

    def emit(self, event: str, **data) -> None:
        self.events.append((event, data))
        self.first_at.setdefault(event, trio.current_time())
        if event == "room-created":
            self.created.set()
        if self.inner is not None:
            self.inner.emit(event, **data)

    def room_changed(self, member) -> None:
        if self.inner is not None:
            self.inner.room_changed(member)

    def watch_round(self, watch) -> None:
        if self.inner is not None:
            self.inner.watch_round(watch)

    @asynccontextmanager
    async def showing(self) -> AsyncIterator[None]:
        if self.inner is None:
            yield
        else:
            async with self.inner.showing():
                yield

    def of(self, name: str) -> list[dict]:
        return [d for e, d in self.events if e == name]
