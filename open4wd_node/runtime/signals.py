"""SIGINT and SIGTERM end any command the same way: cleanly, with one line and exit 128 + signal.

A trio command runs under ``open4wd_node.runtime.trio_main.run_trio``: a signal cancels the command's
tasks (their ``finally`` blocks close race logs and reap child processes), then ``Interrupted`` leaves ``trio.run``. A synchronous
command gets ``Interrupted`` raised where it stands (``KeyboardInterrupt`` for SIGINT is mapped to it by
the CLI). ``received()`` says which signal, if any, is ending the process, so that a race log can
record why it was closed.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

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
        """``interrupted`` (SIGINT) or ``terminated`` (SIGTERM), as the CLI reports it."""
        return _WHY.get(signal.Signals(self.signum), "interrupted")

    @property
    def exit_status(self) -> int:
        """128 + the signal number, as a shell reports a process a signal ended."""
        return 128 + self.signum

    @property
    def message(self) -> str:
        """``stopped by SIGINT`` (or SIGTERM)."""
        return f"stopped by {signal.Signals(self.signum).name}"


def received_signal() -> int | None:
    """The number of the first stop signal this process received, or None."""
    return _received[0] if _received else None


def received() -> str | None:
    """``"interrupted"`` (SIGINT) or ``"terminated"`` (SIGTERM) once a stop signal has arrived."""
    return _WHY[signal.Signals(_received[0])] if _received else None


def note(signum: int) -> Interrupted:
    """Remember that ``signum`` arrived (the first one counts) and return the ``Interrupted`` to raise."""
    if not _received:
        _received.append(signum)
    return Interrupted(signum)


@contextmanager
def stop_signals_raise() -> Iterator[None]:
    """While a command runs, SIGINT raises ``KeyboardInterrupt`` (as Python's default does) and SIGTERM
    raises ``Interrupted`` (Python's default would end the process with no cleanup); both are noted
    first, so a stop is not lost when the exception lands somewhere Python swallows it (a weakref
    callback during an import, say): the CLI still exits 128 + signal."""

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        note(signum)
        raise KeyboardInterrupt

    def on_terminate(signum: int, frame: FrameType | None) -> None:
        raise note(signum)

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, on_interrupt),
                signal.SIGTERM: signal.signal(signal.SIGTERM, on_terminate)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
