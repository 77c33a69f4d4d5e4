"""The count of a link's protocol violations (spec/rooms.md §4.3): a frame that breaks the wire's rules
is dropped and counted, and the link closes at the limit (three by default)."""

from __future__ import annotations


class ViolationCounter:
    """Counts protocol violations on one link; at ``limit`` the link must be closed."""

    def __init__(self, limit: int = 3) -> None:
        """A counter that asks for the close at the ``limit``-th violation."""
        self.limit = limit
        self.count = 0
        self.last_code: str | None = None

    def record(self, code: str) -> bool:
        """Record a violation; True when the link must now be closed."""
        self.count += 1
        self.last_code = code
        return self.count >= self.limit

    @property
    def exhausted(self) -> bool:
        """Whether the limit was reached (the link must be closed)."""
        return self.count >= self.limit
