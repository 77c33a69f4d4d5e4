"""What a picture of a race shows at one moment: the track's plan and each car as a labelled mark on it.

The terminal's map (``track_picture``), the live page (``live_web``) and the replay page
(``replay_page``) all draw a ``RacePicture``; the cars' places come from the simulation's real state
(``car_places``: the one function that reads it), read between two frames by whoever draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from open4wd_node.view.track_map import TrackMap, track_map
from sim_core.specs.route import route_for

if TYPE_CHECKING:
    from sim_core.specs.track import TrackSpec
    from sim_core.state.car_view import CarView
    from sim_core.world import World

CAR_COLOURS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324")
"""One colour per start slot (a track has at most 8), the same in the terminal and on the pages."""


def car_colour(slot: int) -> str:
    """The colour of the car in ``slot``."""
    return CAR_COLOURS[slot % len(CAR_COLOURS)]


def marker_text(slot: int) -> str:
    """The character that marks the car in ``slot`` on a map: its start slot counted from 1."""
    return str(slot + 1)


def car_places(world: World) -> Sequence[CarView]:
    """Every car in slot order as the world's state has it after its last step (``sim_core``'s typed car
    view: ``slot``, ``arc_um``, ``lat_um``, ``h_um``, ``laps``, …): the one reader of the state for every
    picture."""
    return world.cars()


@dataclass(frozen=True)
class CarMark:
    """One car on a map: its slot, the label shown beside its marker, its plan position (metres), its
    rank in the race and its laps done; ``me`` marks this node's own car."""

    slot: int
    label: str
    x: float
    y: float
    rank: int
    laps: int
    me: bool = False


@dataclass(frozen=True)
class RacePicture:
    """A round at one frame: the track's plan and the cars on it (in slot order)."""

    track: TrackMap
    round_index: int
    frame: int
    cars: tuple[CarMark, ...]


def world_map(world: World) -> TrackMap:
    """The plan of the world's track (made once per track)."""
    return track_map(world.route, world.track.gravity_dir_e6)


def spec_map(track: TrackSpec) -> TrackMap:
    """The plan of a track without a world (the demo draws its nodes' race on it)."""
    return track_map(route_for(track), track.gravity_dir_e6)


def world_picture(world: World, round_index: int, labels: Mapping[int, str], ranks: Mapping[int, int],
                  me: int | None = None) -> RacePicture:
    """The round now: each car at its place, labelled ``labels[slot]`` and ranked ``ranks[slot]`` (slots
    missing from either get their slot number); ``me`` is this node's slot, if it races."""
    plan = world_map(world)
    marks = []
    for place in car_places(world):
        x, y = plan.place(place.arc_um, place.lat_um, place.h_um)
        marks.append(CarMark(place.slot, labels.get(place.slot, marker_text(place.slot)), x, y,
                             ranks.get(place.slot, place.slot + 1), place.laps, place.slot == me))
    return RacePicture(plan, round_index, world.frame, tuple(marks))


def standing_ranks(world: World) -> dict[int, int]:
    """Each slot's rank in the round now (the simulation's own ranking)."""
    return {row["slot"]: row["rank"] for row in world.standings()}
