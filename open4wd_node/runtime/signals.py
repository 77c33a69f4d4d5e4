"""SIGINT and SIGTERM end any command the same way: cleanly, with one line and exit 128 + signal.

A trio command runs under ``open4wd_node.runtime.trio_main.run_trio``: a signal cancels the command's
tasks (their ``finally`` blocks close race logs and reap child processes), then ``Interrupted`` leaves ``trio.run``. A synchronous
command gets ``Interrupted`` raised where it stands (``KeyboardInterrupt`` for SIGINT is mapped to it by
the CLI). ``received()`` says which signal, if any, is ending the process, so that a race log can
record why it was closed.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
RESTOP_DELAY_S = 0.005
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
def stop_signals_noted() -> Iterator[None]:
    """While trio runs a command, a stop signal that reaches Python's handler is only noted: trio hands
    the signals its receiver does not take (one that lands while the receiver closes) back to the
    handler from inside its own run loop, where an exception would be trio's internal error. The
    caller checks ``received_signal()`` once it is back in ordinary code."""

    def on_stop(signum: int, frame: FrameType | None) -> None:
        note(signum)

    previous = {signum: signal.signal(signum, on_stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


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

    def on_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, (KeyboardInterrupt, Interrupted)) and _received:
            # swallowed where it landed: the same signal again in a moment, from a timer thread (raised
            # here, it would only land in this hook again), so it lands in ordinary code
            threading.Timer(RESTOP_DELAY_S, os.kill, (os.getpid(), _received[0])).start()
            return
        previous_hook(unraisable)

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, on_interrupt),
                signal.SIGTERM: signal.signal(signal.SIGTERM, on_terminate)}
    previous_hook, sys.unraisablehook = sys.unraisablehook, on_unraisable
    try:
        yield
    finally:
        for signum, handler in previous.items():  # once stopping, a repeated or re-raised stop is ignored:
            signal.signal(signum, signal.SIG_IGN if _received else handler)  # it must not escape the report
        sys.unraisablehook = previous_hook
