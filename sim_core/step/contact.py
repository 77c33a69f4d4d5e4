"""Car-to-car contact in the route frame, independent of the order in which cars are listed.

Each car is its AABB aligned with the route (length along s, width along right, height along up). Every
overlapping pair (i < j) is resolved from the same pre-contact snapshot along its axis of least
penetration (s, then lateral on ties): an impulse (1 + e)·m_eff·v_close with e = Average of the two bodies'
restitution, and a positional split of the overlap in inverse proportion to mass. Along the other axis of
the road plane the bodies rub: a friction impulse that takes out their relative sliding speed, at most
μ·(the normal impulse) with μ = Average of the two bodies' friction (spec §3 combine rules). Both load the
contacting collider, each car's body (its chassis once the body is broken), with impact and shear
fatigue (spec §7.2, ``impact_fatigue``). Corrections are summed per car and applied after all pairs, so
the result does not depend on pair order.
"""

from __future__ import annotations

from typing import Final

from sim_core.constants import FATIGUE_BREAK_PPM
from sim_core.intmath import component, div_round, mul
from sim_core.state.layout import ARC, BROKEN_MASK, H, LAT, P_FATIGUE, VELOCITY_FIELDS, VLAT, VS, part_field

SHEAR_SLIP_MIN_UM_S: Final = 100_000  # shear fatigue needs a sliding speed of at least 0.1 m/s (§7.2)
NO_ATTACKER: Final = -1  # an impact no other car caused (a track entity): it credits nobody

Credits = dict[tuple[int, int], dict[int, int]]
"""The frame's contribution ledger (spec §6.5, §8.2: frame-local, never saved): (car, part) → {the other
car that caused the damage: the fatigue (ppm) its impacts on that part added this frame}."""


class ContactBox:
    """What contact reads of a car's body (``Mechanics.contact_box``, ``CarModel.ghost_box``): its length,
    width and height (µm), its mass (µg; 0 for a car that takes no part: a ghost) and its restitution (‰).
    A native object, not a tuple: the frame's list of them holds references (a tuple would be boxed anew
    every frame, with its ints), and each stage reads the fields it needs as machine words."""

    def __init__(self, length: int, width: int, height: int, mass: int, restitution: int) -> None:
        self.length, self.width, self.height = length, width, height
        self.mass, self.restitution = mass, restitution


class Collider:
    """What contact needs of one car's body beyond its box (derived once per car, ``Frame``): its friction
    and the strengths and fatigue fields of the parts that take its impacts (body, then chassis), and of its
    weapon (the rotors' strikes: ``sim_core.step.rotors``)."""

    def __init__(self, friction_milli: int, body: int, body_strength_kpa: tuple[int, int] | None, chassis: int,
                 chassis_strength_kpa: tuple[int, int] | None,
                 weapon_strength_kpa: tuple[int, int] | None = None) -> None:
        self.friction_milli = friction_milli
        self.body, self.chassis = body, chassis
        self.body_strength_kpa = body_strength_kpa  # (yield, ultimate), or None: a material without strengths
        self.chassis_strength_kpa = chassis_strength_kpa
        self.weapon_strength_kpa = weapon_strength_kpa  # None also without a weapon

    def struck_part(self, c: list[int]) -> tuple[int, tuple[int, int] | None]:
        """The part that takes this car's impacts: the body, or the chassis once the body is broken."""
        if c[BROKEN_MASK] >> self.body & 1:
            return self.chassis, self.chassis_strength_kpa
        return self.body, self.body_strength_kpa


def impact_fatigue(energy_21: int, area_um2: int, strength_kpa: tuple[int, int]) -> tuple[int, bool]:
    """Spec §7.2 for one contact: the fatigue it adds (ppm) and whether its stress breaks the part at once.

    ``energy_21`` is the impact's energy in 1e-21 J (µg·(µm/s)²), ``area_um2`` the loaded face. Stress in Pa
    is E / (area · 0.001 m) = energy_21 / (area_um2 · 10⁶); only a stress above the yield strength adds
    fatigue, stress / ultimate (as ppm: energy_21 // (area_um2 · ultimate_Pa)), and a stress above
    1.5 × ultimate breaks the part. Integer comparisons of the cross products, no division before them."""
    yield_kpa, ultimate_kpa = strength_kpa
    load = area_um2 * 1_000_000_000  # area_um2 · 10⁶ · 1000 (kPa → Pa)
    if energy_21 <= yield_kpa * load:
        return 0, False
    return energy_21 // (area_um2 * ultimate_kpa * 1000), 2 * energy_21 > 3 * ultimate_kpa * load


