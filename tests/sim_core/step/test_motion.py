"""Route geometry and the route-frame motion: slopes, crests, curves, walls and rollers, course-out,
tire shares, rolling resistance, car-to-car contact."""

from sim_core.intmath import div_round, div_trunc, isqrt, normalize
from sim_core.state.layout import BROKEN_MASK, H, LAT, OUTSIDE, PENALTY_KIND, VLAT, VS
from sim_core.specs.route import Route
from sim_core.specs.track import RoutePoint, TrackSpec

from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import M, UP, car, place, straight_track, world


def test_integer_helpers_follow_their_sign_rules():
    assert (div_round(5, 2), div_round(-5, 2), div_round(-7, 3)) == (3, -2, -2)
    assert (div_trunc(7, 2), div_trunc(-7, 2)) == (3, -3)
    assert normalize((3, 0, -4)) == (600_000, 0, -800_000)
    assert isqrt(10**24) == 10**12


def test_straight_route_is_sampled_at_equal_arc_length():
    route = Route(straight_track(length_m=5))
    assert route.length_um == 5 * M
    assert route.arc[:3] == [0, 10_000, 20_000] and route.arc[-1] == 5 * M
    assert set(route.k_vertical) == {0} and set(route.k_lateral) == {0}
    assert route.point(2 * M, 100_000, 30_000) == (100_000, 30_000, -2 * M)


def test_quarter_turn_length_and_curvature():
    route = Route(TrackSpec("t", "fixed", (RoutePoint((0, 0, 0), (0, 0, -M), UP, M),
                                          RoutePoint((M, 0, -M), (M, 0, 0), UP, M)), "asphalt"))
    # handles of chord/3 (spec) make the curve a little tighter than a true quarter circle (1.5708 m)
    assert 1_500_000 < route.length_um < 1_570_796
    middle = route.count // 2
    assert 600_000 < route.k_lateral[middle] < 1_400_000  # right turn: about +1/m (×1e6)
    assert route.k_vertical[middle] == 0


def test_circuit_crest_and_dip_have_opposite_vertical_curvature():
    track = circuit_track()
    route = Route(track)
    crest_arc, _, _ = route.project(track.route[3].position_um)
    dip_arc, _, _ = route.project(track.route[8].position_um)
    assert route.k_vertical[route.index(crest_arc)] < 0 < route.k_vertical[route.index(dip_arc)]
    assert route.loop and route.px[0] == route.px[-1]


def _speed_after(track, frames=120):
    w = world(track)
    place(w, 0, h=0, vh=0, arc=M)
    for _ in range(frames):
        w.step({})
    return w.car_state(0)["vs_um_s"]


def test_slopes_slow_and_speed_cars():
    uphill = straight_track(gravity_dir_e6=normalize((0, -M, 100_000)))  # gravity pulls back along +Z
    downhill = straight_track(gravity_dir_e6=normalize((0, -M, -100_000)))
    flat = _speed_after(straight_track())
    assert _speed_after(uphill) < flat < _speed_after(downhill)


def crest_track():
    route = (RoutePoint((0, 0, 0), (0, 0, -M), UP, M), RoutePoint((0, 100_000, -M), (0, 0, -M), UP, M),
             RoutePoint((0, 0, -2 * M), (0, 0, -M), UP, M), RoutePoint((0, 0, -4 * M), (0, 0, -M), UP, M))
    return TrackSpec("t:crest", "fixed", route, "asphalt", lap_mode="linear")


def _max_height_over_crest(speed):
    w = world(crest_track())
    place(w, 0, arc=700_000, h=0, vh=0, vs=speed)
    heights = []
    for _ in range(40):
        w.step({})
        heights.append(w._cars[0][H])
    return max(heights)


def test_a_fast_car_leaves_the_ground_over_a_crest_and_a_slow_one_does_not():
    assert _max_height_over_crest(500_000) == 0
    assert _max_height_over_crest(5_000_000) > 0  # v²κ ≈ 25 · 0.58 > g


def test_fast_car_drifts_to_the_outer_wall_in_a_curve():
    track = circuit_track()
    w = world(track)
    far_turn, _, _ = w.route.project(track.route[5].position_um)
    place(w, 0, arc=far_turn, lat=0, h=0, vh=0, vs=4_500_000)  # v²/r ≈ 13.5 m/s² > μg
    lats = []
    for _ in range(60):
        w.step({})
        lats.append(w._cars[0][LAT])
    inner = 750_000 - 50_000
    assert min(lats) == -inner  # right turn: thrown out to the left wall, stopped there by it
    assert max(lats[lats.index(-inner):]) < 0  # and kept on the outer side afterwards


