"""Launch weapons (spec/simcore.md §5.4 ``launch``): releases, and the flights of the pre-allocated bullets.

Every bullet of every launcher (``WeaponSpec.ammo``) has a fixed slot in the world's projectile pool
(``state.layout``: after the weather's patch slots; car by car in slot order, each launcher's bullets in
firing order), so a round's state never changes its shape. A slot is held (all zeros) until its release,
then flying, resting once it lies still on the ribbon, or gone once it fell 5 m below it or, on a track
that is not a loop, flew past one of its ends (beyond them there is no ribbon to fly over: held to the last
sample's curvature, a fast bullet would climb away from it for the rest of the round, past the ±1 km a
saved state's values are held to).

- **Release.** A launcher's Hold fires only on a frame it can release (``Launchers.can_release``): a bullet
  is still held and the car's last release is at least 15 frames old (``LAUNCH_FIRE_INTERVAL_FRAMES``); on
  any other frame the frame drops the Hold from the car's skills, so it pays nothing. A release pays 15
  frames of the Hold's budget (``CarModel.cost_frames``) and recoils the car by ``−axis·E·0.002`` N·s
  (``physics._skills``); the bullet leaves from where it was held on the car, with the car's velocity plus
  ``+axis·E·0.002`` N·s over its own mass (``Launchers.release``).
- **Flight**, in the route frame as a car's: gravity along the ribbon's axes at the bullet's sample, with
  the ribbon's curvature while it is over it; a landing keeps no bounce; on the ribbon it slides against
  friction ``μ·load`` (μ: the Average of the bullet's and the surface's friction) until it rests, where
  friction holds it. On a fixed track a bullet below the wall's top stops at the wall.
- **Hits.** A flying or resting bullet inside a car's contact box, after every car moved and pushed (one
  snapshot of the cars), is struck along the box's axis of least penetration (s, then lateral, then
  height on ties): the impulse ``(1 + e)·m_eff·v_close`` (e = Average of the bullet's and the car body's
  restitution) on both, the bullet put back on the box's face, and the impact's energy
  ``½·m_eff·v_close²`` as impact fatigue on the car's struck part (``contact.add_impact``). A bullet ignores
  its own car until it has once been more than 1 mm clear of the car's box (``sourceCleared``). The cars'
  velocity changes are summed and applied after every bullet, so the cars' order does not matter; a
  bullet meets the cars in slot order.

A **fluid bullet** (a fluid material) is a sensor, as the spec's fluid sub-meshes are: it strikes no car,
and where it first meets the ribbon it stops and spreads (``PROJECTILE_DEPLOYED``) into a disc zone of
area ``clamp(V/0.002, 1e-4, 0.25)`` m² to the round's end (``fluids.disc_reach_sq``): its slot is the
spec's pre-allocated disc sensor, and ``Fluids.touch`` takes the discs beside the track's zones.

The route-frame car is one box, so the spec's launch-exit plane of the weapon's proxy is the box's face
here, and a bullet flies as a point; bullets do not strike each other (docs/sim.md "Launch weapons").
"""

from __future__ import annotations

from typing import Final

from sim_core.constants import K_WEAPON_IMPULSE_PER_UJ, LAUNCH_FIRE_INTERVAL_FRAMES
from sim_core.intmath import UNIT, around_loop, div_round, div_trunc, isqrt, mul
from sim_core.specs.materials import material
from sim_core.state.layout import (
    ARC, H, LAT, PATCH_STRIDE, PR_ARC, PR_CLEARED, PR_H, PR_LAT, PR_RELEASED, PR_STATE, PR_VH, PR_VLAT, PR_VS,
    PROJECTILE_DEPLOYED, PROJECTILE_FLYING, PROJECTILE_GONE, PROJECTILE_HELD, PROJECTILE_RESTING, PROJECTILE_STRIDE, VH,
    VELOCITY_FIELDS, VLAT, VS, W_FRAME, WORLD_HEADER,
)
from sim_core.step.contact import Collider, ContactBox, Credits, add_impact, apply_kicks, commit_loads
from sim_core.step.fluids import Disc, FluidTouch, disc_reach_sq, fluid_effect
from sim_core.step.model import CarModel
from sim_core.step.physics import TrackContext, curving

