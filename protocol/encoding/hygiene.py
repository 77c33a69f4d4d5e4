"""Ingress hygiene: the integer token buckets every link charges its frames to, and the count of a link's
protocol violations (spec/rooms.md §4.3). Both take explicit time (``now_ms``) and read no clock.

Its own module, apart from the wire decoder, because a race node charges every message it sends and
receives to two or three buckets (some 40 charges a frame with 7 peers): it is compiled with the race core
(setup.py ``RACE_CORE``), where the interpreted buckets cost a few per cent of a frame's CPU.
"""

from __future__ import annotations

from protocol.errors import LocalError


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


class TokenBucket:
    """Integer token bucket (milli-tokens), refilled from explicit ``now_ms`` readings."""

    def __init__(self, burst: int, per_second: int, now_ms: int) -> None:
        """A full bucket of ``burst`` tokens refilled at ``per_second``.

        Raises ``LocalError`` (``token-bucket-invalid``) unless both are positive.
        """
        if burst <= 0 or per_second <= 0:
            raise LocalError("token-bucket-invalid", "a token bucket needs a positive burst and rate")
        self.capacity = burst * 1000
        self.per_second = per_second
        self._tokens = self.capacity
        self._last_ms = now_ms

    def _refill(self, now_ms: int) -> None:
        """Add the tokens since the last refill (none when ``now_ms`` is not later: time never runs
        back here), capped at the capacity, which the tokens never exceed."""
        elapsed = now_ms - self._last_ms
        if elapsed > 0:
            tokens = self._tokens + elapsed * self.per_second
            self._tokens = tokens if tokens < self.capacity else self.capacity
            self._last_ms = now_ms

    def wait_ms(self, now_ms: int, cost: int = 1) -> int:
        """Milliseconds until ``cost`` tokens are available (0: now), without spending them."""
        self._refill(now_ms)
        missing = cost * 1000 - self._tokens
        return 0 if missing <= 0 else -(-missing // self.per_second)

    def take(self, now_ms: int, cost: int = 1) -> bool:
        """Spend ``cost`` tokens if available; False means drop the message."""
        self._refill(now_ms)
        if self._tokens >= cost * 1000:
            self._tokens -= cost * 1000
            return True
        return False

    def spend(self, cost: int) -> None:
        """Spend ``cost`` tokens that ``wait_ms`` has just found available (0) at the same ``now_ms``: the
        refill it did stands, so a frame charged to several buckets refills each once, not twice."""
        self._tokens -= cost * 1000
