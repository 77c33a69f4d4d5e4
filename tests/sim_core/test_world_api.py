"""``World.car_rows``: every car's values as ``save_state`` lays them out, named as ``World.car_state`` names
them, for cars of different sizes and on a track whose weather keeps slots between the world and the cars."""

from sim_core import World
from sim_core.assets.demo_round import builtin_demo_track
from sim_core.harness.scripted import RandomInputs
from sim_core.state.layout import ARC, CAR_HEADER, PART_STRIDE

from tests.sim_core.helpers import code_round


def test_rows_match_car_state_for_every_slot_while_racing():
    world = code_round(8, seed=3)
    assert len({len(v.parts) for v in world.vehicles}) > 1  # rows of differing part counts
    inputs = RandomInputs([v.chip_skills for v in world.vehicles], 11)
    for _ in range(90):
        world.step(inputs.next_frame())
    rows = world.car_rows()
    assert [row == tuple(world.car_state(slot).values()) for slot, row in enumerate(rows)] == [True] * 8
    assert [len(row) for row in rows] == [CAR_HEADER + PART_STRIDE * m.part_count for m in world.models]


def test_rows_are_the_saved_values_on_a_rain_track_and_copies():
    """track-03's rain keeps 50 patch slots between the world fields and the cars: the rows are still each
    car's values, the same the saved bytes hold; a row is a copy (changing the world later leaves it)."""
    calm = code_round(2)
    rain = World.new(builtin_demo_track("builtin:track-03"), calm.vehicles)
    assert rain.weather.slots == 50
    for world in (calm, rain):
        world.step()
        values = world.codec.values.unpack_from(world.save_state(), 40)
        rows = world.car_rows()
        assert [values[start:end] for start, end in world.codec.spans] == rows
        world.step({0: []})
        assert rows[0][ARC] != world.car_rows()[0][ARC]
