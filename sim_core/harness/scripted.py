"""Reproducible input streams for headless runs, sync-tests, benchmarks and tests.

``RandomInputs`` draws from SplitMix64 (pure integer arithmetic, identical on every platform, unlike
relying on a library RNG's internals). Each frame, each slot and each skill of that slot's chip in chip
order: an Event skill fires with probability 8/1000, a Hold skill is held with probability 250/1000.
Streams never exceed a chip's slot count, so they always satisfy the input rules.
"""

from __future__ import annotations

from sim_core.intmath import MASK64, SPLITMIX64_GAMMA, splitmix64_mix
from sim_core.specs.inputs import HOLD_SKILLS, MAX_INPUT_EVENTS_PER_FRAME, SkillEvent

EVENT_PER_MILLE = 8
HOLD_PER_MILLE = 250


class SplitMix64:
    """SplitMix64 (Steele, Lea, Flood): a 64-bit generator in pure integer arithmetic, the same on every
    platform and Python version."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next(self) -> int:
        """The next 64-bit value."""
        self.state = (self.state + SPLITMIX64_GAMMA) & MASK64
        return splitmix64_mix(self.state)


class RandomInputs:
    """Per-frame random skill events for every slot, from each slot's chip skills (at most
    ``MAX_INPUT_EVENTS_PER_FRAME`` a slot: a chip of many skills can draw more)."""

    def __init__(self, chip_skills: list[tuple[str, ...]], seed: int) -> None:
        self.chip_skills = chip_skills
        self.rng = SplitMix64(seed)

    def next_frame(self) -> dict[int, list[SkillEvent]]:
        """The next frame's events by slot (slots without events are left out)."""
        frame: dict[int, list[SkillEvent]] = {}
        for slot, skills in enumerate(self.chip_skills):
            events = []
            for skill in skills:
                hold = skill in HOLD_SKILLS
                if self.rng.next() % 1000 < (HOLD_PER_MILLE if hold else EVENT_PER_MILLE):
                    events.append(SkillEvent(skill, hold))
            if events:  # the rules' cap: the first skills drawn, in the chip's order
                frame[slot] = events[:MAX_INPUT_EVENTS_PER_FRAME]
        return frame


def no_inputs() -> dict[int, list[SkillEvent]]:
    """A frame without any input (the ``--inputs none`` stream)."""
    return {}
