"""Atomic seat accounting for asynchronous admissions (spec/rooms.md §4.5).

Occupancy counts distinct keys in active ∪ reserved; a new key is admitted iff occupancy < limit. An
active key may always re-reserve (a reconnect replaces its old session and adds nothing); a key that
already holds a pending reservation may not take a second one. Every reservation is settled once.
"""

from __future__ import annotations

from collections.abc import Hashable


class CapacityReservations:
    """The seats of one role: active keys, pending reservations, and the limit on both together."""

    def __init__(self, limit: int) -> None:
        """Seats for at most ``limit`` keys."""
        self.limit = limit
        self.active: set[Hashable] = set()
        self.reserved: set[Hashable] = set()

    @property
    def occupied(self) -> int:
        """Distinct keys holding a seat, active or reserved."""
        return len(self.active | self.reserved)

    def try_reserve(self, key: Hashable) -> bool:
        """Reserve a seat for ``key``; False when full, or when ``key`` already has a pending reservation."""
        if key in self.reserved:
            return False
        if key not in self.active and self.occupied >= self.limit:
            return False
        self.reserved.add(key)
        return True

    def commit(self, key: Hashable) -> None:
        """Settle a successful admission: ``key``'s seat becomes active."""
        self.reserved.discard(key)
        self.active.add(key)

    def release(self, key: Hashable) -> None:
        """Settle a failed admission: the pending seat is free again."""
        self.reserved.discard(key)

    def deactivate(self, key: Hashable) -> None:
        """The key's current session ended."""
        self.active.discard(key)
