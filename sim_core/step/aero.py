"""Relative-airflow aero of one car for one frame (spec/simcore.md §7.4, 算式表 §10.3), in the route frame.

``v_air = v_wind − v``, both along the route sample's (tangent s, right l, up h). Per axis the drag is
``F = 0.6·A(sign)·v_air,axis·|v_air|``, where the sign of the component picks the area: air moving
along +axis strikes the faces that face −axis. The lift is ``lift_factor·|F_drag ⟂ up|`` along −up
(positive lift factor = downforce). The sum is capped at |ΣF| ≤ 2·m·g by one uniform scale, and the
impulse of a frame is F/60.

Units: areas µm², velocities µm/s, impulses µg·µm/s (1 N·s = 1e15). 0.6·A[m²]·v²[m²/s²]/60 N·s =
0.6e-24·A·v²/60 · 1e15 = A·v·|v| / 1e11 exactly: one integer division per axis, rounded toward zero
(``div_trunc``: no sign bias, a drag never exceeds its exact value). The model has no rotation
(docs/sim.md "Aero"): ω×r_cop is zero and a force's point of application (the COP) changes nothing.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from sim_core.intmath import TRIG_ONE, Vec3, div_round, div_trunc, isqrt, mul, sin_cos_e30
from sim_core.specs.vehicle import AeroSpec

AERO_IMPULSE_DEN: Final = 100_000_000_000
"""A[µm²]·v·|v|[µm²/s²] / 1e11 = 0.6·A·v²·dt in µg·µm/s (K_AERO_DRAG 0.6, dt = 1/60 s)."""
LIFT_DEN: Final = 1000
MAX_WEIGHT_MULTIPLIER: Final = 2


class AeroModel(NamedTuple):
    """A car's aero in route axes: the area the air meets when its component along the axis is positive
    or negative (s = forward = the body's −Z, l = right = +X, h = up = +Y), and the lift factor ‰."""

    s_pos: int  # air moving forward (tailwind faster than the car) meets the back faces (+Z)
    s_neg: int  # air moving backward meets the front faces (−Z)
    l_pos: int  # air moving to the right meets the left faces (−X)
    l_neg: int
    h_pos: int  # air moving up meets the bottom faces (−Y)
    h_neg: int
    lift_milli: int


def aero_model(aero: AeroSpec) -> AeroModel:
    """The route-axis areas of a body's ``AeroSpec`` (areas in the order +X, −X, +Y, −Y, +Z, −Z)."""
    px, nx, py, ny, pz, nz = aero.drag_area_um2
    return AeroModel(pz, nz, nx, px, ny, py, aero.lift_factor_milli)


def weight_cap(mass_ug: int, gravity_um_s2: int) -> int:
    """The largest aero impulse of a frame: 2·m·g·dt (µg·µm/s)."""
    return MAX_WEIGHT_MULTIPLIER * mass_ug * gravity_um_s2 // 60


def aero_impulse(aero: AeroModel, air_s: int, air_l: int, air_h: int, cap: int) -> tuple[int, int, int]:
    """The frame's aero impulse (s, l, h) for the air velocity (µm/s) relative to the car.

    It runs for every car and frame, so an axis without airflow (most often l and h: 90 % of the demo
    round's calls) costs a test, and its products are arranged for the compiled step's machine words:
    each axis through ``_drag``, the lift's |J ⟂ up| read as |js| when jl is 0 (isqrt(js²) = |js|), and
    the cap's exact test (squares of big impulses: big integers) only when the largest component is at
    least half the cap (below it |J|² ≤ 3·largest² < cap², the exact test's answer). The same integers."""
    s_pos, s_neg, l_pos, l_neg, h_pos, h_neg, lift_milli = aero
    if air_l or air_h:
        speed = isqrt(mul(air_s, air_s) + mul(air_l, air_l) + mul(air_h, air_h))
    else:  # the usual frame: still air, the car running straight along the route
        speed = air_s if air_s >= 0 else -air_s
    js = jl = jh = 0
    if air_s:
        js = _drag(s_pos if air_s > 0 else s_neg, air_s, speed)
    if air_l:
        jl = _drag(l_pos if air_l > 0 else l_neg, air_l, speed)
    if air_h:
        jh = _drag(h_pos if air_h > 0 else h_neg, air_h, speed)
    if lift_milli:  # lift from the drag across gravity, along −up when positive (downforce)
        across = isqrt(mul(js, js) + mul(jl, jl)) if jl else js if js >= 0 else -js
        jh -= div_trunc(mul(lift_milli, across), LIFT_DEN)
    size_s, size_l, size_h = js if js >= 0 else -js, jl if jl >= 0 else -jl, jh if jh >= 0 else -jh
    if size_s + size_s > cap or size_l + size_l > cap or size_h + size_h > cap:
        total2 = mul(js, js) + mul(jl, jl) + mul(jh, jh)
        if total2 > cap * cap:  # uniform scale down to |J| = cap
            total = isqrt(total2)
            js, jl, jh = div_trunc(js * cap, total), div_trunc(jl * cap, total), div_trunc(jh * cap, total)
    return js, jl, jh


def _drag(area: int, air: int, speed: int) -> int:
    """One axis's drag impulse ``div_trunc(area·air·speed, AERO_IMPULSE_DEN)`` for ``speed`` ≥ 0, computed
    on a = |area·air| with its sign applied last and ⌊a·speed/D⌋ = ⌊a/D⌋·speed + ⌊(a mod D)·speed/D⌋: the
    same integer, without the three-factor product that outgrows a machine word (a big integer)."""
    a = mul(area, air)
    size = a if a >= 0 else -a
    size = size // AERO_IMPULSE_DEN * speed + size % AERO_IMPULSE_DEN * speed // AERO_IMPULSE_DEN
    return size if a >= 0 else -size


def wind_vector_um_s(speed_um_s: int, direction_mdeg: int) -> Vec3:
    """The world-frame wind velocity (µm/s) of a track's weather: horizontal, blowing toward
    ``direction_mdeg`` (0° = +X, 90° = −Z; spec §7.4), each component rounded with ``div_round``."""
    sin, cos = sin_cos_e30(direction_mdeg)
    return div_round(speed_um_s * cos, TRIG_ONE), 0, div_round(-speed_um_s * sin, TRIG_ONE)
