"""``World.cars`` / ``World.car``: every car as a typed, read-only ``CarView`` of the values ``save_state``
holds for it, named as ``World.car_state`` names them, for cars of different sizes and on a track whose
weather keeps slots between the world and the cars."""

import dataclasses

import pytest

from open4wd_base.errors import LocalError
from sim_core import CarView, World
from sim_core.assets.demo_round import builtin_demo_track
from sim_core.harness.scripted import RandomInputs
from sim_core.state.layout import CAR_HEADER, FINISHED_FRAME, PART_STRIDE, RETIRED_FRAME, STATUS, STATUS_FINISHED

from tests.sim_core.helpers import code_round


def _named(view: CarView) -> dict[str, int | bool | None]:
    """A view's values by the names ``World.car_state`` uses (None for the frames ``car_state`` saves as -1)."""
    return {"arc_um": view.arc_um, "lat_um": view.lat_um, "h_um": view.h_um, "vs_um_s": view.vs_um_s,
            "vlat_um_s": view.vlat_um_s, "vh_um_s": view.vh_um_s, "remaining_q": view.energy_q, "laps": view.laps,
            "next_checkpoint": view.next_checkpoint, "progress_um": view.progress_um,
            "penalty_timer": view.penalty_frames, "broken_mask": view.broken_mask, "destructions": view.destructions}


def test_views_match_car_state_for_every_slot_while_racing():
    world = code_round(8, seed=3)
    assert len({len(v.parts) for v in world.vehicles}) > 1  # cars of differing part counts
    inputs = RandomInputs([v.chip_skills for v in world.vehicles], 11)
    for _ in range(90):
        world.step(inputs.next_frame())
    views = world.cars()
    assert [v.slot for v in views] == list(range(8)) and views == tuple(world.car(s) for s in range(8))
    for slot, view in enumerate(views):
        named = world.car_state(slot)
        assert _named(view) == {k: named[k] for k in _named(view)}
        assert view.racing == (named["status"] == 0) and not view.finished and not view.retired
        assert view.finished_frame is None and view.retired_frame is None
        assert view.part_count == world.models[slot].part_count
        assert [view.part_temp_mc(p) for p in range(view.part_count)] == [
            named[f"part[{p}].temp_mc"] for p in range(view.part_count)]
        assert len(view.values) == CAR_HEADER + PART_STRIDE * view.part_count


def test_views_are_the_saved_values_on_a_rain_track_and_snapshots():
    """track-03's rain keeps 50 patch slots between the world fields and the cars: the views still hold each
    car's values, the same the saved bytes hold; a view is a snapshot (changing the world later leaves it)."""
    calm = code_round(2)
    rain = World.new(builtin_demo_track("builtin:track-03"), calm.vehicles)
    assert rain.weather.slots == 50
    for world in (calm, rain):
        world.step()
        values = world.codec.values.unpack_from(world.save_state(), 40)
        views = world.cars()
        assert [values[start:end] for start, end in world.codec.spans] == [v.values for v in views]
        world.step({0: []})
        assert views[0].arc_um != world.car(0).arc_um


def test_a_view_is_read_only_and_refuses_what_the_car_does_not_have():
    world = code_round(2)
    view = world.car(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.slot = 0  # type: ignore[misc]
    for part in (-1, view.part_count):
        with pytest.raises(LocalError) as refused:
            view.part_temp_mc(part)
        assert refused.value.code == "car-view-no-such-part"
    for slot in (-1, 2, "0"):
        with pytest.raises(LocalError) as refused:
            world.car(slot)  # type: ignore[arg-type]
        assert refused.value.code == "world-unknown-slot"


def test_frames_of_a_finish_and_a_break_read_as_frames_and_none_before():
    world = code_round(2)
    car = list(world.car(0).values)
    car[FINISHED_FRAME], car[RETIRED_FRAME] = 600, 700  # a chassis that broke after the finish
    car[STATUS] = STATUS_FINISHED
    view = CarView(0, tuple(car))
    assert view.finished and not view.racing and not view.retired
    assert (view.finished_frame, view.retired_frame) == (600, 700)
    assert world.car(0).finished_frame is None and world.car(0).part_break_frame(0) is None
