"""SIGINT and SIGTERM end any command the same way: cleanly, with one line and exit 128 + signal.

A trio command runs under ``open4wd_node.trio_main.run_trio``: a signal cancels the command's tasks (their ``finally`` blocks
close race logs and reap child processes), then ``Interrupted`` leaves ``trio.run``. A synchronous
command gets ``Interrupted`` raised where it stands (``KeyboardInterrupt`` for SIGINT is mapped to it by
the CLI). ``received()`` says which signal, if any, is ending the process, so that a race log can
record why it was closed.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_WHY = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
_received: list[int] = []


class Interrupted(BaseException):
    """The process was asked to stop (not an error of the program, so not an ``Exception``)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def code(self) -> str:
        return _WHY.get(signal.Signals(self.signum), "interrupted")

    @property
    def exit_status(self) -> int:
        return 128 + self.signum

    @property
    def message(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


def received_signal() -> int | None:
    return _received[0] if _received else None


def received() -> str | None:
    """``"interrupted"`` (SIGINT) or ``"terminated"`` (SIGTERM) once a stop signal has arrived."""
    return _WHY[signal.Signals(_received[0])] if _received else None


def note(signum: int) -> Interrupted:
    if not _received:
        _received.append(signum)
    return Interrupted(signum)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While a synchronous command runs, SIGTERM raises ``Interrupted`` like Ctrl-C raises
    ``KeyboardInterrupt`` (Python's default for SIGTERM would end the process with no cleanup)."""

    def handler(signum: int, frame: Any) -> None:
        raise note(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_by_keyboard() -> Interrupted:
    return note(signal.SIGINT)
