"""Properties of the magnets', fluids' and weapons' specs and laws for any input (hypothesis): the specs
refuse anything but their own values with their coded error, the force laws are odd (an action and its
reaction cancel exactly) and the surface gap is the exact height of a triangle over a point inside it."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from sim_core.assets.surface import vertical_gap
from sim_core.errors import SimError
from sim_core.specs.fluids import FluidZone
from sim_core.specs.magnets import MagnetPole, MagnetSource, SteelPoint
from sim_core.step.magnets import passive_pull, pole_push

ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4),
                     st.tuples(st.integers(), st.integers()), st.tuples(st.integers(), st.integers(), st.integers()),
                     st.tuples(st.floats(), st.floats(), st.floats()))
COORD = st.integers(-10**9, 10**9)
POINT = st.tuples(COORD, COORD, COORD)


@given(ANYTHING, ANYTHING, ANYTHING, ANYTHING)
def test_specs_accept_their_values_or_refuse_with_their_code(a, b, c, d):
    for build, code in ((lambda: MagnetSource(a, b, c, d).validate("m"), "track-invalid-magnet"),
                        (lambda: SteelPoint(a, b).validate("s"), "vehicle-invalid-magnet"),
                        (lambda: MagnetPole(a, b).validate("p"), "vehicle-invalid-magnet"),
                        (lambda: FluidZone(a, b, c, d).validate("f"), "track-invalid-fluid")):
        try:
            build()
        except SimError as exc:
            assert exc.code in (code, "unknown-material")


@given(POINT, POINT, st.integers(1, 10_000), st.integers(1, 10_000))
def test_a_pull_and_its_reverse_are_exact_opposites(a, b, strength, chi):
    forward, backward = passive_pull(a, strength, b, chi), passive_pull(b, strength, a, chi)
    assert forward == tuple(-x for x in backward)


UNIT_POLE = st.sampled_from([(1_000_000, 0, 0), (0, -1_000_000, 0), (0, 0, 1_000_000), (600_000, 800_000, 0)])


@given(POINT, POINT, st.integers(1, 20_000), st.integers(1, 20_000), UNIT_POLE, UNIT_POLE)
def test_two_sources_push_each_other_equally_and_oppositely(a, b, sa, sb, na, nb):
    pa, pb = (*a, sa, *na), (*b, sb, *nb)
    on_b, on_a = pole_push(pa, pb), pole_push(pb, pa)
    assert on_b == tuple(-x for x in on_a)


@given(st.lists(st.tuples(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6), st.integers(-10**6, 10**6)),
                min_size=3, max_size=3, unique=True),
       st.integers(1, 1000), st.integers(1, 1000), st.integers(-10**6, 10**6))
def test_the_gap_is_the_exact_height_over_a_point_inside_a_triangle(corners, u, v, y):
    """A point at barycentric (u, v, w)/(u + v + w) of the triangle's (x, z) projection, at height y: the gap
    is y minus the triangle's exact height there, rounded half away from zero (None over a projection
    without area)."""
    w = 1
    total = u + v + w
    a, b, c = corners = [(x * total, cy, z * total) for x, cy, z in corners]  # so that the point is a µm point
    px_num, pz_num = u * a[0] + v * b[0] + w * c[0], u * a[2] + v * b[2] + w * c[2]
    area2 = (b[0] - a[0]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[0] - a[0])
    if area2 == 0:
        assert vertical_gap([(np.array(corners), np.array([(0, 1, 2)]))], (px_num // total, y, pz_num // total)) is None
        return
    height = Fraction(u * a[1] + v * b[1] + w * c[1], total)
    gap = vertical_gap([(np.array(corners), np.array([(0, 1, 2)]))], (px_num // total, y, pz_num // total))
    exact = y - height
    assert gap is not None and abs(Fraction(gap) - exact) <= Fraction(1, 2)
