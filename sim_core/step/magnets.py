"""Magnet forces of one frame (spec/simcore.md §7.4 "Magnets", 算式表 §5), in the route frame.

Sources are the track's static magnets (``TrackSpec.magnets``) and every car's active magnet weapon
while its Hold is on; targets are the passive sub-meshes (steel) of the cars' live parts:

- source → passive: ``F = s·χ·0.0008/r²`` toward the source, zero when r < 1 cm;
- source ↔ source: ``F = sA·sB·(−nA·nB)·0.0008/r²`` along the line between them, > 0 pushing them
  apart (like poles pointing at each other repel);
- a weapon's strength is ``s = P·0.03`` N, P the weapon's budget of the frame in W (the energy available
  at the frame's start × its chip allocation, as the skill's budget: ``sim_core.step.physics._skills``);
- every force acts at the COM (the route-frame car has no rotation, so a torque could change nothing);
  a car's source takes the reaction of everything it pulls or pushes (Newton's third law, by hand),
  the track takes none.

Positions come from one snapshot of the frame's start, before any car moves, so the result does not
depend on the cars' order (like ``sim_core.step.contact``). Cars out of the race or under a penalty take
no part. Components are truncated toward zero (``div_trunc`` is odd, so a reaction is exactly the
opposite of its action).

Units: strengths mN, χ ‰, positions µm, poles ppm, impulses µg·µm/s per frame (1 N·s = 1e15):
``s[mN]·χ[‰]·0.0008 m² / r[µm]²`` = ``s·χ·800/r²`` N, so the impulse of a frame is ``s·χ·4e16/(3·r²)``,
and with the poles' product in ppm ``sA·sB·(−nA·nB)·4e10/(3·r²)``. Both are computed in grains of 1e6
µg·µm/s (1e-9 N·s): the magnitude ``s·χ·4e10 // (3·r²)`` (floored; for the poles truncated toward zero),
then each component ``magnitude·d/r`` truncated toward zero, times 1e6. Every product then stays below
2^63 for strengths up to 10 N, χ up to 10 and any distance on a track (|d| ≤ r), which the compiled step
computes in machine words; only far larger weapon fields fall back to big integers (same results, slower).
"""

from __future__ import annotations

from typing import Final

from sim_core.intmath import div_trunc, isqrt, mul
from sim_core.specs.magnets import MagnetSource
from sim_core.specs.route import Route
from sim_core.state.layout import ARC, BROKEN_MASK, H, LAT, PENALTY_TIMER, REMAINING_Q, RETIRED_FRAME
from sim_core.step.model import CarModel
from sim_core.step.placement import CarFrame, Ribbon

PASSIVE_NUM: Final = 40_000_000_000
"""4e10: with ``FORCE_DEN``, the impulse of a frame of ``s·χ/r²`` (mN, ‰, µm) in ``GRAIN`` units."""
SOURCES_NUM: Final = 40_000
"""4e4: with ``FORCE_DEN``, the impulse of a frame of ``sA·sB·(nA·nB)/r²`` (mN, mN, ppm, µm) in ``GRAIN`` units."""
FORCE_DEN: Final = 3
GRAIN: Final = 1_000_000
"""The magnets' impulses are whole multiples of 1e6 µg·µm/s (1e-9 N·s: 0.02 µm/s on a 50 g car), so that
their arithmetic stays within 63 bits for every ordinary strength and distance (docstring)."""
PPM: Final = 1_000_000
MIN_RANGE_SQ_UM2: Final = 100_000_000
"""(1 cm)²: closer than this a magnet exerts nothing (the spec's guard against r → 0)."""
WEAPON_MN_PER_MW_NUM: Final = 3
WEAPON_MN_PER_MW_DEN: Final = 100
"""K_MAGNET_FORCE 0.03 N/W: mW · 3/100 = mN."""
WEAPON: Final = 7  # the weapon skill's index in SKILLS (sim_core.specs.inputs)

