"""Rotor weapons (spec/simcore.md §5.4 ``general_actuated``): the actuators' spin and their strikes.

A ``general`` weapon with actuators turns one body per actuator (``VehicleSpec``'s ``RotorSpec``: a rigid
rotor, or a chain taken as one body) about its pivot. Each has a fixed slot in the world's rotor pool
(``state.layout``: after the projectile slots; car by car in slot order, each weapon's actuators in their
declared order), holding its angular speed and, for a swinging arm, its phase.

- **Spin.** On a frame the weapon's Hold fires with the granted effect E (µJ; P = E·60 µW), an actuator's
  target speed is ``ω = P·0.1·w/Σw`` rad/s (``ROTOR_SPEED_PER_UJ``), w its ``speed_weight``. The spec
  reaches it by one Δω torque impulse a frame, so a continuous rotor (360°) turns at its target on every
  held frame; without the Hold it coasts (nothing drives or brakes it but its strikes). A swinging arm
  (a smaller ``weapon_max_angle_deg`` A) follows its curve instead: its phase φ advances by ω/60 a held
  frame from ``phase_offset_deg``, its angle is ``A·curve(φ)`` (0 → A → 0 over a turn of φ:
  ``sim_core.step.curves``), and its speed is the angle's change over the frame; without the Hold it
  stands still.
- **Strikes**, after every car moved, pushed and the bullets flew, before contact, from one snapshot: a
  body strikes another car when the point of that car's contact box nearest the pivot lies within the
  body's reach of its axis and within its span along it (the body's swept disc; an arm's sector is not
  tracked). The body's rim there moves at ``ω·ρ`` along ``t = axis × d`` (ρ the point's distance from the
  axis); with the two cars' velocities along t it closes at ``v_close``, and if it does both cars take
  ``(1 + e)·m_eff·v_close`` along ±t, with ``m_eff = 1/(1/m_A + 1/m_B + ρ²/I)`` (the striking car, the
  struck car, the body's inertia about its axis) and e the Average of the body's and the struck car body's
  restitution; the body loses the angular impulse ``j·ρ/I`` (a light body bounces back off a heavy car,
  turning the other way, as the spec's rigid body would), and the impact's
  energy ``½·m_eff·v_close²`` is impact fatigue on the struck car's part and on the weapon itself
  (``contact.add_impact``). The velocity and spin changes are summed and applied after every strike, so
  the cars' order does not matter.

The route-frame car does not rotate, so the spin's reaction torque on the chassis, which the spec applies
equal and opposite, has nothing to turn here (docs/sim.md "Rotor weapons"). A retired car, a car under a
penalty (a ghost: mass 0) and a car whose weapon is broken neither spin nor strike.
"""

from __future__ import annotations

from typing import Final

from sim_core.constants import ROTOR_SPEED_PER_UJ
from sim_core.intmath import UNIT, around_loop, component, cross, div_trunc, dot, isqrt
from sim_core.specs.materials import material
from sim_core.specs.vehicle import FULL_TURN_MDEG
from sim_core.state.layout import (
    ARC, BROKEN_MASK, H, LAT, RO_OMEGA, RO_PHASE, ROTOR_STRIDE, ROTOR_TURN_URAD, VH, VLAT, VS,
)
from sim_core.step.contact import Collider, ContactBox, Credits, add_impact, apply_kicks, commit_loads
from sim_core.step.curves import swing_ppm
from sim_core.step.model import CarModel

OMEGA_MAX_URAD_S: Final = 1_000_000_000_000
"""A loaded state's rotor speeds lie within ±1e6 rad/s (a Hold would need megawatts to reach it)."""


class Rotor:
    """One actuator's constants: its car, its slot's first index in the world's list, its pivot from the
    car's box centre and its axis along the route axes (s, l, h), its reach, span, mass, inertia and
    restitution, its share of the Hold (weight, the car's Σw), and a swinging arm's amplitude, curve and
    starting phase (µrad; amplitude and phase 0 for a continuous rotor)."""

    def __init__(self, car: int, at: int, pivot: tuple[int, int, int], axis: tuple[int, int, int], reach_um: int,
                 span_um: tuple[int, int], inertia: int, restitution_milli: int, weight_milli: int, weights_milli: int,
                 amplitude_urad: int, linear: bool, start_phase_urad: int) -> None:
        self.car = car
        self.at = at
        self.pivot = pivot
        self.axis = axis
        self.reach_um = reach_um
        self.span_um = span_um
        self.inertia = inertia
        self.restitution_milli = restitution_milli
        self.weight_milli = weight_milli
        self.weights_milli = weights_milli
        self.amplitude_urad = amplitude_urad
        self.linear = linear
        self.start_phase_urad = start_phase_urad

    def angle(self, phase: int) -> int:
        """A swinging arm's angle (µrad) at ``phase``: 0 at phase 0, A at half a turn, back to 0."""
        return self.amplitude_urad * swing_ppm(phase, ROTOR_TURN_URAD, self.linear) // UNIT