def resolve(cars: list[list[int]], boxes: list[ContactBox], loop_length: int,
            colliders: list[Collider], credits: Credits) -> dict[int, int]:
    """``boxes[k]``: car k's ``ContactBox`` (mass 0 if it takes no part);
    ``colliders[k]`` its body (``Collider``). Returns the parts broken by impacts this frame, as a bit mask
    per car (the frame's end-of-frame transaction commits them); each car's impacts on the other's part
    go to ``credits``."""
    moves: dict[int, list[int]] = {}
    loads: dict[tuple[int, int], list[int]] = {}  # (car, part) -> [fatigue ppm added, broken at once]
    # on a loop, positions within the lap: the gap of two of them is then brought into the wrapped range
    # [−L/2, L − L/2) by at most one ±L, with two comparisons instead of a modulo per pair
    arcs = [c[ARC] % loop_length for c in cars] if loop_length else [c[ARC] for c in cars]
    lengths = [box.length for box in boxes]
    half_loop = loop_length // 2
    upper = loop_length - half_loop
    longest = lengths[0]
    for length in lengths:  # max(lengths), which the compiled step would call as the generic builtin
        longest = length if length > longest else longest
    for i, j in _near_pairs(arcs, longest, loop_length):
        box = boxes[i]
        li, wi, hi, mi, ei = box.length, box.width, box.height, box.mass, box.restitution
        if not mi:
            continue
        ci = cars[i]
        ds = arcs[j] - arcs[i]
        if loop_length:
            if ds >= upper:
                ds -= loop_length
            elif ds < -half_loop:
                ds += loop_length
        pen_s = (li + lengths[j]) // 2 - (ds if ds >= 0 else -ds)
        if pen_s <= 0:
            continue
        box = boxes[j]
        lj, wj, hj, mj, ej = box.length, box.width, box.height, box.mass, box.restitution
        if not mj:
            continue
        cj = cars[j]
        dl = cj[LAT] - ci[LAT]
        pen_l = (wi + wj) // 2 - abs(dl)
        if pen_l <= 0 or abs(cj[H] - ci[H]) >= (hi + hj) // 2:
            continue
        axis, gap, pen = (VS, ds, pen_s) if pen_s <= pen_l else (VLAT, dl, pen_l)
        sign = 1 if gap >= 0 else -1  # direction from i to j along the axis
        closing = mul(ci[axis] - cj[axis], sign)
        total = mi + mj
        impulse = friction = 0
        move_i = moves.setdefault(i, [0, 0, 0, 0])
        move_j = moves.setdefault(j, [0, 0, 0, 0])
        slot = 0 if axis == VS else 1
        if closing > 0:
            impulse = div_round((1000 + (ei + ej) // 2) * closing * mi * mj, 1000 * total)
            other = VLAT if axis == VS else VS
            sliding = ci[other] - cj[other]  # i's speed past j across the normal, before this frame's contact
            slide = sliding if sliding >= 0 else -sliding
            mu = (colliders[i].friction_milli + colliders[j].friction_milli) // 2
            friction = min(slide * mi * mj // total, mu * impulse // 1000)  # stop the slide, or Coulomb's cap
            rub = friction if sliding >= 0 else -friction
            move_i[3 - slot] = move_i[3 - slot] - rub
            move_j[3 - slot] = move_j[3 - slot] + rub
            # impact energy ½·m_eff·v², shear 0.10·|friction impulse|·slide (spec §7.2), on each car's face
            energy = closing * closing * mi * mj // (2 * total)
            shear = friction * slide // 10 if slide >= SHEAR_SLIP_MIN_UM_S else 0
            for k, by, c, (length, width, height) in ((i, j, ci, (li, wi, hi)), (j, i, cj, (lj, wj, hj))):
                part, strength = colliders[k].struck_part(c)
                if strength is not None:
                    area = (width if axis == VS else length) * height
                    for e in (energy, shear):
                        add_impact(loads, k, part, e, area, strength, by, credits)
        push_i = pen * mj // total
        move_i[slot] = move_i[slot] - mul(sign, push_i)
        move_j[slot] = move_j[slot] + mul(sign, pen - push_i)
        move_i[2 + slot] = move_i[2 + slot] - mul(sign, impulse)  # impulses become velocity changes below
        move_j[2 + slot] = move_j[2 + slot] + mul(sign, impulse)
    for k in sorted(moves):
        c, (d_arc, d_lat, j_s, j_l) = cars[k], moves[k]
        mass = boxes[k].mass
        c[ARC] = c[ARC] + d_arc
        c[LAT] = c[LAT] + d_lat
        c[VS] = c[VS] + div_round(j_s, mass)
        c[VLAT] = c[VLAT] + div_round(j_l, mass)
    return commit_loads(cars, loads)


def add_impact(loads: dict[tuple[int, int], list[int]], car: int, part: int, energy_21: int, area_um2: int,
               strength_kpa: tuple[int, int], attacker: int, credits: Credits) -> None:
    """Add one impact on ``part`` of ``car`` to the frame's ``loads`` (``impact_fatigue``), and the fatigue
    it adds to ``attacker``'s contribution in ``credits`` (none for ``NO_ATTACKER`` or the car itself)."""
    load = loads.setdefault((car, part), [0, 0])
    added, breaks = impact_fatigue(energy_21, area_um2, strength_kpa)
    load[0] = load[0] + added
    load[1] = load[1] | breaks
    if added and attacker >= 0 and attacker != car:
        ledger = credits.setdefault((car, part), {})
        ledger[attacker] = ledger.get(attacker, 0) + added


def apply_kicks(cars: list[list[int]], boxes: list[ContactBox], kicks: dict[int, list[int]]) -> None:
    """Add each car's summed impulses of a stage (µg·µm/s along s, l and h) to its velocity, over its
    contact mass, in slot order: the stages that gather them from one snapshot (bullets, rotors) apply
    them here, so the cars' order does not matter."""
    for car in sorted(kicks):
        c, mass = cars[car], boxes[car].mass
        for axis, impulse in enumerate(kicks[car]):
            field = component(VELOCITY_FIELDS, axis)
            c[field] = c[field] + div_round(impulse, mass)


def commit_loads(cars: list[list[int]], loads: dict[tuple[int, int], list[int]]) -> dict[int, int]:
    """Add each (car, part)'s summed impact fatigue of the frame (``[ppm, broken at once]``), in (car, part)
    order; the parts it breaks, as a bit mask per car (the end-of-frame transaction commits them). A broken
    part's fatigue is frozen."""
    broken: dict[int, int] = {}
    for (k, part), (added, at_once) in sorted(loads.items()):
        c = cars[k]
        if c[BROKEN_MASK] >> part & 1:
            continue
        at = part_field(part, P_FATIGUE)
        c[at] = min(c[at] + added, FATIGUE_BREAK_PPM)
        if at_once or c[at] >= FATIGUE_BREAK_PPM:
            broken[k] = broken.get(k, 0) | 1 << part
    return broken


def _near_pairs(arcs: list[int], reach: int, loop_length: int) -> list[tuple[int, int]]:
    """The broad phase: the pairs (i < j, in order) of cars nearer than ``reach`` (the longest car) along
    the route, from one sort of their positions (on a loop also across the lap's start). Two boxes
    overlap along the route only if their gap is under half the sum of their lengths, so every pair left
    out has nothing to resolve, and the pairs kept are resolved in the order of the full i < j loop."""
    count = len(arcs)
    order = sorted(range(count), key=arcs.__getitem__)
    pairs = []
    for a in range(count):
        i = order[a]
        arc_i = arcs[i]
        for b in range(a + 1, count):
            j = order[b]
            if arcs[j] - arc_i >= reach:
                break
            pairs.append((i, j) if i < j else (j, i))
    if loop_length:  # across the start of the lap: the last cars of the lap behind the first ones
        for a in range(count - 1, 0, -1):
            i = order[a]
            ahead = arcs[i] - loop_length  # the car's position one lap back, behind the lap's start
            if arcs[order[0]] - ahead >= reach:
                break
            for b in range(a):
                j = order[b]
                if arcs[j] - ahead >= reach:
                    break
                pairs.append((i, j) if i < j else (j, i))
        pairs = list(set(pairs))  # on a short loop a pair can be near both ways round
    pairs.sort()
    return pairs
