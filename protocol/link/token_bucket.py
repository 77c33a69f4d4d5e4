"""The integer token bucket that rate-limits a link's frames in both directions (spec/rooms.md §4.3). It
takes explicit time (``now_ms``) and reads no clock."""

from __future__ import annotations

from protocol.errors import LocalError


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
