"""Car-to-car friction and impact/shear fatigue (spec §3 combine rules, §7.2), hand-computed on two cars
built directly (``resolve`` takes the state's lists), then through a world's frame."""

from __future__ import annotations

from sim_core import World
from sim_core.state.layout import ARC, BROKEN_MASK, LAT, P_BREAK_FRAME, P_FATIGUE, VLAT, VS, car_length, part_field
from sim_core.step.contact import Collider, ContactBox, impact_fatigue, resolve

from tests.sim_core.helpers import M, place, straight_track, world

BODY, CHASSIS = 0, 1
MASS = 100_000_000  # 100 g in µg
BOX = ContactBox(150_000, 100_000, 40_000, MASS, 500)  # length, width, height µm, mass, restitution ‰
ABS = (40_000, 50_000)  # yield, ultimate kPa


def two_cars(**fields: tuple[int, int]) -> list[list[int]]:
    cars = [[0] * car_length(2), [0] * car_length(2)]
    for name, (a, b) in fields.items():
        index = {"arc": ARC, "lat": LAT, "vs": VS, "vlat": VLAT}[name]
        cars[0][index], cars[1][index] = a, b
    return cars


def colliders(mu_a: int = 400, mu_b: int = 600, strength: tuple[int, int] | None = ABS) -> list[Collider]:
    return [Collider(mu, BODY, strength, CHASSIS, strength) for mu in (mu_a, mu_b)]


def test_side_by_side_cars_rub_up_to_coulomb_s_cap():
    """Lateral overlap 10 mm, closing at 1 m/s, car 0 passing at 2 m/s: normal impulse (1 + 0.5)·m_eff·v =
    1.5 · 5e7 µg · 1e6 µm/s = 7.5e13; μ = Average(0.4, 0.6) = 0.5, so friction 3.75e13 (the slide would
    need 1e14 to stop): car 0 loses 0.375 m/s along the route and car 1 gains it."""
    cars = two_cars(lat=(0, 90_000), vlat=(1_000_000, 0), vs=(2_000_000, 0))
    assert resolve(cars, [BOX, BOX], 0, colliders(), {}) == {}
    assert (cars[0][VLAT], cars[1][VLAT]) == (1_000_000 - 750_000, 750_000)
    assert (cars[0][VS], cars[1][VS]) == (2_000_000 - 375_000, 375_000)


def test_a_slow_slide_is_stopped_not_reversed():
    """A slide of 0.1 m/s needs only m_eff·v = 5e12 to stop, under the cap: both end at 0.05 m/s."""
    cars = two_cars(lat=(0, 90_000), vlat=(1_000_000, 0), vs=(100_000, 0))
    resolve(cars, [BOX, BOX], 0, colliders(), {})
    assert cars[0][VS] == cars[1][VS] == 50_000


def test_friction_keeps_the_result_independent_of_the_cars_order():
    forward = two_cars(lat=(0, 90_000), vlat=(1_000_000, -200_000), vs=(2_000_000, 300_000))
    backward = [forward[1].copy(), forward[0].copy()]
    resolve(forward, [BOX, BOX], 0, colliders(400, 600), {})
    resolve(backward, [BOX, BOX], 0, colliders(600, 400), {})
    assert forward == [backward[1], backward[0]]


def test_impact_fatigue_follows_the_spec_s_stress_rule():
    """1 mm² face (1e6 µm²): stress in Pa = E[1e-21 J] / 1e12. At 40 MPa (the yield) nothing; at 45 MPa
    fatigue 45/50 = 0.9 (900 000 ppm), not broken; above 75 MPa (1.5 × ultimate) broken at once."""
    assert impact_fatigue(40 * 10**18, 10**6, ABS) == (0, False)
    assert impact_fatigue(45 * 10**18, 10**6, ABS) == (900_000, False)
    assert impact_fatigue(75 * 10**18, 10**6, ABS) == (1_500_000, False)  # exactly 1.5 × ultimate: not above
    assert impact_fatigue(75 * 10**18 + 1, 10**6, ABS)[1] is True


def test_a_hard_hit_breaks_the_body_and_the_next_one_loads_the_chassis():
    """Head-on along the route at 100 m/s relative: E = ½ · 5e7 µg · (1e8 µm/s)² = 2.5e23 (250 J); each
    front face is 100 mm × 40 mm = 4e9 µm², stress 2.5e23 / 4e15 = 62.5 MPa: above ABS's yield (40), fatigue
    62.5 / 50 = 1.25 ≥ 1, so both bodies break (not at once: 62.5 < 1.5 × 50); with the bodies broken, the
    chassis take the next impact."""
    cars = two_cars(arc=(0, 100_000), vs=(50_000_000, -50_000_000))
    assert resolve(cars, [BOX, BOX], 0, colliders(), {}) == {0: 1 << BODY, 1: 1 << BODY}
    assert cars[0][part_field(BODY, P_FATIGUE)] == 1_000_000  # capped at the break
    for c in cars:
        c[BROKEN_MASK] |= 1 << BODY  # committed at the frame's end (below, through a world)
        c[ARC], c[VS] = 0, 50_000_000
    cars[1][ARC], cars[1][VS] = 100_000, -50_000_000
    assert resolve(cars, [BOX, BOX], 0, colliders(), {}) == {0: 1 << CHASSIS, 1: 1 << CHASSIS}


def test_a_material_without_strengths_takes_no_fatigue():
    cars = two_cars(arc=(0, 100_000), vs=(50_000_000, -50_000_000))
    assert resolve(cars, [BOX, BOX], 0, colliders(strength=None), {}) == {}
    assert cars[0][part_field(BODY, P_FATIGUE)] == 0


def weak_bodies_meet() -> tuple[World, int]:
    """A car running into the one ahead, both bodies of 1 kPa strength (a collider standing in for a weak
    material), stepped until the first body breaks (within 10 frames); the world and the body's part."""
    w = world(straight_track(width_um=1_000_000), count=2)
    body = w.models[0].body
    for slot in (0, 1):
        w._frame.colliders[slot] = Collider(500, body, (1, 1), w.models[slot].chassis, (1, 1))
    place(w, 0, arc=M, lat=0, h=0, vh=0, vs=2_000_000)
    place(w, 1, arc=M + 165_000, lat=0, h=0, vh=0, vs=0)
    while not w._cars[0][BROKEN_MASK] >> body & 1:
        w.step({})
        assert w.frame < 10
    return w, body


def test_a_contact_break_is_committed_by_the_frame():
    """Through a world: a car running into the one ahead breaks its body in the frame of the contact,
    recorded at the frame's end like a heat break."""
    w, body = weak_bodies_meet()
    for c in w._cars:
        assert c[BROKEN_MASK] >> body & 1 and c[part_field(body, P_BREAK_FRAME)] == w.frame
