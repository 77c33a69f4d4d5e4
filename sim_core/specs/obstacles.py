"""A track's solid entities as exact integers (spec/assets.md §5.6, simcore §7.4 "Entities"): fixed
decorations, ``kinematic_move`` movers, and which of them are destructible.

The bake keeps each entity's box, axes and motion (``sim_core.assets.track``); ``sim_core.assets.convert``
turns every entity with physics (a decoration whose ``physics`` is ``default``, a mover) into an
``ObstacleSpec`` and the step (``sim_core.step.obstacles``) keeps the cars out of it. Validation raises
``SimError`` ``track-invalid-obstacle``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NoReturn

from sim_core.errors import SimError
from sim_core.intmath import FULL_TURN_MDEG, UNIT
from sim_core.specs.items import box_problem, is_vector
from sim_core.specs.materials import material

Vec3 = tuple[int, int, int]
MotionCurve = Literal["sin", "step", "linear"]

OBSTACLES_MAX = 100
"""A track has at most 100 entities (spec/assets.md §5.6)."""
DESTRUCTIBLE_MAX = 50
"""… and at most 50 destructible ones."""
AMPLITUDE_MAX_UM = 20_000_000
"""A mover travels at most 20 m (``amplitude_m``)."""
PERIOD_MIN_FRAMES = 30  # period_ms ≥ 500
PERIOD_MAX_FRAMES = 216_000  # an hour: the bake's bound on period_ms
ROTATION_MIN_MDEG = 1_000  # rotation_amplitude_deg 1..360
OPEN_DEFAULT_MILLI = 500
"""A step curve is out for the first half of its period unless ``open_duration_ratio`` says otherwise."""
COORDINATE_MAX_UM = 10_000_000_000
"""A pivot lies within 10 km of the origin (far beyond any track's box)."""


def _fail(message: str) -> NoReturn:
    raise SimError("track-invalid-obstacle", message)


@dataclass(frozen=True, slots=True)
class MotionSpec:
    """A ``kinematic_move`` entity's motion, once a period (``period_frames``), ``phase_frames`` ahead:

    - travel: ``amplitude_um`` (its local ``amplitude_m`` turned into the world, µm), swept out and back
      along ``curve`` (``sin`` smooth, ``linear`` at a steady speed, ``step`` out for the period's first
      ``open_milli`` ‰, back for the rest);
    - rotation: about ``rotation_axis_e6`` (world, unit ppm) through ``pivot_um`` (the entity node's
      origin, world µm), by up to ``rotation_mdeg`` millidegrees out and back along the same curve, or
      turning steadily once a period when it is a whole turn (360 000); 0: it does not turn."""

    curve: MotionCurve
    period_frames: int
    phase_frames: int
    amplitude_um: Vec3
    rotation_axis_e6: Vec3 = (0, 0, 0)
    rotation_mdeg: int = 0
    pivot_um: Vec3 = (0, 0, 0)
    open_milli: int = OPEN_DEFAULT_MILLI

    def validate(self, what: str) -> None:
        """``SimError`` ``track-invalid-obstacle`` unless every field is in range."""
        if self.curve not in ("sin", "step", "linear"):
            _fail(f"{what}: curve must be sin, step or linear")
        if type(self.period_frames) is not int or not PERIOD_MIN_FRAMES <= self.period_frames <= PERIOD_MAX_FRAMES:
            _fail(f"{what}: period_frames must be an int in {PERIOD_MIN_FRAMES}..{PERIOD_MAX_FRAMES}")
        if type(self.phase_frames) is not int or not 0 <= self.phase_frames <= PERIOD_MAX_FRAMES:
            _fail(f"{what}: phase_frames must be an int in 0..{PERIOD_MAX_FRAMES}")
        if (not is_vector(self.amplitude_um, AMPLITUDE_MAX_UM)
                or sum(a * a for a in self.amplitude_um) > AMPLITUDE_MAX_UM * AMPLITUDE_MAX_UM):
            _fail(f"{what}: amplitude_um must be three ints, at most {AMPLITUDE_MAX_UM} µm long")
        if type(self.rotation_mdeg) is not int or not (self.rotation_mdeg == 0
                                                       or ROTATION_MIN_MDEG <= self.rotation_mdeg <= FULL_TURN_MDEG):
            _fail(f"{what}: rotation_mdeg must be 0 or an int in {ROTATION_MIN_MDEG}..{FULL_TURN_MDEG}")
        if not is_vector(self.rotation_axis_e6, UNIT + UNIT // 100) or not is_vector(self.pivot_um, COORDINATE_MAX_UM):
            _fail(f"{what}: rotation_axis_e6 and pivot_um must be three ints (a unit axis in ppm; µm)")
        if self.rotation_mdeg and abs(sum(a * a for a in self.rotation_axis_e6) - UNIT * UNIT) > UNIT * UNIT // 100:
            _fail(f"{what}: a turning entity's rotation_axis_e6 must be a unit vector (ppm)")
        if type(self.open_milli) is not int or not 0 <= self.open_milli <= 1000:
            _fail(f"{what}: open_milli must be an int in 0..1000")
        if self.curve != "step" and self.open_milli != OPEN_DEFAULT_MILLI:
            _fail(f"{what}: open_milli is for the step curve only")


@dataclass(frozen=True, slots=True)
class ObstacleSpec:
    """One solid entity: its box ``min_um``..``max_um`` (world, µm, where it stands at rest), its
    ``material`` (restitution, and strengths when it is ``destructible``) and its ``motion`` (None: fixed)."""

    min_um: Vec3
    max_um: Vec3
    material: str
    destructible: bool = False
    motion: MotionSpec | None = None

    def validate(self, what: str) -> None:
        """``SimError`` ``track-invalid-obstacle`` unless every field is in range."""
        problem = box_problem(self.min_um, self.max_um)
        if problem is not None:
            _fail(f"{what}: {problem}")
        if not isinstance(self.material, str):
            _fail(f"{what}: material must be a material id")
        solid = material(self.material)
        if solid.is_fluid:
            _fail(f"{what}: material {self.material!r} is a fluid, not a solid")
        if type(self.destructible) is not bool:
            _fail(f"{what}: destructible must be a bool")
        if self.destructible and (solid.yield_strength_kpa is None or solid.ultimate_strength_kpa is None):
            _fail(f"{what}: a destructible entity's material {self.material!r} needs its strengths")
        if self.motion is not None:
            if not isinstance(self.motion, MotionSpec):
                _fail(f"{what}: motion must be a MotionSpec or None")
            self.motion.validate(f"{what}.motion")


def check_destructibles(obstacles: tuple[ObstacleSpec, ...]) -> None:
    """``SimError`` ``track-invalid-obstacle`` if more than ``DESTRUCTIBLE_MAX`` are destructible."""
    if sum(1 for o in obstacles if o.destructible) > DESTRUCTIBLE_MAX:
        _fail(f"at most {DESTRUCTIBLE_MAX} obstacles may be destructible")