def _speed_after_wall_hit(rollers):
    w = world(cars=[car(rollers=rollers), car()])
    place(w, 0, arc=M, lat=440_000, h=0, vh=0, vs=2_000_000, vlat=1_000_000)
    w._cars[0][BROKEN_MASK] = 1 << w.models[0].motor  # coast, so only the wall changes the speed
    w.step({})
    assert w._cars[0][LAT] == 450_000
    return w._cars[0][VS], w._cars[0][VLAT]


def test_rollers_run_along_the_wall_while_a_bare_body_scrubs_speed():
    with_rollers, bounce_rollers = _speed_after_wall_hit(("FL", "FR", "RL", "RR"))
    bare, bounce_bare = _speed_after_wall_hit(())
    assert bare < with_rollers <= 2_000_000
    assert bounce_rollers < 0 and bounce_bare < 0  # bounced back off the wall


def test_airborne_car_above_the_wall_courses_out_and_falls_out():
    w = world(straight_track())
    place(w, 0, arc=M, lat=400_000, h=100_000, vh=500_000, vlat=2_000_000, vs=0)
    for _ in range(20):
        w.step({})
    assert w._cars[0][OUTSIDE] == 1
    for _ in range(300):
        w.step({})
        if w._cars[0][PENALTY_KIND]:
            break
    assert w._cars[0][PENALTY_KIND] == 2


def test_a_broken_tire_keeps_its_share_unspent():
    full, three = world(), world()
    for w in (full, three):
        place(w, 0, h=0, vh=0, arc=M)
    tire = three.models[0].tire_parts[0]
    three._cars[0][BROKEN_MASK] = 1 << tire
    full.step({})
    three.step({})
    model = full.models[0]
    m4, m3 = model.mechanics(0).mass_ug, model.mechanics(1 << tire).mass_ug
    p4, p3 = full._cars[0][VS] * m4, three._cars[0][VS] * m3
    assert abs(p3 * 4 - p4 * 3) <= p4 // 1000  # 75 % of the drive impulse (rolling resistance aside)


def test_rolling_resistance_stops_a_coasting_car_but_never_reverses_it():
    w = world(count=2)  # the second car stays alive so that the endgame window does not end the round
    place(w, 0, h=0, vh=0, arc=M, vs=2_000)
    w._cars[0][BROKEN_MASK] = 1 << w.models[0].motor
    speeds = []
    for _ in range(200):
        w.step({})
        speeds.append(w._cars[0][VS])
    assert speeds[-1] == 0 and min(speeds) >= 0 and speeds[0] < 2_000


def test_a_car_without_tires_scrapes_to_a_stop():
    w = world(count=2)
    place(w, 0, h=0, vh=0, arc=M, vs=1_000_000)
    w._cars[0][BROKEN_MASK] = sum(1 << t for t in w.models[0].tire_parts)
    speeds = []
    for _ in range(30):
        w.step({})
        speeds.append(w._cars[0][VS])
    stop = speeds.index(0)
    assert 8 <= stop <= 14 and min(speeds) == 0  # μ = Average(abs 0.40, asphalt 0.85): ~6 m/s², ~0.17 s


def _collision(order):
    w = world(straight_track(width_um=1_000_000), count=2)
    fast, slow = order
    place(w, fast, arc=M, lat=0, h=0, vh=0, vs=2_000_000)
    place(w, slow, arc=M + 165_000, lat=0, h=0, vh=0, vs=0)
    for _ in range(3):
        w.step({})
    return w.car_state(fast), w.car_state(slow)


def test_contact_is_order_independent_and_conserves_momentum():
    a_fast, a_slow = _collision((0, 1))
    b_fast, b_slow = _collision((1, 0))
    assert a_fast == b_fast and a_slow == b_slow
    assert a_slow["vs_um_s"] > 0 and a_fast["vs_um_s"] < 2_000_000
    assert a_slow["arc_um"] - a_fast["arc_um"] >= 160_000 - 2  # pushed apart, no lasting overlap
