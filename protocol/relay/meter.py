"""The limits of one circuit while bytes flow (docs/relay.md, "Limits"), sans-IO: the shell's byte copier
asks ``delay_ms`` before it forwards a chunk (bandwidth: per circuit and direction, and the relay's
total), ``carry`` once it has (bytes, activity), and ``deadline_ms`` / ``check`` when the circuit must end
(duration, idle). A circuit over its byte budget ends at once (``carry`` raises).
"""

from __future__ import annotations

from protocol.link.token_bucket import TokenBucket
from protocol.relay.limits import CircuitEnd, RelayLimits


class CircuitOver(Exception):
    """A circuit reached one of its limits and must end with ``end`` (counted by reason)."""

    def __init__(self, end: CircuitEnd, message: str) -> None:
        super().__init__(f"{end.value}: {message}")
        self.end = end
        self.message = message


def total_bucket(limits: RelayLimits, now_ms: int) -> TokenBucket:
    """The relay-wide bandwidth bucket every circuit also draws from (one second's worth of burst)."""
    return TokenBucket(limits.total_bytes_per_second, limits.total_bytes_per_second, now_ms)


class CircuitMeter:
    """One circuit's budget: bytes in all, bandwidth per direction (and from the shared ``total``),
    duration, and idle time."""

    def __init__(self, limits: RelayLimits, total: TokenBucket, now_ms: int) -> None:
        self.limits = limits
        self.total = total
        self.opened_ms = now_ms
        self.last_activity_ms = now_ms
        self.bytes = 0
        self._directions = {
            forward: TokenBucket(limits.circuit_burst_bytes, limits.circuit_bytes_per_second, now_ms)
            for forward in (True, False)
        }

    def delay_ms(self, forward: bool, size: int, now_ms: int) -> int:
        """How long to wait before forwarding ``size`` bytes in this direction (0: now, and the tokens
        are taken). Both buckets must hold them: a busy relay slows every circuit rather than dropping."""
        own = self._directions[forward]
        wait = max(own.wait_ms(now_ms, size), self.total.wait_ms(now_ms, size))
        if wait:
            return wait
        own.take(now_ms, size)
        self.total.take(now_ms, size)
        return 0

    def carry(self, size: int, now_ms: int) -> None:
        """Count ``size`` forwarded bytes; ``CircuitOver`` (``circuit-bytes``) past the budget."""
        self.bytes += size
        self.last_activity_ms = now_ms
        if self.bytes > self.limits.circuit_bytes:
            raise CircuitOver(CircuitEnd.BYTES, f"the circuit carried more than {self.limits.circuit_bytes} bytes")

    def deadline_ms(self) -> int:
        """When the circuit must end unless bytes flow: its duration or its idle timeout, whichever first."""
        return min(self.opened_ms + self.limits.circuit_duration_ms, self.last_activity_ms + self.limits.idle_timeout_ms)

    def check(self, now_ms: int) -> None:
        """``CircuitOver`` when the circuit has lasted too long or been idle too long."""
        if now_ms >= self.opened_ms + self.limits.circuit_duration_ms:
            raise CircuitOver(CircuitEnd.DURATION, f"the circuit lasted {self.limits.circuit_duration_ms} ms, its most")
        if now_ms >= self.last_activity_ms + self.limits.idle_timeout_ms:
            raise CircuitOver(CircuitEnd.IDLE, f"no byte crossed the circuit for {self.limits.idle_timeout_ms} ms")
