"""One car's motion for one frame in the route frame: energy, drive, traction, skills, gravity, walls.

Order (spec/simcore.md §1, §4.2–4.3, §5): the drive is charged first, then skills settle in canonical
order from what is left; impulses are summed per axis (tangent s, right l, up h) in µg·µm/s, velocities
are updated once with ``div_round`` and positions integrated with the new velocities (semi-implicit
Euler). Accelerations (gravity components, route curvature) enter as ``m·a`` over one frame (÷60).

The route-frame car stays aligned with the route tangent (no yaw/roll); its load is split evenly over
its live tires. Heat (thermal units, see ``constants``) of the parts other than tires is returned per
part, and the heat and raw wear energy (1e-21 J) of each tire per tire group (``Mechanics.tire_groups``:
one pair for every tire of the group), for the thermal/wear pass that follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sim_core.constants import (
    BATTERY_PASSIVE_TU_PER_MW, BATTERY_SKILL_TU_PER_Q, CHIP_SKILL_TU_PER_Q, EFFECT_UJ_DEN, EFFECT_UJ_NUM,
    K_EVENT_IMPULSE_PER_UJ, K_SWERVE_IMPULSE_PER_UJ, K_WEAPON_IMPULSE_PER_UJ,
    LANDING_SETTLE_UM_S, MIN_TIRE_WEAR_SPEED_UM_S, MOTOR_HEAT_TU_PER_MW, PENALTY_FADE_FRAMES, ROLLING_DEN,
    SLIP_HEAT_DEN, SLIP_HEAT_NUM, SLIP_WEAR_MULT, STABILIZE_UJ_PER_MILLI,
)
from sim_core.specs.inputs import SKILLS
from sim_core.intmath import UNIT, Vec3, div_round, div_trunc, mul
from sim_core.state.layout import (
    AIR_FRAMES, ARC, H, LAT, OUTSIDE, PENALTY_TIMER, REMAINING_Q, VH, VLAT, VS,
)
from sim_core.step.aero import aero_impulse
from sim_core.step.conveyors import Belt
from sim_core.step.fluids import KEEP_DEN, FluidTouch
from sim_core.step.model import CarModel, Mechanics
from sim_core.specs.route import Route

CURVE: Final = 1_000_000_000_000  # curvature is stored as (1/µm)·1e12
AIR_FRAMES_CAP: Final = 255
(BOOST, BRAKE, SWERVE_LEFT, SWERVE_RIGHT, JUMP, SLAM, STABILIZE, WEAPON) = range(len(SKILLS))


class MotionSample:
    """What the motion reads of one route sample (``TrackContext.samples``). A native object with declared
    ints, not a tuple: a ``zip`` of more than five lists has tuples of unknown items, which the compiled step
    would compute with as generic objects, and even a declared tuple kept in a list is boxed, and unboxed
    whole at each read."""

    def __init__(self, width: int, k_vertical: int, g_up: int, g_right: int, k_lateral: int, g_tangent: int) -> None:
        self.half_width = width // 2
        self.k_vertical, self.k_lateral = k_vertical, k_lateral
        self.g_up, self.g_right, self.g_tangent = g_up, g_right, g_tangent


class TrackContext:
    """Track constants the per-car passes share.

    ``samples[i]`` gathers what the motion reads of route sample i (``MotionSample``: half width, vertical
    and lateral curvature, gravity along up, right and the tangent), so that a car reads its sample once
    instead of six lists (built per world: about a millisecond).

    ``wind[i]`` is the world wind velocity (µm/s, ``sim_core.step.aero.wind_vector_um_s``) along sample
    i's (tangent, right, up), projected once per world; None without wind (the air is still)."""

    def __init__(self, route: Route, fixed: bool, wall_height_um: int, apron_um: int,
                 wind_um_s: Vec3 = (0, 0, 0)) -> None:
        self.route = route
        self.fixed = fixed
        self.wall_height_um = wall_height_um
        self.apron_um = apron_um
        self.loop, self.length_um, self.count = route.loop, route.length_um, route.count
        self.samples = [MotionSample(*values) for values in zip(route.width, route.k_vertical, route.g_up,
                                                                route.g_right, route.k_lateral, route.g_tangent,
                                                                strict=True)]
        wx, wy, wz = wind_um_s
        self.wind: list[tuple[int, int, int]] | None = None if wind_um_s == (0, 0, 0) else [
            (div_round(wx * tx + wy * ty + wz * tz, UNIT), div_round(wx * rx + wy * ry + wz * rz, UNIT),
             div_round(wx * ux + wy * uy + wz * uz, UNIT))
            for tx, ty, tz, rx, ry, rz, ux, uy, uz in zip(route.tx, route.ty, route.tz, route.rx, route.ry, route.rz,
                                                          route.ux, route.uy, route.uz, strict=True)]