class Rotors:
    """The round's rotor weapons and their slots, from ``base`` on in the world's list (module docstring);
    ``slots`` = the pool's size in the state (0 without a rotor: then nothing here runs)."""

    def __init__(self, models: list[CarModel], base: int) -> None:
        self.rotors: list[Rotor] = []
        self.ranges: list[tuple[int, int]] = []  # per car: its rotors' range in ``rotors``
        for car, model in enumerate(models):
            weapon = model.spec.weapon
            first = len(self.rotors)
            specs = weapon.rotors if weapon is not None else ()
            weights = sum(r.weight_milli for r in specs)
            for spec in specs:
                x, y, z = spec.pivot_um  # car frame (x right, y up, z back) → route axes (s = −z, l = x, h = y)
                ax, ay, az = spec.axis_e6
                full = spec.max_angle_mdeg == FULL_TURN_MDEG
                self.rotors.append(Rotor(
                    car, base + len(self.rotors) * ROTOR_STRIDE, (-z, x, y), (-az, ax, ay), spec.reach_um, spec.span_um,
                    spec.inertia, material(spec.material).restitution_milli, spec.weight_milli, weights,
                    0 if full else spec.max_angle_mdeg * ROTOR_TURN_URAD // FULL_TURN_MDEG, spec.curve == "linear",
                    0 if full else spec.phase_mdeg * ROTOR_TURN_URAD // FULL_TURN_MDEG % ROTOR_TURN_URAD))
            self.ranges.append((first, len(self.rotors)))
        self.slots = len(self.rotors)

    def start(self, world: list[int]) -> None:
        """The round's first state: every body still, each arm at its phase offset."""
        for rotor in self.rotors:
            world[rotor.at + RO_OMEGA] = 0
            world[rotor.at + RO_PHASE] = rotor.start_phase_urad

    def spin(self, world: list[int], car: int, effect_uj: int) -> None:
        """Drive ``car``'s actuators for one frame with its Hold's granted effect (0: not held)."""
        first, end = self.ranges[car]
        for k in range(first, end):
            rotor = self.rotors[k]
            at = rotor.at
            target = effect_uj * ROTOR_SPEED_PER_UJ * rotor.weight_milli // rotor.weights_milli if effect_uj else 0
            if not rotor.amplitude_urad:
                if effect_uj:
                    world[at + RO_OMEGA] = target
                continue
            phase = world[at + RO_PHASE]
            advanced = (phase + target // 60) % ROTOR_TURN_URAD
            world[at + RO_PHASE] = advanced
            world[at + RO_OMEGA] = (rotor.angle(advanced) - rotor.angle(phase)) * 60

    def strike(self, world: list[int], cars: list[list[int]], boxes: list[ContactBox],
               models: list[CarModel], colliders: list[Collider], loop_length: int, credits: Credits) -> dict[int, int]:
        """Every turning body against every other car (module docstring); the parts the strikes break, as
        a bit mask per car (the frame's end-of-frame transaction commits them); the struck car's damage is
        the rotor's car's contribution in ``credits``, the weapon's the struck car's."""
        kicks: dict[int, list[int]] = {}
        spins: dict[int, int] = {}  # rotor index → the angular impulse its strikes take from it (µg·µm²/s)
        loads: dict[tuple[int, int], list[int]] = {}
        for k, rotor in enumerate(self.rotors):
            omega = world[rotor.at + RO_OMEGA]
            a = rotor.car
            ca, box_a = cars[a], boxes[a]
            weapon = models[a].weapon
            if not omega or not box_a.mass or ca[BROKEN_MASK] >> weapon & 1:
                continue
            ps, pl, ph = rotor.pivot
            pivot = (ca[ARC] + ps, ca[LAT] + pl, ca[H] + box_a.height // 2 + ph)
            for b, cb in enumerate(cars):
                box_b = boxes[b]
                if b == a or not box_b.mass:
                    continue
                hit = self._strike(rotor, omega, pivot, ca, cb, box_a, box_b, loop_length)
                if hit is None:
                    continue
                impulse, rho, t, energy, area = hit
                for axis in range(3):
                    share = div_trunc(impulse * t[axis], UNIT)
                    kick_b, kick_a = kicks.setdefault(b, [0, 0, 0]), kicks.setdefault(a, [0, 0, 0])
                    kick_b[axis] = kick_b[axis] + share
                    kick_a[axis] = kick_a[axis] - share
                spins[k] = spins.get(k, 0) + impulse * rho
                part, strength = colliders[b].struck_part(cb)
                if strength is not None:
                    add_impact(loads, b, part, energy, area, strength, a, credits)
                weapon_strength = colliders[a].weapon_strength_kpa
                if weapon_strength is not None:
                    add_impact(loads, a, weapon, energy, area, weapon_strength, b, credits)
        for k, angular in spins.items():
            rotor = self.rotors[k]
            at = rotor.at
            omega = world[at + RO_OMEGA]
            lost = angular * UNIT // rotor.inertia
            world[at + RO_OMEGA] = omega - lost if omega > 0 else omega + lost
        apply_kicks(cars, boxes, kicks)
        return commit_loads(cars, loads) if loads else {}

    @staticmethod
    def _strike(rotor: Rotor, omega: int, pivot: tuple[int, int, int], ca: list[int], cb: list[int],
                box_a: ContactBox, box_b: ContactBox,
                loop_length: int) -> tuple[int, int, tuple[int, int, int], int, int] | None:
        """One body against one car's box: None, or the strike's impulse (µg·µm/s), its lever arm ρ (µm),
        its direction t (ppm), its energy (1e-21 J) and the struck face's area (µm²)."""
        length, width, height = box_b.length, box_b.width, box_b.height
        mass_b, restitution_b = box_b.mass, box_b.restitution
        reach = rotor.reach_um
        rel_s = around_loop(cb[ARC] - pivot[0], loop_length)
        if abs(rel_s) > length // 2 + reach:
            return None
        rel = (rel_s, cb[LAT] - pivot[1], cb[H] + height // 2 - pivot[2])  # the box's centre from the pivot
        halves = (length // 2, width // 2, height // 2)
        # the box's point nearest the pivot
        d = (min(max(0, rel[0] - halves[0]), rel[0] + halves[0]), min(max(0, rel[1] - halves[1]), rel[1] + halves[1]),
             min(max(0, rel[2] - halves[2]), rel[2] + halves[2]))
        along = dot(d, rotor.axis) // UNIT
        if not rotor.span_um[0] <= along <= rotor.span_um[1]:
            return None
        rim = cross(rotor.axis, d)  # ppm·µm: the rim's motion there, for ω > 0
        norm = isqrt(dot(rim, rim))
        rho = norm // UNIT
        if not 0 < rho <= reach:
            return None
        sign = 1 if omega > 0 else -1
        t = (sign * rim[0] * UNIT // norm, sign * rim[1] * UNIT // norm, sign * rim[2] * UNIT // norm)
        relative = ((ca[VS] - cb[VS]) * t[0] + (ca[VLAT] - cb[VLAT]) * t[1] + (ca[VH] - cb[VH]) * t[2]) // UNIT
        closing = abs(omega) * rho // UNIT + relative
        if closing <= 0:
            return None
        mass_a, inertia = box_a.mass, rotor.inertia
        num = mass_a * mass_b * inertia
        den = (mass_a + mass_b) * inertia + rho * rho * mass_a * mass_b
        restitution = (rotor.restitution_milli + restitution_b) // 2
        impulse = (1000 + restitution) * closing * num // (1000 * den)
        # the face whose normal is nearest t: the first largest |t[i]| (a comparison, not a key function)
        along, across, up = abs(t[0]), abs(t[1]), abs(t[2])
        face = 0 if along >= across and along >= up else 1 if across >= up else 2
        area = component((width * height, length * height, length * width), face)
        return impulse, rho, t, closing * closing * num // (2 * den), area

    def valid_pool(self, world: list[int]) -> bool:
        """Whether a decoded state's rotor slots are ones this round can reach (``StateLimits``): every
        speed within ±``OMEGA_MAX_URAD_S``; a continuous rotor's phase 0, an arm's within a turn."""
        for rotor in self.rotors:
            at = rotor.at
            omega, phase = world[at + RO_OMEGA], world[at + RO_PHASE]
            if abs(omega) > OMEGA_MAX_URAD_S:
                return False
            if (phase != 0) if not rotor.amplitude_urad else not 0 <= phase < ROTOR_TURN_URAD:
                return False
        return True
