"""What a race frame costs, by part: the vocabulary and the meter a session reports its work to.

The session never reads a clock (sans-IO): it only says *which part* the work it is about to do belongs
to, through a ``CostMeter`` the shell gives it. The shell's meter (``open4wd_node.race.budget``) reads
the thread's CPU time at each boundary; the default ``NO_COST_METER`` does nothing, so the session costs
the same as before when nobody measures. Parts nest: work charged to a part inside another part is
charged to the inner one only.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class CostPart(StrEnum):
    """The parts a race node's CPU per frame is split into (docs/node.md, "CPU per frame")."""

    VERIFY = "verify"
    """Ed25519 verification of the peers' signed inputs, votes and key announces (their digests included)."""
    SIGN = "sign"
    """Ed25519 signing of this node's inputs and votes (their digests included)."""
    CODEC = "codec"
    """Encoding and decoding the messages' bodies (msgpack, strict decoding)."""
    LINK = "link"
    """Sending and receiving: framing, AEAD sealing and opening, the sockets, the links' own tasks."""
    SIMULATION = "simulation"
    """Stepping the world the first time for a frame (saving its pre-step state included)."""
    RESIMULATION = "resimulation"
    """Stepping the world again after a rollback (loading the saved state included)."""
    SHELL = "shell"
    """Everything else: the session's bookkeeping, trio's scheduling, events, the race log."""


class CostMeter(Protocol):
    """Where the session says which part its work belongs to; ``part(p)`` is a context manager."""

    def part(self, part: CostPart) -> _Span:
        """Charge the work inside the ``with`` block to ``part``."""


class _Span(Protocol):
    def __enter__(self) -> object: ...

    def __exit__(self, *exc: object) -> None: ...


class _NoSpan:
    __slots__ = ()

    def __enter__(self) -> object:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _NoMeter:
    """The meter of a session nobody measures: every part costs nothing extra."""

    __slots__ = ()
    _span = _NoSpan()

    def part(self, part: CostPart) -> _Span:
        """A span that does nothing."""
        return self._span


NO_COST_METER: CostMeter = _NoMeter()
"""The default meter: measures nothing."""
