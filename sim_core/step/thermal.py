"""Per-part heat (one backward-Euler solve per part per frame) and tire wear, and the breakage they cause.

Thermal, with C [mJ/°C], H_air [µW/°C], T [milli-°C] and the frame's heat E in tu (1/60 nJ):

    T' = (60000·C·T + E + H·T_air) / (60000·C + H)        (= the spec's (C·T + E + dt(Q + H·T_air)) / (C + dt·H))

rounded with ``div_round`` and clamped to [−273.15, 5000] °C. A part with a limit breaks when T' > limit.
A part with no heat this frame already at T_air stays exactly at T_air, so its solve is skipped.

A tire pressed on the track, and a roller pressed on a wall, also exchange heat with it (spec §7.1's
ΣH_j, the reservoir at T_air): the contact conductance H_c = 2e-5·harmonicMean(√kρc)·area·N_imp of the
frame's normal impulse, floored to nW/°C (``Contact``), joins H in the same solve, computed in nW/°C
(C, H and E ×1000): with H_c = 0 that is the µW/°C solve above's integer, which a tire then takes.

Tire wear (spec §7.3): Ew = |R·v_roll| + 4·|T·v_slip| (collected by the physics pass in 1e-21 J);
fatigue_ppm += Ew_nJ·(1 + 2r²)/capacity_mJ with r = clamp((T−T_air)/(limit−T_air), 0, 1); the exact
remainder is carried in ``fatigue_rem`` so sub-ppm wear is never lost. A tire breaks at 1e6 ppm.
"""

from __future__ import annotations

from typing import Final

from sim_core.constants import (
    CONTACT_NORMAL_UNIT, FATIGUE_BREAK_PPM, MAX_TEMPERATURE_MC, MIN_TEMPERATURE_MC, R_SCALE, WEAR_NJ_DEN,
)
from sim_core.intmath import clamp, mul
from sim_core.step.model import CarModel, Mechanics, PartHeat, Contact, TireHeatWear
from sim_core.step.physics import TireLoads

R2_SCALE: Final = R_SCALE * R_SCALE


