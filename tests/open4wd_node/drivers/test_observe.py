"""CarRows decodes save_state exactly as World.car_state names the fields, for cars of different sizes."""

from types import SimpleNamespace

import pytest

from open4wd_node.drivers.observe import CarRows, StateLayoutError
from sim_core.harness.scripted import RandomInputs
from tests.sim_core.helpers import code_round


def test_rows_match_car_state_for_every_slot_while_racing():
    world = code_round(8, seed=3)
    assert len({len(v.parts) for v in world.vehicles}) > 1  # offsets must account for differing part counts
    inputs = RandomInputs([v.chip_skills for v in world.vehicles], 11)
    rows = CarRows()
    for _ in range(90):
        world.step(inputs.next_frame())
    for slot, row in enumerate(rows.read(world)):
        assert row == tuple(world.car_state(slot).values())


def test_an_unknown_state_layout_is_refused():
    world = code_round(2)
    foreign = SimpleNamespace(vehicles=world.vehicles, save_state=lambda: b"O4WS\x01\x00" + world.save_state()[6:])
    with pytest.raises(StateLayoutError):
        CarRows().read(foreign)


def test_rows_skip_the_weather_s_patch_slots_on_a_rain_track():
    """track-03's rain keeps 50 patch slots between the world fields and the cars; one reader used on a
    normal world and then on a rain world with the same cars reads each right."""
    from sim_core import World
    from sim_core.assets.demo_round import builtin_demo_track

    rows = CarRows()
    calm = code_round(2)
    rain = World.new(builtin_demo_track("builtin:track-03"), calm.vehicles)
    assert rain.weather.slots == 50
    for world in (calm, rain, calm):
        world.step()
        assert rows.read(world) == [tuple(world.car_state(slot).values()) for slot in range(2)]
