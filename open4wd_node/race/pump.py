"""The 60 Hz frame pump: steps frames at 60 Hz from its start on trio's clock.

Frame k is due at ``start + k/60``. The pump wakes once per tick and steps the frames that are due,
catching up at most 4 frames per frame of the tick when it is behind, and reports the lag (frames due
but not stepped) so the shell can show and count it. A tick is one frame long by default; a headless
node may tick every 2, 3 or 4 frames (``frames_per_tick``, docs/node.md "Frames per tick"), which steps
the same frames at the same 60 Hz rate, in groups. Tick k is scheduled at ``start + k·n/60`` (computed
from the integer k, so no error accumulates: no drift).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

from open4wd_node.runtime.choices import FRAMES_PER_TICK

FRAME_HZ = 60
MAX_STEPS_PER_TICK = 4  # per frame of the tick: catching up runs at most 4× real time
LAG_REPORT_FRAMES = 8


class FramePump:
    """Steps frames on trio's clock at 60 Hz, ``frames_per_tick`` frames per wake-up, catching up at most 4
    frames per frame of the tick (module docstring)."""

    def __init__(
        self, step: Callable[[], bool], current_frame: Callable[[], int], on_lag: Callable[[int], None] | None = None,
        pause: Callable[[], Awaitable[None]] | None = None, on_tick: Callable[[], None] | None = None,
        before_tick: Callable[[], Awaitable[None]] | None = None, frames_per_tick: int = 1,
    ) -> None:
        """``step()`` steps one frame (True) or says it must wait (False); ``current_frame()`` counts frames;
        ``on_lag(frames)`` hears about a lag above 8 frames, at most once a second; ``pause()``, awaited
        after every tick, returns at once unless the node must stand still (a test's or the soak's stall):
        the frames due meanwhile are then caught up at 4 per tick, as after a real stop. ``on_tick()`` runs
        after each tick's steps (the runner sends what the tick held back then); ``before_tick()``, awaited
        before them, from the second tick on (the runner has the links read and hands the session what they
        delivered since the last tick: it is there for the tick's steps). Not before the first, which follows the round's
        start at once: what arrived until then was handled at the barrier, so every node's first tick
        sees what it saw there, whichever node started first (a peer's race key announced at its start
        is handled at the second tick). ``frames_per_tick``: how many frames one tick steps, 1..4 (a
        ``ValueError`` otherwise: the configuration checks it first)."""
        if not FRAMES_PER_TICK.lo <= frames_per_tick <= FRAMES_PER_TICK.hi:
            raise ValueError(f"frames_per_tick is {FRAMES_PER_TICK.lo}..{FRAMES_PER_TICK.hi}, not {frames_per_tick}")
        self.step = step
        self.current_frame = current_frame
        self.on_lag = on_lag
        self.pause = pause
        self.on_tick = on_tick
        self.before_tick = before_tick
        self.frames_per_tick = frames_per_tick
        self.max_lag = 0
        self.lag = 0
        self.ticks = 0

    @staticmethod
    def due(start: float, now: float) -> int:
        """Frames due by ``now``: frame k is due at ``start + k/60`` (the epsilon absorbs float error
        in a tick that is exactly on time)."""
        return int((now - start) * FRAME_HZ + 1e-6) + 1

    async def run(self, until: Callable[[], bool]) -> None:
        """Pump until ``until()`` is true (checked before every step). The 60 Hz tick is the pump's
        own clock: a timer by nature, not a poll."""
        start = trio.current_time()
        base = self.current_frame()
        per_tick = self.frames_per_tick
        period = per_tick / FRAME_HZ
        tick = next_report = 0
        while not until():
            if self.before_tick is not None and tick > 0:
                await self.before_tick()
                if until():
                    break
            due = base + self.due(start, trio.current_time())
            for _ in range(MAX_STEPS_PER_TICK * per_tick):
                if self.current_frame() >= due or until() or not self.step():
                    break
            if self.on_tick is not None:
                self.on_tick()
            if not until():  # once the round is over, no frame after its end is due: the clock's count is not lag
                self.lag = max(0, due - self.current_frame())
                self.max_lag = max(self.max_lag, self.lag)
                if self.on_lag is not None and self.lag > LAG_REPORT_FRAMES and tick >= next_report:
                    self.on_lag(self.lag)
                    next_report = tick + FRAME_HZ // per_tick
            self.ticks += 1
            tick += 1
            if self.pause is not None:
                await self.pause()
                tick = max(tick, int((trio.current_time() - start) / period))  # no burst of missed ticks
            await trio.sleep_until(start + tick * per_tick / FRAME_HZ)
