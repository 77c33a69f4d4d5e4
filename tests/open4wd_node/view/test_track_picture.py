"""The track from above and the cars on it: the plan of a real route, the braille map drawn through rich's
recording console (where each car's marker lands, in which colour), the live view with the map beside
its table, the demo's picture from a node's ``cars`` events, and those events themselves."""

from __future__ import annotations

import io
import json
import math
import re

import trio
from rich.console import Console

from open4wd_node.race.pump import FramePump
from open4wd_node.view.cars_feed import CarsFeed, cars_event
from open4wd_node.view.live_console import Screen
from open4wd_node.view.race_picture import CarMark, RacePicture, car_colour, car_places, standing_ranks, world_map
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.events.vocabulary import LogOpened
from open4wd_node.view.track_map import track_map
from open4wd_node.view.track_picture import BRAILLE_BASE, TrackPicture, _track_rows
from sim_core import World
from tests.open4wd_node.view.test_live_view import raced_round, short

FRAMES_APART = 900  # the demo's cars, bots aside, spread out along the track by then


def spread_world(cars: int = 4) -> World:
    world = World.demo(cars, seed=1)
    for _ in range(FRAMES_APART):
        world.step({})
    return world


def recorded(renderable, width: int = 140) -> Console:
    console = Console(record=True, width=width, color_system="truecolor", file=io.StringIO())
    console.print(renderable)
    return console


def test_the_plan_is_the_route_seen_from_above_and_a_car_sits_where_its_route_frame_says():
    world = World.demo(2)
    route, plan = world.route, world_map(world)
    assert world.track.gravity_dir_e6 == (0, -1_000_000, 0)  # so "above" is +y, the plan is x and z
    assert plan.centre[0] == (route.px[0] / 1e6, route.pz[0] / 1e6)
    assert plan.loop and math.isclose(plan.length_m, route.length_um / 1e6)
    assert plan.width_m == 2.0  # track-02's ribbon
    for i, (centre, left, right) in enumerate(zip(plan.centre, plan.left, plan.right, strict=True)):
        if i % 50 == 0:  # each edge half the width from the centreline
            assert math.isclose(math.dist(centre, left), 1.0, abs_tol=1e-3)
            assert math.isclose(math.dist(centre, right), 1.0, abs_tol=1e-3)
    b = plan.bounds
    assert all(b.left <= x <= b.right and b.top <= y <= b.bottom for x, y in plan.left + plan.right)
    arc = route.length_um // 3
    on_centre, one_right = plan.place(arc, 0, 0), plan.place(arc, 1_000_000, 0)
    assert math.isclose(math.dist(on_centre, one_right), 1.0, abs_tol=1e-3)  # a metre right of the line
    assert plan.place(arc, 0, 500_000) == on_centre  # height does not move a car seen from above (flat track)
    assert track_map(route, world.track.gravity_dir_e6) is plan  # once per route


def test_a_track_longer_north_to_south_is_turned_a_quarter_to_fill_a_wide_screen():
    from sim_core.specs.route import route_for
    from sim_core.specs.track import RoutePoint, TrackSpec

    ahead, up = (0, 0, 1_000_000), (0, 1_000_000, 0)
    straight = TrackSpec("straight", "open", route=(RoutePoint((0, 0, 0), ahead, up, 2_000_000),
                                                    RoutePoint((0, 0, 20_000_000), ahead, up, 2_000_000)),
                         surface_material="asphalt", lap_mode="linear")
    plan = track_map(route_for(straight), straight.gravity_dir_e6)
    assert not plan.loop and plan.bounds.width > plan.bounds.height
    assert plan.centre[0] == (0.0, 0.0) and plan.centre[-1] == (20.0, 0.0)  # along z, now across the screen
    assert math.isclose(math.dist(plan.place(5_000_000, 0, 0), plan.place(5_000_000, 1_000_000, 0)), 1.0)