Point = tuple[int, int, int]
NOTHING: Final = (0, 0, 0)
Pole = tuple[int, int, int, int, int, int, int]  # (x, y, z, strength mN, north x, y, z ppm), world


def passive_pull(source: Point, strength_mn: int, target: Point, susceptibility_milli: int) -> Point:
    """The impulse (world, µg·µm/s) a source at ``source`` gives a passive sub-mesh at ``target``: toward
    the source; nothing closer than 1 cm. (Always a tuple: the compiled step keeps it unboxed.)"""
    dx, dy, dz = source[0] - target[0], source[1] - target[1], source[2] - target[2]
    r2 = mul(dx, dx) + mul(dy, dy) + mul(dz, dz)
    if r2 < MIN_RANGE_SQ_UM2:
        return NOTHING
    # GRAIN units, floored: ⌊a / (3·r²)⌋ = ⌊⌊a / 3⌋ / r²⌋, without the product 3·r² (beyond a machine word's
    # fast path); s·χ·4e10 with mul, 4e10 being beyond that fast path too
    magnitude = mul(strength_mn * susceptibility_milli, PASSIVE_NUM) // FORCE_DEN // r2
    return _along(magnitude, dx, dy, dz, isqrt(r2))


def pole_push(a: Pole, b: Pole) -> Point:
    """The impulse (world) source ``a`` gives source ``b``: away from ``a`` when their poles point against
    each other, toward it when they point alike; nothing closer than 1 cm."""
    dx, dy, dz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    r2 = dx * dx + dy * dy + dz * dz
    if r2 < MIN_RANGE_SQ_UM2:
        return NOTHING
    alike = div_trunc(a[4] * b[4] + a[5] * b[5] + a[6] * b[6], PPM)  # nA·nB in ppm
    magnitude = div_trunc(-a[3] * b[3] * alike * SOURCES_NUM, FORCE_DEN * r2)  # GRAIN units, > 0 apart
    return _along(magnitude, dx, dy, dz, isqrt(r2))


def _along(magnitude: int, dx: int, dy: int, dz: int, r: int) -> Point:
    """``magnitude`` (GRAIN units) along (dx, dy, dz) of length ``r``, in µg·µm/s, each component
    truncated toward zero before it is scaled (|magnitude·d| ≤ |magnitude|·r stays small)."""
    return (mul(div_trunc(mul(magnitude, dx), r), GRAIN), mul(div_trunc(mul(magnitude, dy), r), GRAIN),
            mul(div_trunc(mul(magnitude, dz), r), GRAIN))


class _Steel:
    """One passive sub-mesh of the frame's snapshot: where it is (world, µm) and its susceptibility (‰). A
    native object, not a tuple: the pair loops read it as machine words, where a tuple kept in a list is
    boxed (an allocation for each of its ints) and unboxed whole at each read."""

    def __init__(self, at: Point, chi: int) -> None:
        self.at = at
        self.chi = chi


class _Actor:
    """One car of the frame's snapshot: its frame, its steel and its held weapon pole in world coordinates,
    and the impulse summed on it."""

    def __init__(self, slot: int, frame: CarFrame, steel: list[_Steel], pole: Pole | None) -> None:
        self.slot = slot
        self.frame = frame
        self.steel = steel
        self.pole = pole
        self.jx = self.jy = self.jz = 0


