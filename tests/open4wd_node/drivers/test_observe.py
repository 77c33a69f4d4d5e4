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