CLEAR_UM: Final = 1_000
"""A bullet is clear of its own car once more than 1 mm outside the car's box (``sourceCleared``)."""
FALL_UM: Final = 5_000_000
"""A bullet 5 m below the ribbon is gone (a car's fall-out depth)."""
VALUE_MAX: Final = 1_000_000_000
"""A loaded state's bullet positions (µm) and velocities (µm/s) lie within ±1 km and ±1 km/s."""


class Bullet:
    """One bullet's constants: its car, its slot's first index in the world's list, its mass, where it is
    held relative to the car's box centre along the route axes (s, l, h), its restitution and its
    friction on the track's surface (‰); for a fluid bullet, the disc it spreads into (the square of its
    radius grown by the touch's reach, and its fluid's effect), None for a solid one."""

    def __init__(self, car: int, at: int, mass_ug: int, held_um: tuple[int, int, int], restitution_milli: int,
                 friction_milli: int, spread: tuple[int, FluidTouch] | None) -> None:
        self.car = car
        self.at = at
        self.mass_ug = mass_ug
        self.held_um = held_um
        self.restitution_milli = restitution_milli
        self.friction_milli = friction_milli
        self.spread = spread


class Launchers:
    """The round's launch weapons and their bullets' slots (module docstring); ``slots`` = the pool's size
    in the state (0 without a launcher: then nothing here runs)."""

    def __init__(self, models: list[CarModel], patch_slots: int, surface_friction_milli: int) -> None:
        base = WORLD_HEADER + patch_slots * PATCH_STRIDE
        self.bullets: list[Bullet] = []
        self.ranges: list[tuple[int, int]] = []  # per car: its bullets' range in ``bullets``
        for car, model in enumerate(models):
            weapon = model.spec.weapon
            first = len(self.bullets)
            for ammo in (weapon.ammo if weapon is not None and model.launches else ()):
                x, y, z = ammo.offset_um  # car frame (x right, y up, z back) → route axes (s = −z, l = x, h = y)
                bullet_material = material(ammo.material)
                spread = ((disc_reach_sq(ammo.mass_ug, ammo.material), fluid_effect(ammo.material))
                          if bullet_material.is_fluid else None)
                self.bullets.append(Bullet(car, base + len(self.bullets) * PROJECTILE_STRIDE, ammo.mass_ug,
                                           (-z, x, model.height_um // 2 + y), bullet_material.restitution_milli,
                                           (bullet_material.friction_milli + surface_friction_milli) // 2, spread))
            self.ranges.append((first, len(self.bullets)))
        self.slots = len(self.bullets)
        self.spreading = [bullet for bullet in self.bullets if bullet.spread is not None]  # the fluid bullets

    def discs(self, world: list[int]) -> list[Disc]:
        """The fluid bullets spread on the ribbon, as the fluid zones they are (``Fluids.touch``)."""
        discs = []
        for bullet in self.spreading:
            at = bullet.at
            if world[at + PR_STATE] == PROJECTILE_DEPLOYED:
                assert bullet.spread is not None
                reach_sq, effect = bullet.spread
                discs.append(Disc(world[at + PR_ARC], world[at + PR_LAT], reach_sq, effect))
        return discs

    def can_release(self, world: list[int], car: int, frame: int) -> bool:
        """Whether ``car``'s launcher can release a bullet on ``frame``: one is still held, and the last
        release was at least 15 frames before."""
        last = 0
        first, end = self.ranges[car]
        for k in range(first, end):
            at = self.bullets[k].at
            if world[at + PR_STATE] == PROJECTILE_HELD:
                return last == 0 or frame - last >= LAUNCH_FIRE_INTERVAL_FRAMES
            last = world[at + PR_RELEASED]
        return False

    def release(self, world: list[int], c: list[int], model: CarModel, car: int, effect_uj: int, frame: int,
                loop_length: int) -> None:
        """Release ``car``'s next held bullet (``can_release`` was true) with the Hold's effect ``effect_uj``:
        from where it is held on the car (``c``: after its move), at the car's velocity plus the launch."""
        axis = model.recoil_axis
        first, end = self.ranges[car]
        bullet = next(self.bullets[k] for k in range(first, end) if world[self.bullets[k].at + PR_STATE] == PROJECTILE_HELD)
        if axis is None:
            return
        at, mass = bullet.at, bullet.mass_ug
        impulse = effect_uj * K_WEAPON_IMPULSE_PER_UJ  # along the whole unit axis
        held_s, held_l, held_h = bullet.held_um
        arc = c[ARC] + held_s
        world[at + PR_STATE] = PROJECTILE_FLYING
        world[at + PR_RELEASED] = frame
        world[at + PR_ARC] = arc % loop_length if loop_length else arc
        world[at + PR_LAT] = c[LAT] + held_l
        world[at + PR_H] = c[H] + held_h
        world[at + PR_VS] = c[VS] + div_trunc(div_trunc(impulse * axis[0], UNIT), mass)
        world[at + PR_VLAT] = c[VLAT] + div_trunc(div_trunc(impulse * axis[1], UNIT), mass)
        world[at + PR_VH] = c[VH] + div_trunc(div_trunc(impulse * axis[2], UNIT), mass)
        world[at + PR_CLEARED] = 0

    def fly(self, world: list[int], cars: list[list[int]], starts: list[list[int]],
            boxes: list[ContactBox], colliders: list[Collider], ctx: TrackContext,
            loop_length: int, credits: Credits) -> dict[int, int]:
        """Move every released bullet one frame and strike the cars its path meets (``starts``: each car's
        arc, lateral offset and height when the frame began; module docstring); the parts the hits break,
        as a bit mask per car (the frame's end-of-frame transaction commits them); a hit's damage is the
        shooter's contribution in ``credits``."""
        kicks: dict[int, list[int]] = {}
        loads: dict[tuple[int, int], list[int]] = {}
        for bullet in self.bullets:
            at = bullet.at
            state = world[at + PR_STATE]
            if state == PROJECTILE_HELD or state == PROJECTILE_GONE or state == PROJECTILE_DEPLOYED:
                continue
            start = (world[at + PR_ARC], world[at + PR_LAT], world[at + PR_H])
            if state == PROJECTILE_FLYING:
                state = _move(world, at, bullet.friction_milli, bullet.spread is not None, ctx)
                world[at + PR_STATE] = state
                if state == PROJECTILE_GONE or bullet.spread is not None:
                    continue  # a fluid bullet is a sensor: it strikes no car
            if not world[at + PR_CLEARED] and _outside(world, at, cars[bullet.car], boxes[bullet.car], CLEAR_UM,
                                                       loop_length):
                world[at + PR_CLEARED] = 1
            for car, c in enumerate(cars):
                box = boxes[car]
                if not box.mass or (car == bullet.car and not world[at + PR_CLEARED]):
                    continue
                # the slab test along the route first, as ``_entry`` makes it: a path that stays on one side
                # of the box (most pairs, most frames) cannot enter it
                half = box.length // 2
                was = around_loop(start[0] - starts[car][0], loop_length)
                gap = around_loop(world[at + PR_ARC] - c[ARC], loop_length)
                if (was >= half and gap >= half) or (was <= -half and gap <= -half):
                    continue
                _strike(world, bullet, start, car, c, starts[car], box, colliders[car], loop_length, kicks, loads,
                        credits)
        apply_kicks(cars, boxes, kicks)
        return commit_loads(cars, loads) if loads else {}

    def valid_pool(self, world: list[int]) -> bool:
        """Whether a decoded state's bullet slots are ones this round can reach (``StateLimits``): each
        launcher's released bullets come first, in firing order, at least 15 frames apart and not after
        the state's frame; a held slot is all zeros, a resting bullet lies still on the ribbon, and every
        position and velocity is within ±1 km (/s)."""
        frame = world[W_FRAME]
        for first, end in self.ranges:
            last = 0
            held = False
            for k in range(first, end):
                bullet = self.bullets[k]
                at = bullet.at
                values = world[at : at + PROJECTILE_STRIDE]
                state, released = values[PR_STATE], values[PR_RELEASED]
                if state == PROJECTILE_HELD:
                    if any(values):
                        return False
                    held = True
                    continue
                settled = PROJECTILE_RESTING if bullet.spread is None else PROJECTILE_DEPLOYED
                if (held or state not in (PROJECTILE_FLYING, settled, PROJECTILE_GONE)
                        or values[PR_CLEARED] not in (0, 1) or not 1 <= released <= frame
                        or (last and released < last + LAUNCH_FIRE_INTERVAL_FRAMES)
                        or any(abs(v) > VALUE_MAX for v in values[PR_ARC : PR_VH + 1])):
                    return False
                if state == settled and any(values[PR_H : PR_VH + 1]):
                    return False
                last = released
        return True


def _move(world: list[int], at: int, friction_milli: int, spreads: bool, ctx: TrackContext) -> int:
    """One frame of a moving bullet's flight or slide (module docstring); its state after it. A fluid
    bullet (``spreads``) is spread where it first meets the ribbon: it stays there, still, as a disc."""
    arc, lat, h = world[at + PR_ARC], world[at + PR_LAT], world[at + PR_H]
    vs, vlat, vh = world[at + PR_VS], world[at + PR_VLAT], world[at + PR_VH]
    length = ctx.length_um  # the sample under the bullet, as ``physics.advance`` finds a car's
    s = arc % length if ctx.loop else 0 if arc < 0 else length if arc > length else arc
    i = s * ctx.count // length
    if i == ctx.count:
        i -= 1
    sample = ctx.samples[i]
    half, g_up, g_right, acc_s = sample.half_width, sample.g_up, sample.g_right, sample.g_tangent
    edge = half + ctx.apron_um
    over_surface = not ctx.fixed or -edge <= lat <= edge
    if over_surface:
        speed_sq = mul(vs, vs)
        load = curving(speed_sq, sample.k_vertical) - g_up
        acc_l = g_right - curving(speed_sq, sample.k_lateral)
    else:
        load = -g_up
        acc_l = g_right
    state = PROJECTILE_FLYING
    vs += div_round(acc_s, 60)
    vlat += div_round(acc_l, 60)
    if h == 0 and vh <= 0 and over_surface and load > 0:  # on the ribbon: it slides against friction
        if spreads:
            world[at + PR_VS] = world[at + PR_VLAT] = world[at + PR_VH] = 0
            return PROJECTILE_DEPLOYED
        vh = 0
        speed = isqrt(mul(vs, vs) + mul(vlat, vlat))
        slowing = div_round(friction_milli * load, 60_000)
        if speed <= slowing:
            world[at + PR_VS] = world[at + PR_VLAT] = world[at + PR_VH] = 0
            return PROJECTILE_RESTING
        vs -= div_trunc(vs * slowing, speed)
        vlat -= div_trunc(vlat * slowing, speed)
    else:
        vh -= div_round(load, 60)
    arc += div_round(vs, 60)
    new_lat = lat + div_round(vlat, 60)
    new_h = h + div_round(vh, 60)
    if new_h < 0 <= h and (not ctx.fixed or -edge <= new_lat <= edge):  # lands, keeping no bounce
        new_h = vh = 0
        if spreads:
            vs = vlat = 0
            state = PROJECTILE_DEPLOYED
    if ctx.fixed and 0 <= new_h < ctx.wall_height_um and -half <= lat <= half and not -half <= new_lat <= half:
        new_lat = half if new_lat > 0 else -half  # stopped by the wall
        vlat = 0
    if new_h < -FALL_UM or not (ctx.loop or 0 <= arc <= length):  # fell off, or flew past an end of the track
        state = PROJECTILE_GONE
    world[at + PR_ARC] = arc % length if ctx.loop else arc
    world[at + PR_LAT], world[at + PR_H] = new_lat, new_h
    world[at + PR_VS], world[at + PR_VLAT], world[at + PR_VH] = vs, vlat, vh
    return state


def _outside(world: list[int], at: int, c: list[int], box: ContactBox, margin: int,
             loop_length: int) -> bool:
    """Whether the bullet at ``at`` is more than ``margin`` outside car ``c``'s box on some axis."""
    length, width, height = box.length, box.width, box.height
    return (abs(around_loop(world[at + PR_ARC] - c[ARC], loop_length)) > length // 2 + margin
            or abs(world[at + PR_LAT] - c[LAT]) > width // 2 + margin
            or abs(world[at + PR_H] - c[H] - height // 2) > height // 2 + margin)


def _strike(world: list[int], bullet: Bullet, start: tuple[int, int, int], car: int, c: list[int],
            car_start: list[int], box: ContactBox, collider: Collider, loop_length: int,
            kicks: dict[int, list[int]], loads: dict[tuple[int, int], list[int]], credits: Credits) -> None:
    """The bullet against one car's box over the frame: nothing unless its path relative to the car
    (from ``start`` against ``car_start`` to where both are now) enters the box; then it is put on the face
    it entered through (if it was inside from the start and still is: the face of least penetration) and, if the two
    close along that face's normal, both take the impulse and the car the impact."""
    at = bullet.at
    length, width, height, mass, restitution = box.length, box.width, box.height, box.mass, box.restitution
    halves = (length // 2, width // 2, height // 2)
    now = (around_loop(world[at + PR_ARC] - c[ARC], loop_length), world[at + PR_LAT] - c[LAT],
           world[at + PR_H] - c[H] - height // 2)  # from the box's centre to the bullet
    before = (around_loop(start[0] - car_start[0], loop_length), start[1] - car_start[1],
              start[2] - car_start[2] - height // 2)
    entry = _entry(before, now, halves)
    if entry is None:
        return
    axis, t_num, t_den = entry
    if t_num <= 0:  # inside from the start: if still inside, out through the face of least penetration
        depth = [halves[k] - abs(now[k]) for k in range(3)]
        if min(depth) <= 0:
            return  # on its way out
        axis = 0 if depth[0] <= depth[1] and depth[0] <= depth[2] else 1 if depth[1] <= depth[2] else 2
        sign = 1 if now[axis] >= 0 else -1  # the face's normal, from the car to the bullet
        world[at + PR_ARC + axis] += sign * depth[axis]
    else:  # entered during the frame: where it crossed the face, relative to the car as it is now
        sign = 1 if before[axis] > 0 else -1
        for k in range(3):
            if k == axis:
                world[at + PR_ARC + k] += sign * halves[k] - now[k]
            else:
                world[at + PR_ARC + k] += before[k] + div_trunc((now[k] - before[k]) * t_num, t_den) - now[k]
    world[at + PR_STATE] = PROJECTILE_FLYING  # moved: it falls and settles again from here
    closing = (c[VELOCITY_FIELDS[axis]] - world[at + PR_VS + axis]) * sign
    if closing <= 0:
        return
    m = bullet.mass_ug
    total = m + mass
    impulse = div_round((1000 + (bullet.restitution_milli + restitution) // 2) * closing * m * mass, 1000 * total)
    world[at + PR_VS + axis] += sign * div_round(impulse, m)
    kick = kicks.setdefault(car, [0, 0, 0])
    kick[axis] -= sign * impulse
    part, strength = collider.struck_part(c)
    if strength is not None:
        area = (width * height, length * height, length * width)[axis]
        add_impact(loads, car, part, closing * closing * m * mass // (2 * total), area, strength, bullet.car, credits)


def _entry(before: tuple[int, int, int], now: tuple[int, int, int],
           halves: tuple[int, int, int]) -> tuple[int, int, int] | None:
    """Where the segment ``before`` → ``now`` (relative to a box centred at 0 with half sizes ``halves``)
    first is strictly inside the box: (the axis entered last, t as numerator and denominator, 0 < t ≤ 1,
    or t ≤ 0 when it starts inside); None if it never is. The slab test in integers: fractions are
    compared by cross products, so no rounding decides a hit."""
    enter_num, enter_den, enter_axis = -1, 1, 0
    exit_num, exit_den = 2, 1
    for k in range(3):
        r0, d, half = before[k], now[k] - before[k], halves[k]
        if d == 0:
            if not -half < r0 < half:
                return None
            continue
        if d > 0:
            num_in, num_out, den = -half - r0, half - r0, d
        else:
            num_in, num_out, den = r0 - half, r0 + half, -d
        if num_in * enter_den > enter_num * den:
            enter_num, enter_den, enter_axis = num_in, den, k
        if num_out * exit_den < exit_num * den:
            exit_num, exit_den = num_out, den
    if enter_num * exit_den >= exit_num * enter_den or enter_num >= enter_den or exit_num <= 0:
        return None
    return enter_axis, enter_num, enter_den