def settle(c: list[int], model: CarModel, mech: Mechanics, heat: list[int], loads: TireLoads, cold_still: bool,
           wall: int = 0) -> int:
    """Solve temperatures and wear of every live part (``mech``: the car's mechanics of this frame) at the
    track's air temperature, from the physics' heat per part, ``loads`` per tire group and the normal
    impulse ``wall`` of a wall hit (+ right, − left; ``physics.advance``); return the mask of parts that
    break this frame.

    Only a part with heat this frame or outside its still band (``PartHeat``: where the rounding holds
    its temperature, the air temperature included) has anything to solve, and only
    ``model.heated_parts`` ever receive heat (only the tires wear). ``cold_still`` says that every other
    live part (``mech.cold_plan``) sits in its still band (``cold_parts_still``: true in every race that
    started from the grid, where they sit at the air temperature), so only the live heated parts are
    visited; otherwise (a loaded or edited state with a warm part the physics never heats) the cold
    parts are solved too, as the rules read. A wall hit's rollers with a contact conductance
    (``WallRollers.touching``) are solved with it, whatever ``cold_still`` says (``_rollers``), and the
    other cold parts as above. The tires come last, each in one iteration (``_tires``).
    """
    newly_broken = _solve(c, model, mech.heated_plan, heat)
    side = mech.wall_rollers[wall > 0] if wall else None
    if side is not None and not side.touching:
        side = None  # no roller on that side exchanges heat with the wall
    if not cold_still:
        newly_broken |= _solve(c, model, mech.cold_plan if side is None else side.cold_plan, heat)
    if side is not None:
        newly_broken |= _rollers(c, model, side.touching, heat, (wall if wall > 0 else -wall) // side.live)
    return newly_broken | _tires(c, model.air_mc, mech.tire_plan, loads)


def cold_parts_still(c: list[int], mech: Mechanics) -> bool:
    """Whether every live part the physics never heats (``mech.cold_plan``) is in its still band: such a
    part then never changes (no heat, and the rounding holds it), and stays so until a load or an edit of
    the state, so the thermal pass may skip it. A part outside its band is solved every frame until it
    is in (it moves toward the air temperature: into the band, or over its limit and breaks)."""
    if mech.cold_temps(c) == mech.cold_at_air:  # the usual state: all at the air temperature (one C-level read)
        return True
    return all(p.still_low <= c[p.temp_at] <= p.still_high for p in mech.cold_plan)


def _solve(c: list[int], model: CarModel, plan: tuple[PartHeat, ...], heat: list[int]) -> int:
    """The backward-Euler solve of each part of ``plan`` that has anything to solve; the breaking mask."""
    weapon = model.weapon
    newly_broken = 0
    for part, temp_at, _, double_conductance, constant, divisor, limit, still_low, still_high in plan:
        temp = c[temp_at]
        energy = heat[part]
        if energy > 0 and part == weapon:
            energy = energy * model.weapon_heat_scale // 10_000  # passive resistance: slower heating
        if energy or not still_low <= temp <= still_high:  # PartHeat: the solve with div_round written out
            temp += (energy + energy + constant - mul(double_conductance, temp)) // divisor
            temp = MIN_TEMPERATURE_MC if temp < MIN_TEMPERATURE_MC else MAX_TEMPERATURE_MC if temp > MAX_TEMPERATURE_MC else temp
            c[temp_at] = temp
            if limit is not None and temp > limit:
                newly_broken |= 1 << part
    return newly_broken


def _rollers(c: list[int], model: CarModel, touching: tuple[tuple[PartHeat, Contact], ...], heat: list[int],
             normal: int) -> int:
    """The solve of each roller of ``touching`` pressed on the wall with ``normal`` (its share of the
    wall's normal impulse) with its contact conductance (``_touching``; below ``from_normal`` that is 0 and
    the solve is the ``PartHeat`` solve's integer: a roller in its still band without heat stays); the
    breaking mask. Only a frame that hits a wall with such rollers on that side calls it."""
    newly_broken = 0
    for part_heat, contact in touching:
        touch = conductance_nw(contact, normal)
        at = part_heat.temp_at
        temp = clamp(_touching(c[at], heat[part_heat.part], model.air_mc, touch, contact), MIN_TEMPERATURE_MC,
                     MAX_TEMPERATURE_MC)
        c[at] = temp
        if part_heat.limit is not None and temp > part_heat.limit:
            newly_broken |= 1 << part_heat.part
    return newly_broken


def _tires(c: list[int], air: int, plan: tuple[TireHeatWear, ...], loads: TireLoads) -> int:
    """Temperature, then fatigue with the temperature factor (1 + 2r²) of the new temperature, of each
    live tire; returns the mask of the tires that break.

    The tires of a group (``TireHeatWear``) share their constants and take the same heat and wear
    (``loads``), so a tire whose state equals the previous tire's ends the frame as that tire did: its
    results are copied (the same integers, a third of the work for the usual four like tires). The states
    are compared field by field, not as tuples: the compiled step then builds no tuple object per tire."""
    newly_broken = 0
    for group, (energy, worn, normal) in zip(plan, loads):  # noqa: B905 (equal lengths: Mechanics.idle_loads, physics._tires)
        _, double_conductance, constant, divisor, limit, still_low, still_high, wear_den, contact, tires = group
        energy_nj = worn // WEAR_NJ_DEN
        touch = conductance_nw(contact, normal)
        first = True
        was_temp = was_fatigue = was_remainder = temp = fatigue = remainder = 0
        broke = False
        for part, temp_at, fatigue_at, remainder_at in tires:
            now_temp, now_fatigue, now_remainder = c[temp_at], c[fatigue_at], c[remainder_at]
            if first or now_temp != was_temp or now_fatigue != was_fatigue or now_remainder != was_remainder:
                first = False
                was_temp, was_fatigue, was_remainder = now_temp, now_fatigue, now_remainder
                temp, fatigue, remainder = now_temp, now_fatigue, now_remainder
                if touch:
                    temp = _touching(temp, energy, air, touch, contact)
                elif energy or not still_low <= temp <= still_high:  # as for the other parts
                    temp += (energy + energy + constant - mul(double_conductance, temp)) // divisor
                temp = (MIN_TEMPERATURE_MC if temp < MIN_TEMPERATURE_MC
                        else MAX_TEMPERATURE_MC if temp > MAX_TEMPERATURE_MC else temp)
                broke = limit is not None and temp > limit
                if energy_nj:
                    if limit is None:
                        r = 0
                    elif limit <= air:
                        r = R_SCALE if temp > air else 0
                    else:
                        r = mul(temp - air, R_SCALE) // (limit - air)
                        r = 0 if r < 0 else R_SCALE if r > R_SCALE else r
                    total = remainder + mul(energy_nj, R2_SCALE + 2 * r * r)
                    fatigue += total // wear_den
                    remainder = total % wear_den  # the exact remainder: sub-ppm wear is never lost
                    if fatigue >= FATIGUE_BREAK_PPM:
                        fatigue = FATIGUE_BREAK_PPM
                        broke = True
            c[temp_at], c[fatigue_at], c[remainder_at] = temp, fatigue, remainder
            if broke:
                newly_broken |= 1 << part
    return newly_broken


def conductance_nw(contact: Contact, normal: int) -> int:
    """The contact conductance (nW/°C) of a part pressed with ``normal`` (1e-15 N·s): 0 below
    ``from_normal`` without computing it (the usual frame of a tire too light to reach 1 nW/°C)."""
    if contact.factor and normal >= contact.from_normal:
        return mul(normal // CONTACT_NORMAL_UNIT, contact.factor) // CONTACT_NORMAL_UNIT
    return 0


def _touching(temp: int, energy: int, air: int, touch: int, contact: Contact) -> int:
    """The ``PartHeat`` solve of a tire or roller with a contact conductance ``touch`` (nW/°C) to the track
    or wall at the air temperature: T' = div_round(C·T + E + (H_air + H)·T_air, C + H_air + H) in nW/°C
    (C, H_air and E ×1000), written as T + div_round(1000·E + (H_air + H)·(T_air − T), C + H_air + H), the
    same integer. H = 0 gives the ``PartHeat`` solve's integer (every term scales by 1000); the temperature
    is not clamped here."""
    numerator = mul(energy, 1000) + mul(contact.conductance + touch, air - temp)
    denominator = contact.capacity + touch
    return temp + (numerator + numerator + denominator) // (denominator + denominator)