def test_looking_down_another_gravity_keeps_screen_right_and_down_across_it():
    from open4wd_node.view.track_map import _ground_axes

    for gravity in ((0, -1_000_000, 0), (0, 0, -1_000_000), (1_000_000, 0, 0), (0, 600_000, -800_000)):
        right, down = _ground_axes(gravity)
        g = [c / 1e6 for c in gravity]
        cross = (right[1] * down[2] - right[2] * down[1], right[2] * down[0] - right[0] * down[2],
                 right[0] * down[1] - right[1] * down[0])
        assert all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(cross, g, strict=True))  # the viewer looks along g


def test_each_marker_lands_on_its_cars_cell_in_its_colour_and_the_legend_names_every_car():
    world = World.demo(4)
    plan = world_map(world)
    marks = []
    for slot in range(4):  # a quarter of a lap apart
        x, y = plan.place(world.route.length_um * slot // 4, (slot - 2) * 200_000, 0)
        marks.append(CarMark(slot, f"car-{slot}", x, y, slot + 1, 0, me=slot == 2))
    picture = RacePicture(plan, 0, world.frame, tuple(marks))
    cols = 120
    console = recorded(TrackPicture(picture, max_cols=cols), width=cols)
    lines = console.export_text(styles=False, clear=False).splitlines()
    grid, track_rows = _track_rows(plan, cols, 14)
    assert len(lines) == grid.rows + 1  # the map, then one legend line
    assert any(chr(BRAILLE_BASE) < ch <= chr(BRAILLE_BASE + 0xFF) for ch in "".join(lines))
    cells = {}
    for mark in marks:
        x, y = grid.dot((mark.x, mark.y))
        cells.setdefault((y // 4, x // 2), []).append(mark)
    assert len(cells) == len(marks), "the test wants every car in a cell of its own"
    for (row, col), (mark,) in cells.items():
        assert lines[row][col] == str(mark.slot + 1)
    assert lines[-1].split() == ["1", "car-0", "2", "car-1", "3", "car-2", "4", "car-3"]
    html = console.export_html(inline_styles=True)
    for mark in marks:  # each marker in bold in the car's colour (this node's as its background), its legend too
        colour = f"background-color: {car_colour(mark.slot)}" if mark.me else f"color: {car_colour(mark.slot)}"
        assert re.search(rf'<span style="[^"]*{colour}[^"]*font-weight: bold">{mark.slot + 1}</span>', html)
        assert re.search(rf'<span style="color: {car_colour(mark.slot)}[^"]*">{mark.slot + 1} car-{mark.slot}</span>', html)


def test_a_car_in_the_lead_is_drawn_on_top_of_one_in_its_cell():
    plan = world_map(World.demo(2))
    x, y = plan.centre[0]
    picture = RacePicture(plan, 0, 0, (CarMark(0, "a", x, y, 2, 0), CarMark(1, "b", x, y, 1, 0)))
    *map_lines, legend = recorded(TrackPicture(picture)).export_text(styles=False).splitlines()
    assert "2" in "".join(map_lines) and "1" not in "".join(map_lines)  # the leader (slot 1, marker 2) hides it
    assert legend.split() == ["1", "a", "2", "b"]


def test_the_live_view_shows_the_track_beside_the_table_with_every_car():
    ids, world, setup, session, console = raced_round()
    for _ in range(FRAMES_APART):
        world.step({})
    text = recorded(console.renderable(), width=150).export_text(styles=False)
    table_rows = [line for line in text.splitlines() if line.startswith("│")]
    assert len(table_rows) == 4
    assert all(any(chr(BRAILLE_BASE) < ch for ch in line) for line in table_rows[:2])  # the map beside the rows
    legend = next(line for line in text.splitlines() if "(you)" in line and "│" not in line)
    for peer, slot in setup.slots.items():
        assert f"{slot + 1} {short(peer)}" in legend
    race = console.board.race()
    assert race is not None and race.picture is not None
    assert {c.slot for c in race.picture.cars} == set(setup.slots.values())
    me = next(c for c in race.picture.cars if c.me)
    assert me.slot == setup.slots[ids[0].peer_id]
    ranks = standing_ranks(world)
    assert all(c.rank == ranks[c.slot] for c in race.picture.cars)


def test_a_narrow_terminal_shows_the_track_under_the_table_and_off_a_terminal_nothing_changes():
    _, _, _, _, console = raced_round()
    narrow = recorded(console.renderable(), width=80).export_text(styles=False).splitlines()
    last_table_row = max(i for i, line in enumerate(narrow) if line.startswith("└"))
    assert not any(chr(BRAILLE_BASE) < ch for line in narrow[:last_table_row] for ch in line)
    assert any(chr(BRAILLE_BASE) < ch for line in narrow[last_table_row:] for ch in line)
    plain = "\n".join(console.plain())
    assert not any(chr(BRAILLE_BASE) <= ch <= chr(BRAILLE_BASE + 0xFF) for ch in plain) and "\x1b" not in plain


def cars_events_of(world: World, slots: dict[str, int]) -> dict:
    watch = RoundWatch(0, 1, slots, world, None, FramePump(lambda: False, lambda: 0), 0)  # type: ignore[arg-type]
    return {"event": "cars", **cars_event(watch).data()}


def test_the_demo_draws_its_nodes_cars_from_the_picture_nodes_events():
    from open4wd_node.demo.view import DemoBoard

    world = spread_world(3)
    peers = {f"z6Mk{'abc'[i] * 44}": i for i in range(3)}
    board = DemoBoard(3, Screen(io.StringIO(), interactive=True, width=150), world_map(world), picture_node=1)
    for i, peer in enumerate(peers):
        board(0, {"event": "member-joined", "peer": peer, "nickname": f"node{i}"})
    board(0, cars_events_of(World.demo(3), peers))  # another node's view: not drawn
    assert board.picture() is None
    event = cars_events_of(world, peers)
    board(1, json.loads(json.dumps(event)))  # as it arrives: a JSON line of the node
    picture = board.picture()
    assert picture is not None and picture.frame == world.frame
    plan = world_map(world)
    for mark, place in zip(picture.cars, car_places(world), strict=True):
        assert (mark.x, mark.y) == plan.place(place.arc_um, place.lat_um, place.h_um)
    text = recorded(board.renderable(), width=150).export_text(styles=False)
    assert "demo nodes" in text and "1 node0  2 node1  3 node2" in text
    assert any(chr(BRAILLE_BASE) < ch for ch in text)
    state = board.live_state()
    assert state is not None and state.header.endswith("(as node1 sees it)")
    assert board.plain()[0] == "── demo nodes"  # off a terminal: the table only, as before


async def test_the_cars_feed_prints_every_cars_place_four_times_a_second_while_the_frame_moves(autojump_clock):
    world = World.demo(2, seed=4)
    out = io.StringIO()
    feed = CarsFeed(out)
    slots = {"z6Mkpeer-a": 0, "z6Mkpeer-b": 1}
    async with feed.showing():
        feed.emit(LogOpened(path="x"))
        await trio.sleep(1)  # no round yet: no cars
        feed.watch_round(RoundWatch(0, 1, slots, world, None, FramePump(lambda: False, lambda: 0), 0))  # type: ignore[arg-type]
        for _ in range(8):
            world.step({})
            await trio.sleep(0.3)  # longer than the feed's 0.25 s: each frame is sent, once
        await trio.sleep(1)  # the frame stands still: nothing more
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert events[0]["event"] == "log"
    cars = [e for e in events if e["event"] == "cars"]
    assert [e["frame"] for e in cars] == list(range(1, 9))
    last = cars[-1]
    assert last["frame"] == world.frame and [c["slot"] for c in last["cars"]] == [0, 1]
    assert [c["peer"] for c in last["cars"]] == ["z6Mkpeer-a", "z6Mkpeer-b"]
    assert [(c["arc_um"], c["lat_um"], c["h_um"]) for c in last["cars"]] == \
        [(p.arc_um, p.lat_um, p.h_um) for p in car_places(world)]
