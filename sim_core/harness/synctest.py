"""A GGRS-style sync-test: every frame, roll back D frames, re-simulate them, and compare hashes.

The forward run records, per frame, the state bytes after the step. Once D frames exist, the world is
loaded from the state saved D frames earlier and the last D frames are stepped again with the same
inputs; each re-simulated state must hash to what the forward run recorded. The run continues from the
re-simulated state, as a rollback session does. ``fault_frame`` corrupts the state once (fault
injection: ``sim_core.harness.corrupt``) to prove that mismatches are caught.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from sim_core.specs.inputs import SkillEvent
from sim_core.harness.corrupt import nudge
from sim_core.world import World

Inputs = dict[int, list[SkillEvent]]


@dataclass
class SyncTestResult:
    """What a sync-test found: frames run, re-simulated frames, the first frame whose re-simulation
    differed (with the first differing saved fields) and the final state hash."""

    frames: int
    check_distance: int
    resimulated_frames: int = 0
    mismatch_frame: int | None = None
    differing_fields: list[tuple[str, int, int]] = field(default_factory=list)
    final_hash: bytes = b""

    @property
    def ok(self) -> bool:
        """Whether every re-simulated frame hashed as first recorded."""
        return self.mismatch_frame is None


def first_differences(world: World, expected: bytes, actual: bytes, limit: int = 8) -> list[tuple[str, int, int]]:
    """The first differing saved fields: (name, expected value, actual value)."""
    header = len(expected) - world.codec.values.size
    want = world.codec.values.unpack_from(expected, header)
    got = world.codec.values.unpack_from(actual, header)
    names = world.field_names()
    return [(names[i], a, b) for i, (a, b) in enumerate(zip(want, got, strict=True)) if a != b][:limit]


def run_synctest(world: World, frames: int, check_distance: int, next_inputs: Callable[[], Inputs],
                 fault_frame: int | None = None) -> SyncTestResult:
    """Run ``frames`` frames (or until the round ends) with a rollback of ``check_distance`` every frame."""
    result = SyncTestResult(frames=0, check_distance=check_distance)
    saved: dict[int, bytes] = {world.frame: world.save_state()}  # frame number → state at that frame
    inputs: dict[int, Inputs] = {}
    for _ in range(frames):
        if world.done:
            break
        start = world.frame
        inputs[start] = next_inputs()
        world.step(inputs[start])
        if fault_frame is not None and world.frame == fault_frame:
            nudge(world)
        saved[world.frame] = world.save_state()
        result.frames += 1
        origin = world.frame - check_distance
        if check_distance and origin in saved:
            if not _resimulate(world, origin, saved, inputs, result):
                return result
        for old in [f for f in saved if f < world.frame - check_distance]:
            del saved[old]
            inputs.pop(old, None)
    result.final_hash = world.state_hash()
    return result


def _resimulate(world: World, origin: int, saved: dict[int, bytes], inputs: dict[int, Inputs],
                result: SyncTestResult) -> bool:
    end = world.frame
    world.restore_own_state(saved[origin])  # bytes this world saved: a rollback trusts them
    while world.frame < end:
        world.step(inputs[world.frame])
        result.resimulated_frames += 1
        actual = world.save_state()
        expected = saved[world.frame]
        if hashlib.sha256(actual).digest() != hashlib.sha256(expected).digest():
            result.mismatch_frame = world.frame
            result.differing_fields = first_differences(world, expected, actual)
            return False
    return True
