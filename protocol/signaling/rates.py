"""Fixed-window rate limits (spec/signaling.md §8): at most ``limit`` events per key in each window of
``window_ms``, the window starting at the key's first event. A refused event does not count. The number
of keys held is bounded: when it is reached, expired windows are swept, and a new key that still does
not fit is refused (fail closed) rather than evicting a live window.
"""

from __future__ import annotations

from protocol.signaling.limits import RATE_WINDOW_MS


class FixedWindows:
    """Per-key fixed windows of events (a source address's upgrades, a socket's frames)."""

    def __init__(self, limit: int, max_keys: int, window_ms: int = RATE_WINDOW_MS) -> None:
        """At most ``limit`` events per key and window, for at most ``max_keys`` keys at once."""
        self.limit = limit
        self.max_keys = max_keys
        self.window_ms = window_ms
        self._windows: dict[str, tuple[int, int]] = {}  # key -> (window start, events counted)

    def __len__(self) -> int:
        return len(self._windows)

    def allow(self, key: str, now_ms: int) -> bool:
        """Count one event of ``key`` at ``now_ms``; False when it is over the limit (not counted)."""
        held = self._windows.get(key)
        if held is None or now_ms - held[0] > self.window_ms:
            if held is None and len(self._windows) >= self.max_keys:
                self.sweep(now_ms)
                if len(self._windows) >= self.max_keys:
                    return False
            self._windows[key] = (now_ms, 1)
            return True
        start, count = held
        if count >= self.limit:
            return False
        self._windows[key] = (start, count + 1)
        return True

    def forget(self, key: str) -> None:
        """Drop ``key``'s window (its socket closed)."""
        self._windows.pop(key, None)

    def sweep(self, now_ms: int) -> None:
        """Drop every window that has ended."""
        self._windows = {k: w for k, w in self._windows.items() if now_ms - w[0] <= self.window_ms}
