"""The step's products are arranged for the compiled step's machine words (``intmath.mul``, the split
divisions of the drag and the centrifugal terms): each must be the very integer of the plain formula,
for every sign and size, or the engine would compute something else than its rules say."""

from hypothesis import given
from hypothesis import strategies as st

from sim_core.intmath import component, isqrt, mul
from sim_core.step.aero import AERO_IMPULSE_DEN, LIFT_DEN, AeroModel, aero_impulse
from sim_core.step.physics import CURVE, curving

WIDE = st.integers(min_value=-(2**70), max_value=2**70)
EDGES = st.sampled_from([0, 1, -1, 2**29, 2**30 - 1, 2**30, 2**30 + 1, 2**60 - 1, 2**60, 2**62, 2**64,
                         -(2**30), -(2**60), -(2**62)])


@given(st.one_of(WIDE, EDGES), st.one_of(WIDE, EDGES))
def test_mul_is_the_product(a, b):
    assert mul(a, b) == a * b


@given(st.tuples(WIDE, WIDE, WIDE), st.integers(min_value=0, max_value=2))
def test_component_is_the_index(v, axis):
    assert component(v, axis) == v[axis]


@given(st.integers(min_value=0, max_value=2**62), st.integers(min_value=-(2**40), max_value=2**40))
def test_curving_is_the_floor_of_the_plain_quotient(speed_sq, curvature):
    assert curving(speed_sq, curvature) == speed_sq * curvature // CURVE


def _trunc(p: int, d: int) -> int:
    return p // d if p >= 0 else -(-p // d)


def reference_aero(aero: AeroModel, s: int, lat: int, h: int, cap: int) -> tuple[int, int, int]:
    """The aero impulse as its formula reads (docs/sim.md "Aero"), products unarranged."""
    s_pos, s_neg, l_pos, l_neg, h_pos, h_neg, lift = aero
    speed = isqrt(s * s + lat * lat + h * h)
    js = _trunc((s_pos if s > 0 else s_neg) * s * speed, AERO_IMPULSE_DEN) if s else 0
    jl = _trunc((l_pos if lat > 0 else l_neg) * lat * speed, AERO_IMPULSE_DEN) if lat else 0
    jh = _trunc((h_pos if h > 0 else h_neg) * h * speed, AERO_IMPULSE_DEN) if h else 0
    if lift:
        jh -= _trunc(lift * isqrt(js * js + jl * jl), LIFT_DEN)
    total2 = js * js + jl * jl + jh * jh
    if total2 > cap * cap:
        total = isqrt(total2)
        js, jl, jh = _trunc(js * cap, total), _trunc(jl * cap, total), _trunc(jh * cap, total)
    return js, jl, jh


AREA = st.integers(min_value=0, max_value=10**11)  # µm²: up to 0.1 m²
AIR = st.one_of(st.just(0), st.integers(min_value=-(10**8), max_value=10**8))  # µm/s: up to 100 m/s


@given(st.tuples(AREA, AREA, AREA, AREA, AREA, AREA, st.integers(min_value=-1000, max_value=1000)), AIR, AIR, AIR,
       st.integers(min_value=0, max_value=10**15))
def test_aero_impulse_is_its_formula(areas, s, lat, h, cap):
    aero = AeroModel(*areas)
    assert aero_impulse(aero, s, lat, h, cap) == reference_aero(aero, s, lat, h, cap)
