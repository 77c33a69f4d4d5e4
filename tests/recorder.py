"""An event sink that keeps every event a node emits, for assertions (and signals the room's creation).

With ``inner`` (a ``LiveConsole``, say) every event and view hook also goes on to that sink, so a test
can watch what a person would see while it asserts on the events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from open4wd_node.events.sink import EventSink
from open4wd_node.events.vocabulary import NodeEvent, RoomCreated


class Recorder(EventSink):
    def __init__(self, inner: EventSink | None = None) -> None:
        super().__init__(as_json=True)
        self.inner = inner
        self.typed: list[NodeEvent] = []  # every event as it was emitted
        self.events: list[tuple[str, dict]] = []  # and its JSON form: name, data
        self.first_at: dict[str, float] = {}  # event -> when (trio's clock) it was first emitted
        self.created = trio.Event()

    def emit(self, event: NodeEvent) -> None:
        name = event.EVENT
        self.typed.append(event)
        self.events.append((name, event.data()))
        self.first_at.setdefault(name, trio.current_time())
        if isinstance(event, RoomCreated):
            self.created.set()
        if self.inner is not None:
            self.inner.emit(event)

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
