"""ExternalDriver: presses fire once, holds last until released, at most 4, only chip skills, nothing
while disabled."""

from open4wd_node.drivers import check_decision
from open4wd_node.drivers.external import ExternalDriver
from tests.open4wd_node.drivers.helpers import part_index, set_fields
from tests.sim_core.helpers import ALL_SKILLS, archetype, car, world

FULL = car(ALL_SKILLS)  # all eight skills on the chip


def test_a_press_fires_at_the_next_frame_only_and_repeats_count_once():
    w, driver = world(cars=[FULL]), ExternalDriver()
    driver.press("boost")
    driver.press("boost")
    assert driver.decide(w, 0, 1) == [("boost", False)]
    assert driver.decide(w, 0, 2) == []


def test_holds_last_until_released_and_a_gone_client_releases_its_own():
    w, driver = world(cars=[FULL]), ExternalDriver()
    driver.hold("ui-a", "stabilize", True)
    driver.hold("ui-b", "swerve_left", True)
    driver.hold("ui-b", "stabilize", True)
    for frame in (1, 2, 3):
        assert driver.decide(w, 0, frame) == [("swerve_left", True), ("stabilize", True)]
    driver.release("ui-b")
    assert driver.decide(w, 0, 4) == [("stabilize", True)]
    driver.hold("ui-a", "stabilize", False)
    assert driver.decide(w, 0, 5) == []


def test_at_most_four_presses_first_in_skill_order():
    w, driver = world(cars=[FULL]), ExternalDriver()
    for skill in ("swerve_right", "weapon", "stabilize", "swerve_left"):
        driver.hold("ui", skill, True)
    for skill in ("slam", "boost"):
        driver.press(skill)
    decision = driver.decide(w, 0, 1)
    check_decision(w, 0, decision)
    assert decision == [("boost", False), ("slam", False), ("swerve_left", True), ("swerve_right", True)]


def test_skills_off_the_chip_are_left_out():
    control = archetype(2)  # stabilize, swerves, weapon
    w, driver = world(cars=[control]), ExternalDriver()
    driver.press("boost")
    driver.hold("ui", "swerve_right", True)
    assert driver.decide(w, 0, 1) == [("swerve_right", True)]


def test_nothing_while_disabled_and_presses_made_then_are_dropped():
    w, driver = world(cars=[FULL]), ExternalDriver()
    set_fields(w, 0, {"broken_mask": 1 << part_index(FULL, "chip")})
    driver.press("boost")
    driver.hold("ui", "stabilize", True)
    assert w.disable_reason(0) == "chip-broken" and driver.decide(w, 0, 1) == []
    assert driver.decide(world(cars=[FULL]), 0, 2) == [("stabilize", True)]


def test_reset_forgets_presses_and_holds():
    w, driver = world(cars=[FULL]), ExternalDriver()
    driver.press("jump")
    driver.hold("ui", "weapon", True)
    driver.reset()
    assert driver.decide(w, 0, 1) == []
