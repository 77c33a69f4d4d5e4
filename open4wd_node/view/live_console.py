"""The live view on stdout, drawn by its own task at most 4 times a second, written by a worker thread.

Nothing on the race's path waits for the terminal: an event only queues its text line (O(1)), a round
only hands over a ``RoundWatch`` (``live_model``); every 0.25 s the view task builds the view from that
state (in trio, between two frames, so it reads a consistent world) and a worker thread writes it. While
a write is under way the task waits for it and later changes are drawn together in the next one: a slow
terminal delays the picture, never the 60 Hz frame pump.

On an interactive terminal the view is a rich ``Live`` region under the event lines (stderr, the logs,
is queued above it too, so the region is never torn). Elsewhere (a pipe, a file, ``TERM=dumb``) the event
lines are written as they come and the view as plain lines without escape codes whenever it changed,
at most once every 5 s.
"""

from __future__ import annotations

import io
import math
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol, TextIO

import trio
from rich.console import Console, RenderableType
from rich.live import Live
from rich.text import Text

from open4wd_node.runtime.clock import NodeClock
from open4wd_node.events.sink import EventSink
from open4wd_node.events.text import event_text
from open4wd_node.view.live_model import LiveBoard
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.events.vocabulary import NodeEvent
from open4wd_node.view.live_render import board_lines, board_renderable
from protocol.room.member import MemberRoom
from protocol.identity.keys import PeerId

REFRESH_S = 0.25  # at most 4 draws a second
Picture = RenderableType | list[str] | None  # what ``_write`` draws: a renderable on a terminal, else lines
PLAIN_EVERY_S = 5.0  # the plain view is re-written at most this often


class View(Protocol):
    """What a ``Screen`` draws: a rich renderable on a terminal, plain lines elsewhere."""

    def renderable(self) -> RenderableType | None:
        """The picture for a terminal now (None: nothing to show yet)."""
        ...

    def plain(self) -> list[str]:
        """The picture as plain lines, without escape codes."""
        ...


class _QueuedStderr(io.TextIOBase):
    """Stands in for ``sys.stderr`` while the live region is shown: whole lines join the event lines."""

    def __init__(self, line: Callable[[str], None]) -> None:
        self._line, self._partial = line, ""

    def write(self, text: str) -> int:
        *whole, self._partial = (self._partial + text).split("\n")
        for line in whole:
            self._line(line)
        return len(text)

    def close_out(self) -> None:
        if self._partial:
            self._line(self._partial)
            self._partial = ""


class Screen:
    """Owns ``stream`` while a view runs: queued text lines, then the view, drawn by ``run``."""

    def __init__(self, stream: TextIO, *, interactive: bool | None = None, width: int | None = None) -> None:
        self.stream = stream
        self.console = Console(file=stream, width=width, force_terminal=interactive, force_interactive=interactive)
        self.interactive = self.console.is_interactive
        self.draws = 0
        self._pending: list[str] = []
        self._live: Live | None = None
        self._plain_shown: list[str] = []
        self._plain_at = -math.inf

    def line(self, text: str) -> None:
        """Queue one text line; it is written above the view at the next draw."""
        self._pending.append(text)

    @property
    def queued(self) -> tuple[str, ...]:
        """The text lines not written yet."""
        return tuple(self._pending)

    async def run(self, view: View) -> None:
        """Draw until cancelled, then draw once more (synchronously: the last lines must not be lost)."""
        stderr, previous = _QueuedStderr(self.line), sys.stderr
        if self.interactive:
            sys.stderr = stderr
        try:
            while True:
                # The refresh rate, not a poll: the race view changes with every frame, and the frame pump
                # tells nobody (it must not pay for the view), so the picture is rebuilt at most 4 times a second.
                await trio.sleep(REFRESH_S)
                job = self._job(view, trio.current_time())
                if job is not None:
                    self.draws += 1  # counted here, not in the thread: when it runs is the OS's choice
                    await trio.to_thread.run_sync(self._write, *job)
        finally:
            if self.interactive:
                sys.stderr = previous
                stderr.close_out()
            job = self._job(view, math.inf)
            if job is not None:
                self.draws += 1
                self._write(*job)
            if self._live is not None:
                self._live.stop()

    def _job(self, view: View, now: float) -> tuple[list[str], Picture] | None:
        """What to write now (in trio: the view reads live state), or None when nothing is due."""
        lines, self._pending = self._pending, []
        if self.interactive:
            return lines, view.renderable()
        shown = view.plain() if now - self._plain_at >= PLAIN_EVERY_S else None
        if shown == self._plain_shown:
            shown = None
        elif shown is not None:
            self._plain_shown, self._plain_at = shown, now
        return (lines, shown) if lines or shown else None

    def _write(self, lines: list[str], picture: Picture) -> None:
        """In the worker thread: the only code that touches the stream while the view runs."""
        if not self.interactive:
            text = "\n".join(lines + (picture if isinstance(picture, list) else []))
            if text:
                self.stream.write(text + "\n")
                self.stream.flush()
            return
        if self._live is None:
            self._live = Live(console=self.console, auto_refresh=False, redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        for line in lines:
            self.console.print(Text(line), soft_wrap=True)  # an invitation must stay one line to copy
        if picture is not None and not isinstance(picture, list):
            self._live.update(picture, refresh=True)


class LiveConsole(EventSink):
    """A node's readable output (``host`` / ``join`` without ``--json``): event lines and the live view."""

    def __init__(self, me: PeerId, stream: TextIO | None = None, *, interactive: bool | None = None,
                 width: int | None = None) -> None:
        super().__init__(as_json=False, stream=stream)
        self.board = LiveBoard(me)
        self.screen = Screen(self.stream, interactive=interactive, width=width)
        self._clock: NodeClock | None = None

    def emit(self, event: NodeEvent) -> None:
        """The board learns from the event; its readable line (if any) is queued for the next draw."""
        name, data = event.EVENT, event.data()
        self.board.on_event(name, data)
        text = event_text(name, data)
        if text is not None:
            self.screen.line(text)

    def room_changed(self, member: MemberRoom) -> None:
        """The board shows this member machine's room."""
        self.board.room_changed(member)

    def watch_round(self, watch: RoundWatch) -> None:
        """The board shows this round."""
        self.board.watch_round(watch)

    def renderable(self) -> RenderableType | None:
        """The board as a rich table (the room's countdown reads the node's clock)."""
        return board_renderable(self.board, self._clock.now_ms() if self._clock else 0)

    def plain(self) -> list[str]:
        """The board as plain lines."""
        return board_lines(self.board)

    @asynccontextmanager
    async def showing(self) -> AsyncIterator[None]:
        """Draw the view (its own task) while the body runs; the last lines are written when it ends."""
        self._clock = NodeClock()
        async with showing(self.screen, self):
            yield


@asynccontextmanager
async def showing(screen: Screen, view: View) -> AsyncIterator[None]:
    """Run ``screen`` for ``view`` around the body; its last lines are written when the body ends."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(screen.run, view)
        try:
            yield
        finally:
            nursery.cancel_scope.cancel()
