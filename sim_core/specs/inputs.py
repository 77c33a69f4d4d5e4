"""Player inputs: skill events only (no steering, throttle or brake), validated with coded errors.

Per frame and slot at most ``MAX_INPUT_EVENTS_PER_FRAME`` events, each skill at most once, each skill
present in the car's chip slots, and the ``hold`` flag matching the skill's kind (Event skills fire once,
Hold skills act on each held frame). Skills settle in the canonical order of ``SKILLS``.
"""

from __future__ import annotations

from typing import Final

from dataclasses import dataclass
from enum import StrEnum

from open4wd_base.errors import LocalError
from sim_core.errors import SimError



class Skill(StrEnum):
    """The eight skills in the spec's order (the order is the canonical settle order within a frame).

    Event skills (boost, brake, jump, slam) fire once; Hold skills (swerves, stabilize, weapon) act on
    every held frame. The values are the names inputs, chips and the wire use."""

    BOOST = "boost"
    BRAKE = "brake"
    SWERVE_LEFT = "swerve_left"
    SWERVE_RIGHT = "swerve_right"
    JUMP = "jump"
    SLAM = "slam"
    STABILIZE = "stabilize"
    WEAPON = "weapon"


SKILLS: Final[tuple[str, ...]] = tuple(skill.value for skill in Skill)
"""The skill names in the spec's order, as plain strings: names end up in ``ChipSlot`` and so in the
``repr`` the state's topology digest is taken over, where an enum member would read differently."""
HOLD_SKILLS: Final = frozenset(skill.value for skill in (Skill.SWERVE_LEFT, Skill.SWERVE_RIGHT, Skill.STABILIZE, Skill.WEAPON))
EVENT_SKILLS: Final = frozenset(SKILLS) - HOLD_SKILLS
SKILL_INDEX: Final = {name: i for i, name in enumerate(SKILLS)}
MAX_INPUT_EVENTS_PER_FRAME: Final = 4


@dataclass(frozen=True, slots=True)
class SkillEvent:
    """One skill trigger: ``hold`` is True for a Hold tick (swerve, stabilize, weapon), False for an Event."""

    skill: str
    hold: bool


def validate_events(events: object, chip_skills: tuple[str, ...], slot: int) -> tuple[int, ...]:
    """Check one slot's events for one frame; return their skill indices in canonical settle order.

    Raises ``SimError`` (``input-*``) for events the rules refuse: too many, an unknown or repeated skill,
    a skill not in ``chip_skills``, ``hold`` not matching the skill's kind. Events that are not a list of
    ``SkillEvent(skill, hold: bool)`` are the caller's bug: ``LocalError`` (``input-invalid``)."""
    if not isinstance(events, (list, tuple)):
        raise LocalError("input-invalid", f"slot {slot}: events must be a list of SkillEvent")
    if len(events) > MAX_INPUT_EVENTS_PER_FRAME:
        raise SimError("input-too-many-events", f"slot {slot}: at most {MAX_INPUT_EVENTS_PER_FRAME} events per frame")
    seen: list[int] = []
    for event in events:
        if not isinstance(event, SkillEvent) or type(event.hold) is not bool:
            raise LocalError("input-invalid", f"slot {slot}: every event must be a SkillEvent(skill, hold: bool)")
        index = SKILL_INDEX.get(event.skill) if isinstance(event.skill, str) else None
        if index is None:
            raise SimError("input-unknown-skill", f"slot {slot}: unknown skill {event.skill!r}; one of {', '.join(SKILLS)}")
        if index in seen:
            raise SimError("input-duplicate-skill", f"slot {slot}: skill {event.skill} appears twice in one frame")
        if event.skill not in chip_skills:
            raise SimError("input-skill-not-in-chip", f"slot {slot}: skill {event.skill} is not in this car's chip slots")
        if event.hold != (event.skill in HOLD_SKILLS):
            kind = "a Hold" if event.skill in HOLD_SKILLS else "an Event"
            raise SimError("input-hold-mismatch", f"slot {slot}: {event.skill} is {kind} skill; set hold accordingly")
        seen.append(index)
    return tuple(sorted(seen))
