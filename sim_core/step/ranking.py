"""Round end and ranking (spec/simcore.md §6.5).

The round ends when every car has finished, when the time limit is reached, or when the endgame window
closes. The window opens once no unfinished *alive* car remains (alive = neither retired nor disabled by
a broken motor or battery); it lasts at most 120 frames and closes early once every unfinished car has
stayed below 0.05 m/s for 15 consecutive frames (the route-frame car has no angular speed to test).

Ranking blocks: ① finished by finish frame, ② alive, ③ disabled (retired or without drive); within ②–③
laps ↓, progress ↓; every tie → slot (the slot order stands in for PeerId order). Points: P − k + 1.
"""

from __future__ import annotations

from typing import Final

from enum import StrEnum

from sim_core.constants import DISABLED_SPEED_MAX_UM_S, ENDGAME_MAX_FRAMES, ENDGAME_SETTLED_FRAMES
from sim_core.state.layout import (
    BROKEN_MASK, END_ALL_FINISHED, END_ENDGAME, END_TIME_LIMIT, FINISHED_FRAME, LAPS, PROGRESS, STATUS,
    STATUS_FINISHED, STATUS_RACING, STATUS_RETIRED, VH, VLAT, VS, W_DONE, W_END_REASON, W_ENDGAME, W_FRAME, W_SETTLED,
)
from sim_core.step.model import CarModel

SETTLED_SPEED_SQ: Final = DISABLED_SPEED_MAX_UM_S * DISABLED_SPEED_MAX_UM_S


class CarStatus(StrEnum):
    """Where a car stands in its round: the ``status`` of ``World.standings`` (the value is what JSON shows).

    ``finished`` and ``retired`` (chassis broken) are saved state; ``disabled`` (motor or battery broken)
    and ``racing`` are derived from the broken parts."""

    RACING = "racing"
    FINISHED = "finished"
    RETIRED = "retired"
    DISABLED = "disabled"


def is_disabled(c: list[int], model: CarModel) -> bool:
    """Retired, or no longer driven (motor or battery broken): ranking block ③, and it opens the endgame."""
    return c[STATUS] == STATUS_RETIRED or not model.mechanics(c[BROKEN_MASK]).functional


def car_status(c: list[int], model: CarModel) -> CarStatus:
    """The car's ``CarStatus``: a legal finish first (it is never demoted), then retired, disabled, racing."""
    if c[STATUS] == STATUS_FINISHED:
        return CarStatus.FINISHED
    if c[STATUS] == STATUS_RETIRED:
        return CarStatus.RETIRED
    return CarStatus.DISABLED if is_disabled(c, model) else CarStatus.RACING


def update_round_end(world: list[int], cars: list[list[int]], models: list[CarModel], time_limit_frames: int) -> None:
    """Decide whether the frame that just ran (``world[W_FRAME]`` already counts it) ended the round.

    The usual frame (no endgame yet, a car still racing with its drive) can only hit the time limit:
    it is decided from the first such car, without the lists of the full rules below."""
    if not world[W_ENDGAME] and any(c[STATUS] == STATUS_RACING and m.mechanics(c[BROKEN_MASK]).functional
                                    for c, m in zip(cars, models)):  # noqa: B905 (equal lengths by construction)
        if world[W_FRAME] >= time_limit_frames:
            _end(world, END_TIME_LIMIT)
        return
    # per frame: equal lengths by construction, and zip's strict= costs ~0.5 µs a call
    unfinished = [(c, m) for c, m in zip(cars, models) if c[STATUS] != STATUS_FINISHED]  # noqa: B905
    if not unfinished:
        _end(world, END_ALL_FINISHED)
        return
    if world[W_ENDGAME] or not any(not is_disabled(c, m) for c, m in unfinished):
        # endgame_frames: 0 = not open; n ≥ 1 = opened n − 1 frames ago (the opening frame is not counted)
        world[W_ENDGAME] += 1
        if world[W_ENDGAME] > 1:
            moving = any(c[STATUS] != STATUS_RETIRED  # retired cars are out of the physics: at rest
                         and c[VS] * c[VS] + c[VLAT] * c[VLAT] + c[VH] * c[VH] >= SETTLED_SPEED_SQ
                         for c, _ in unfinished)
            world[W_SETTLED] = 0 if moving else world[W_SETTLED] + 1
            if world[W_SETTLED] >= ENDGAME_SETTLED_FRAMES or world[W_ENDGAME] > ENDGAME_MAX_FRAMES:
                _end(world, END_ENDGAME)
                return
    if world[W_FRAME] >= time_limit_frames:
        _end(world, END_TIME_LIMIT)


def _end(world: list[int], reason: int) -> None:
    world[W_DONE] = 1
    world[W_END_REASON] = reason


def ranking(cars: list[list[int]], models: list[CarModel]) -> list[int]:
    """Slots in round rank order."""

    def key(slot: int) -> tuple[int, int, int, int]:
        c = cars[slot]
        if c[STATUS] == STATUS_FINISHED:
            return (0, c[FINISHED_FRAME], 0, slot)
        block = 2 if is_disabled(c, models[slot]) else 1
        return (block, -c[LAPS], -c[PROGRESS], slot)

    return sorted(range(len(cars)), key=key)