def curving(speed_sq: int, curvature: int) -> int:
    """⌊speed²·k / CURVE⌋ for ``speed_sq`` ≥ 0 (a centrifugal acceleration on curvature k), computed as
    ⌊speed²/CURVE⌋·k + ⌊(speed² mod CURVE)·k / CURVE⌋: the same integer, without the product speed²·k that
    outgrows a machine word on a tight curve at speed (a big integer and its division)."""
    return mul(speed_sq // CURVE, curvature) + mul(speed_sq % CURVE, curvature) // CURVE


TireLoads = Sequence[tuple[int, int, int]]
"""(heat in tu, raw wear energy, normal impulse on the track) of each tire of ``Mechanics.tire_groups[k]``,
at index k (the normal impulse in µg·µm/s = 1e-15 N·s, the contact conductance's N_imp; 0 off the ground)."""


def advance(c: list[int], model: CarModel, mech: Mechanics, ctx: TrackContext,
            skills: tuple[int, ...], pull: tuple[int, int, int] | None = None,
            fluid: FluidTouch | None = None, belt: Belt | None = None) -> tuple[list[int], TireLoads, int, int]:
    """Advance one live car by one frame (``mech`` = its mechanics for the frame's broken parts; ``pull``
    = its magnet impulse (s, l, h) of the frame, ``sim_core.step.magnets``, None without one; ``fluid`` =
    the grip and stickiness of the fluid it is in, ``sim_core.step.fluids``, None outside every fluid;
    ``belt`` = the conveyor it stands on, ``sim_core.step.conveyors``, None off every belt);
    returns (heat per part in tu, of the parts other than tires; the tire groups' ``TireLoads``; the
    weapon's granted effect this frame in µJ, which a push hands to the cars it touches; the normal
    impulse of a wall the car hits this frame, in µg·µm/s, + on the right wall, − on the left, 0 without).

    ``div_round(a, b)`` = (2a + b) // 2b is written out for the velocity and position updates: they are
    the hottest lines of the step, and the call costs more than the arithmetic. 2a is written a + a there:
    the compiled step adds any two machine words in C but multiplies in C only non-negative factors below
    2³⁰ (``intmath.mul``), and a momentum or a negative velocity is neither."""
    m = mech.mass_ug
    heat = [0] * model.part_count
    loads: TireLoads = mech.idle_loads
    available = drive_mw = 0
    if mech.functional:  # drive first: charged even at top speed, airborne or stuck
        remaining = c[REMAINING_Q]
        available = mul(model.configured_output_mw, remaining) // model.initial_q
        drive_mw = model.auto_input_mw if model.auto_input_mw < available else available
        c[REMAINING_Q] = remaining - (drive_mw if drive_mw < remaining else remaining)
        heat[model.motor] = MOTOR_HEAT_TU_PER_MW * drive_mw  # the first heat of the frame: heat is all zeros
        heat[model.battery] = BATTERY_PASSIVE_TU_PER_MW * drive_mw
    penalty = c[PENALTY_TIMER]
    if 0 < penalty <= PENALTY_FADE_FRAMES:
        return heat, loads, 0, 0  # fading out before the teleport: the car is frozen
    arc, lat, h, vs, vlat, vh = c[ARC], c[LAT], c[H], c[VS], c[VLAT], c[VH]
    length = ctx.length_um  # the sample under the car: Route.index(Route.wrap(arc)), written out
    s = arc % length if ctx.loop else 0 if arc < 0 else length if arc > length else arc
    i = s * ctx.count // length  # 0 ≤ s ≤ length: only i = count (s = length) needs the clamp
    if i == ctx.count:
        i -= 1
    sample = ctx.samples[i]
    half, g_up, g_right, acc_s = sample.half_width, sample.g_up, sample.g_right, sample.g_tangent
    edge = half + ctx.apron_um
    over_surface = not ctx.fixed or -edge <= lat <= edge
    grounded = h == 0 and vh <= 0 and over_surface
    if over_surface:  # the curving ribbon adds centrifugal terms in the route frame
        speed_sq = mul(vs, vs)
        load = curving(speed_sq, sample.k_vertical) - g_up
        acc_l = g_right - curving(speed_sq, sample.k_lateral)
    else:
        load = -g_up
        acc_l = g_right
    pressed = grounded and load > 0
    acc_h = 0 if pressed else -load
    js = jl = jh = 0
    rolling = 0
    in_control = penalty == 0
    # the external impulses at the COM: the air's (from the velocities the frame starts with,
    # sim_core.step.aero) and the magnets' (from the frame's starting positions, sim_core.step.magnets)
    ext_s = ext_l = ext_h = 0
    aero = mech.aero
    if aero is not None:
        wind = ctx.wind
        if wind is None:
            ext_s, ext_l, ext_h = aero_impulse(aero, -vs, -vlat, -vh, mech.aero_cap)
        else:
            ws, wl, wh = wind[i]
            ext_s, ext_l, ext_h = aero_impulse(aero, ws - vs, wl - vlat, wh - vh, mech.aero_cap)
    if pull is not None:
        ext_s += pull[0]
        ext_l += pull[1]
        ext_h += pull[2]
    if pressed:
        # the ground takes the vertical part: downforce (or a magnet below) adds load, lift removes it;
        # lift beyond the load is what is left to raise the car
        normal = mul(m, load) // 60 - ext_h
        ext_h = 0 if normal >= 0 else -normal
        if normal < 0:
            normal = 0
        if mech.live_tires:
            traction_mw = drive_mw if in_control else 0
            if fluid is not None and fluid.grip_milli < 1000:  # a slippery fluid: the drive at its grip
                traction_mw = traction_mw * fluid.grip_milli // 1000
            js, jl, rolling, loads = _tires(model, mech, normal, m, vs, vlat, acc_l, ext_l, traction_mw)
        else:  # every tire broken: the chassis scrapes along the surface
            rolling = normal * model.chassis_mu // 1000
            need = -(m * vlat + m * acc_l // 60 + ext_l)
            jl = need if -rolling <= need <= rolling else rolling if need > 0 else -rolling
        if belt is not None:  # the ground under the tires moves: toward the belt's speed, at most μ·N
            along, across, belt_speed, belt_mu = belt
            carry = m * (belt_speed - div_trunc(vs * along + vlat * across, UNIT))
            cap = normal * belt_mu // 1000
            carry = cap if carry > cap else -cap if carry < -cap else carry
            js += div_trunc(carry * along, UNIT)
            jl += div_trunc(carry * across, UNIT)
    js += ext_s
    jl += ext_l
    jh += ext_h
    damping = weapon_uj = 0
    if skills and in_control and mech.skills_enabled:
        ds, dl, dh, damping, weapon_uj = _skills(c, model, mech.weapon_alive, skills, available, heat)
        js += ds
        jl += dl
        jh += dh if dh > 0 or not grounded else 0  # a slam on the ground is taken by the ground
    m60 = mech.mass_x60
    p = mul(m60, vs) + mul(m, acc_s) + mul(js, 60)
    if rolling:  # rolling resistance stops the car at most, never pushes it backwards
        r = mul(rolling, 60)
        p = p - r if p > r else p + r if p < -r else 0
    den = m60 + m60  # velocity = div_round(momentum·60, 60·m)
    vs = (p + p + m60) // den
    p = mul(m60, vlat) + mul(m, acc_l) + mul(jl, 60)
    vlat = (p + p + m60) // den
    if pressed and jh <= 0:
        vh = 0
    else:
        p = mul(m60, vh) + mul(m, acc_h) + mul(jh, 60)
        vh = (p + p + m60) // den
    if damping:  # stabilize: v ← v / (1 + dt·damping) on the lateral and vertical axes
        vlat = div_trunc(mul(vlat, 60_000), 60_000 + damping)
        if not grounded:
            vh = div_trunc(mul(vh, 60_000), 60_000 + damping)
    if fluid is not None and fluid.keep < KEEP_DEN:  # a sticky fluid: v ← v·(1 − (1 − decay)·dt)
        vs = div_trunc(mul(vs, fluid.keep), KEEP_DEN)
        vlat = div_trunc(mul(vlat, fluid.keep), KEEP_DEN)
        vh = div_trunc(mul(vh, fluid.keep), KEEP_DEN)
    if penalty > PENALTY_FADE_FRAMES:  # penalty: linear deceleration to zero over the remaining frames
        k = penalty - PENALTY_FADE_FRAMES
        vs = div_trunc(mul(vs, k - 1), k)
        vlat = div_trunc(mul(vlat, k - 1), k)
    arc += (vs + vs + 60) // 120  # position += div_round(velocity, 60)
    new_lat = lat + (vlat + vlat + 60) // 120
    new_h = h + (vh + vh + 60) // 120
    lands_on_surface = not ctx.fixed or -edge <= new_lat <= edge
    if new_h < 0 <= h and lands_on_surface:
        new_h = 0
        rebound = div_trunc(-vh * model.landing_restitution, 1000)
        vh = rebound if rebound > LANDING_SETTLE_UM_S else 0  # small rebounds settle on the surface
    wall = 0
    if ctx.fixed and (c[OUTSIDE] or not model.half_width_um - half <= new_lat <= half - model.half_width_um):
        new_lat, vlat, vs, wall = _walls(c, model, mech, ctx, half, lat, new_lat, new_h, vlat, vs, m)
    c[ARC], c[LAT], c[H], c[VS], c[VLAT], c[VH] = arc, new_lat, new_h, vs, vlat, vh
    airborne = 0 if new_h == 0 and vh <= 0 and lands_on_surface else c[AIR_FRAMES] + 1
    c[AIR_FRAMES] = airborne if airborne < AIR_FRAMES_CAP else AIR_FRAMES_CAP
    return heat, loads, weapon_uj, wall


def _tires(model: CarModel, mech: Mechanics, normal: int, m: int, vs: int, vlat: int, acc_l: int, ext_l: int,
           drive_mw: int) -> tuple[int, int, int, TireLoads]:
    """Drive, traction, lateral grip and rolling resistance of the live tires (``Mechanics.tire_groups``:
    each quantity is computed once for the tires that share μ and rolling resistance, and counted once
    per tire of the group).

    The drive impulse is split into 1/(original driven count) shares; a broken tire's share is simply
    not spent. Each live tire carries normal/live of the load; traction = N·μ_pair. What traction the
    drive leaves is the tire's lateral grip budget (friction circle taken as a sum). Returns the
    tangential and lateral impulses, the rolling resistance and each group's heat and wear per tire;
    the lateral grip holds against the side external impulse ``ext_l`` too (a crosswind, a magnet to the side).
    """
    share = vtop = 0
    if drive_mw:
        if drive_mw == model.auto_input_mw:  # the usual frame: the full drive, computed once per car
            torque_impulse, vtop = model.full_drive
        else:
            torque_impulse, vtop = model.drive(drive_mw)
        top_impulse = mul(m, vtop - vs) if vtop > vs else 0
        share = (torque_impulse if torque_impulse < top_impulse else top_impulse) // model.driven_count
    n_tire = normal // mech.live_tires
    speed = vs if vs >= 0 else -vs
    rolls_wear = speed >= MIN_TIRE_WEAR_SPEED_UM_S
    spin = vtop - vs if vtop > vs else 0  # wheel spin at the surface top speed, where the drive beats traction
    js = rolling = lateral_cap = 0
    loads = []
    for mu, rr_milli, size in mech.tire_groups:
        traction = mul(n_tire, mu) // 1000
        used = share if share < traction else traction
        js += mul(used, size)
        lateral_cap += mul(traction - used, size)
        rr = mul(n_tire, rr_milli) // ROLLING_DEN
        rolling += mul(rr, size)
        tire_wear = mul(rr, speed) if rolls_wear else 0
        tire_heat = 0
        if spin and share > traction:  # slip heat and wear
            tire_heat = mul(mul(traction, spin), SLIP_HEAT_NUM) // SLIP_HEAT_DEN
            if spin >= MIN_TIRE_WEAR_SPEED_UM_S:
                tire_wear += mul(mul(SLIP_WEAR_MULT, traction), spin)
        loads.append((tire_heat, tire_wear, n_tire))
    need = -(mul(m, vlat) + mul(m, acc_l) // 60 + ext_l)
    if need > lateral_cap or need < -lateral_cap:  # sliding sideways: every tire at its grip limit
        slip = vlat if vlat >= 0 else -vlat
        for k, (mu, _, _) in enumerate(mech.tire_groups):
            traction = mul(n_tire, mu) // 1000
            left = traction - share if traction > share else 0  # what the drive left of its traction
            tire_heat, tire_wear, _ = loads[k]
            tire_heat += mul(mul(left, slip), SLIP_HEAT_NUM) // SLIP_HEAT_DEN
            if slip >= MIN_TIRE_WEAR_SPEED_UM_S:
                tire_wear += mul(mul(SLIP_WEAR_MULT, left), slip)
            loads[k] = (tire_heat, tire_wear, n_tire)
        need = lateral_cap if need > 0 else -lateral_cap
    return js, need, rolling, loads


def _skills(c: list[int], model: CarModel, weapon_alive: bool, skills: tuple[int, ...], available: int,
            heat: list[int]) -> tuple[int, int, int, int, int]:
    """Settle this frame's skills in canonical order from the energy the drive left; the summed impulses,
    the stabilize damping and the weapon's effect (µJ).

    budget = floor(available·pct/100); cost = budget·cost_frames quanta; effect = budget·effect_frames/60000 J
    (``CarModel.cost_frames``, ``effect_frames``). When the battery cannot pay the full cost, effect and cost
    scale by granted/requested.
    """
    js = jl = jh = damping = weapon_uj = 0
    for k in skills:
        if k == WEAPON and not (model.active_weapon and weapon_alive):
            continue  # a passive (or broken, or absent) weapon never triggers and costs nothing
        budget = available * model.allocation[k] // 100
        cost = budget * model.cost_frames[k]
        if cost == 0:
            continue
        remaining = c[REMAINING_Q]
        granted = cost if cost <= remaining else remaining
        c[REMAINING_Q] = remaining - granted
        heat[model.battery] = heat[model.battery] + BATTERY_SKILL_TU_PER_Q * granted
        if model.chip >= 0:
            heat[model.chip] = heat[model.chip] + CHIP_SKILL_TU_PER_Q * granted
        effect_uj = budget * model.effect_frames[k] * EFFECT_UJ_NUM * granted // (EFFECT_UJ_DEN * cost)
        if k == BOOST:
            js += effect_uj * K_EVENT_IMPULSE_PER_UJ
        elif k == BRAKE:
            js -= effect_uj * K_EVENT_IMPULSE_PER_UJ
        elif k == SWERVE_LEFT:
            jl -= effect_uj * K_SWERVE_IMPULSE_PER_UJ
        elif k == SWERVE_RIGHT:
            jl += effect_uj * K_SWERVE_IMPULSE_PER_UJ
        elif k == JUMP:
            jh += effect_uj * K_EVENT_IMPULSE_PER_UJ
        elif k == SLAM:
            jh -= effect_uj * K_EVENT_IMPULSE_PER_UJ
        elif k == STABILIZE:
            damping += effect_uj // STABILIZE_UJ_PER_MILLI
        else:  # WEAPON: paid here; a general or launch weapon recoils along −Axis (spec §5.4), a push hands
            # its effect on (sim_core.step.weapons), a launcher to its bullet (sim_core.step.launch), a
            # magnet's field is sim_core.step.magnets'
            weapon_uj = effect_uj
            axis = model.recoil_axis
            if axis is not None:
                recoil = effect_uj * K_WEAPON_IMPULSE_PER_UJ  # along the whole unit axis
                js -= div_trunc(recoil * axis[0], UNIT)
                jl -= div_trunc(recoil * axis[1], UNIT)
                jh -= div_trunc(recoil * axis[2], UNIT)
    return js, jl, jh, damping, weapon_uj


def _walls(c: list[int], model: CarModel, mech: Mechanics, ctx: TrackContext, half: int, lat: int, new_lat: int, new_h: int,
           vlat: int, vs: int, m: int) -> tuple[int, int, int, int]:
    """Corridor edges of a fixed track are walls ``wall_height_um`` high at |lat| = width/2; returns the
    new lateral position and velocities and the wall's normal impulse (+ right wall, − left, 0 no hit).

    A car below the wall top is stopped by it (rollers on that side: Min restitution and rolling loss;
    none: Average restitution and sliding friction of the body). A car above the wall top passes; once
    its COM is beyond the edge it has coursed out (``outside``), and the same wall then keeps it out.
    ``advance`` calls it only for a car outside or reaching past ±inner (inside, nothing changes).
    """
    inner = half - model.width_um // 2
    outer = half + model.width_um // 2
    below_top = 0 <= new_h < ctx.wall_height_um
    if not c[OUTSIDE]:
        if -inner <= new_lat <= inner:
            return new_lat, vlat, vs, 0
        if not below_top:
            if new_lat > half or new_lat < -half:
                c[OUTSIDE] = 1
            return new_lat, vlat, vs, 0
        limit = inner if new_lat > 0 else -inner
        direction = 1 if new_lat > 0 else -1  # moving outward hits the wall
        right = new_lat > 0
    else:
        if new_lat > outer or new_lat < -outer or new_h < 0:
            return new_lat, vlat, vs, 0
        if not below_top:
            if -half <= new_lat <= half:
                c[OUTSIDE] = 0
            return new_lat, vlat, vs, 0
        limit = outer if lat > 0 else -outer
        direction = -1 if lat > 0 else 1  # moving back inward hits the wall from outside
        right = lat > 0
    into = vlat * direction
    if into <= 0:
        return limit, vlat, vs, 0
    restitution, friction, rolling = mech.right_wall if right else mech.left_wall  # that side's response
    bounce = div_trunc(into * restitution, 1000)
    if bounce <= LANDING_SETTLE_UM_S:
        bounce = 0  # pressed against the wall (e.g. in a curve): ride along it
    normal = m * (into + bounce)
    loss = (normal * friction // 1000 + normal * rolling // ROLLING_DEN) // m
    vs = (vs - loss if vs > loss else 0) if vs > 0 else (vs + loss if vs < -loss else 0)
    vlat = -bounce * direction
    return limit, vlat, vs, normal if right else -normal