class Magnets:
    """The round's magnets: the track's sources and which cars carry a magnet weapon (built once by
    ``World``; ``pulls`` once per frame)."""

    def __init__(self, route: Route, sources: tuple[MagnetSource, ...], models: list[CarModel]) -> None:
        self.models = models
        self.sources: list[Pole] = [(*route.seated(s.position_um, s.surface_gap_um), s.strength_mn, *s.n_pole_e6)
                                    for s in sources]
        self.pole_slots = [slot for slot, model in enumerate(models) if model.magnet_pole is not None]
        self.ribbon: Ribbon | None = Ribbon(route) if self.sources or self.pole_slots else None

    def pulls(self, cars: list[list[int]], skills: list[tuple[int, ...]]) -> list[tuple[int, int, int]] | None:
        """Each car's magnet impulse of this frame along its route axes (s, l, h), or None when no source
        acts this frame (no track source and no magnet weapon held)."""
        held: dict[int, int] = {}
        for slot in self.pole_slots:
            strength = self._strength(cars[slot], self.models[slot], skills[slot])
            if strength > 0:
                held[slot] = strength
        if not self.sources and not held:
            return None
        actors = [actor for slot, c in enumerate(cars) if (actor := self._actor(slot, c, held.get(slot, 0)))]
        for source in self.sources:
            at = (source[0], source[1], source[2])
            for actor in actors:
                for steel in actor.steel:
                    j = passive_pull(at, source[3], steel.at, steel.chi)
                    actor.jx, actor.jy, actor.jz = actor.jx + j[0], actor.jy + j[1], actor.jz + j[2]
                if actor.pole is not None:
                    j = pole_push(source, actor.pole)
                    actor.jx, actor.jy, actor.jz = actor.jx + j[0], actor.jy + j[1], actor.jz + j[2]
        for a in actors:
            pole = a.pole
            if pole is None:
                continue
            at = (pole[0], pole[1], pole[2])
            for b in actors:
                if b is a:
                    continue
                for steel in b.steel:
                    _exchange(a, b, passive_pull(at, pole[3], steel.at, steel.chi))
                if b.pole is not None and a.slot < b.slot:
                    _exchange(a, b, pole_push(pole, b.pole))
        out = [(0, 0, 0)] * len(cars)
        for a in actors:
            out[a.slot] = a.frame.along_axes(a.jx, a.jy, a.jz)
        return out

    def _strength(self, c: list[int], model: CarModel, skills: tuple[int, ...]) -> int:
        """The car's magnet weapon strength (mN) this frame: its budget while the Hold is on and the weapon
        could fire (in the race, no penalty, chip and weapon alive), else 0."""
        if c[RETIRED_FRAME] >= 0 or c[PENALTY_TIMER] > 0 or WEAPON not in skills:
            return 0
        mech = model.mechanics(c[BROKEN_MASK])
        if not (mech.skills_enabled and mech.weapon_alive):
            return 0
        available = model.configured_output_mw * c[REMAINING_Q] // model.initial_q
        return available * model.allocation[WEAPON] // 100 * WEAPON_MN_PER_MW_NUM // WEAPON_MN_PER_MW_DEN

    def _actor(self, slot: int, c: list[int], strength: int) -> _Actor | None:
        """The car's part in the snapshot (``strength``: its held weapon's, 0 when it holds none), or None
        when it has neither steel nor a held pole (or is out)."""
        if c[RETIRED_FRAME] >= 0 or c[PENALTY_TIMER] > 0:
            return None
        model = self.models[slot]
        steel = model.mechanics(c[BROKEN_MASK]).steel
        if not steel and not strength:
            return None
        ribbon = self.ribbon
        assert ribbon is not None  # there are sources or poles, or pulls returned before any actor
        frame = CarFrame(ribbon, c[ARC], c[LAT], c[H] + model.height_um // 2)
        points = [_Steel(frame.at(x, y, z), chi) for x, y, z, chi in steel]
        pole: Pole | None = None
        magnet = model.magnet_pole
        if strength and magnet is not None:
            x, y, z, nx, ny, nz = magnet
            at = frame.at(x, y, z)
            north = frame.to_world(-nz, nx, ny)  # the car's front is −Z: its +Z runs along −tangent
            pole = (at[0], at[1], at[2], strength, north[0], north[1], north[2])
        return _Actor(slot, frame, points, pole)


def _exchange(a: _Actor, b: _Actor, j: Point) -> None:
    """``b`` takes the impulse ``j`` from ``a``'s source, and ``a`` the opposite (Newton's third law)."""
    b.jx, b.jy, b.jz = b.jx + j[0], b.jy + j[1], b.jz + j[2]
    a.jx, a.jy, a.jz = a.jx - j[0], a.jy - j[1], a.jz - j[2]
