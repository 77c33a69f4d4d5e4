"""Faults from outside the production types (``open4wd_node.faults``): the world adapter that corrupts after a
frame, the link wrappers that cut and freeze, the plan the command line gives, and their events. Whole-node
races under these faults: tests/open4wd_node/race (test_stalls.py, test_races.py)."""

from __future__ import annotations

import math

import pytest
import trio
import trio.testing

from open4wd_node.faults.links import LinkFaults
from open4wd_node.faults.plan import FaultKind, NodeFault, parse_fault
from open4wd_node.faults.race import RaceFaults
from open4wd_node.faults.world import FaultWorld
from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.net.stream_carrier import open_link
from open4wd_node.race.runner import RaceWiring
from open4wd_node.race.world import WorldAdapter
from open4wd_node.runtime.errors import UserError
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LISTENER
from protocol.race.mesh import MeshHello
from protocol.versions.collection import VersionRequest
from sim_core import World
from tests.recorder import Recorder

A, B, C = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32), Identity(bytes([3]) * 32)
NO_EVENTS: dict[int, list] = {}


# ---- the plan ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "fault"), [
    ("corrupt-state@120", NodeFault(FaultKind.CORRUPT_STATE, 120)),
    ("disconnect@60", NodeFault(FaultKind.DISCONNECT, 60, 5.0)),
    ("disconnect@60:12", NodeFault(FaultKind.DISCONNECT, 60, 12.0)),
    ("cut-link@300:7", NodeFault(FaultKind.CUT_LINK, 300, 7.0)),
])
def test_the_command_line_names_a_fault(text, fault):
    assert parse_fault(text) == fault


@pytest.mark.parametrize("text", ["corrupt-state@120:3", "stall@60:3", "disconnect@", "disconnect@12345678", "nothing"])
def test_anything_else_is_a_coded_error_naming_the_choices(text):
    with pytest.raises(UserError) as refused:
        parse_fault(text)
    assert refused.value.code == "fault-invalid" and "corrupt-state@FRAME, disconnect@FRAME" in refused.value.message
    assert "cut-link@FRAME" in refused.value.message


# ---- the world -----------------------------------------------------------------------------------------

def test_the_corruption_moves_the_own_car_every_time_its_frame_is_stepped_and_a_trigger_fires_once():
    fired: list[int] = []
    faulty = FaultWorld(World.demo(4, seed=2), 2, corrupt_at=30, on_frame={30: lambda: fired.append(30)})
    clean = WorldAdapter(World.demo(4, seed=2))
    for _ in range(30):
        faulty.step(NO_EVENTS)
        clean.step(NO_EVENTS)
    assert faulty.save_state() == clean.save_state() and fired == []
    before = faulty.save_own()
    faulty.step(NO_EVENTS)
    clean.step(NO_EVENTS)
    lat = [c["lat_um"] for c in (faulty.world.car_state(2), clean.world.car_state(2))]
    assert lat[0] == lat[1] + 1 and fired == [30]
    faulty.restore_own(before)  # a rollback re-simulates frame 30: corrupted again, the trigger does not fire again
    faulty.step(NO_EVENTS)
    assert faulty.world.car_state(2)["lat_um"] == lat[0] and fired == [30]
    assert faulty.frame == clean.frame == 31 and not faulty.done


def test_a_float_build_moves_car_zero_by_a_random_amount_after_its_frame():
    faulty = FaultWorld(World.demo(2, seed=2), 1, float_at=0)
    clean = WorldAdapter(World.demo(2, seed=2))
    faulty.step(NO_EVENTS)
    clean.step(NO_EVENTS)
    assert faulty.world.car_state(0)["lat_um"] > clean.world.car_state(0)["lat_um"]
    assert faulty.world.car_state(1) == clean.world.car_state(1)


# ---- the links -----------------------------------------------------------------------------------------

class Doorway:
    """What the node's listener does for its handlers: hands each link to the handler of its first message."""

    def __init__(self) -> None:
        self.handlers: dict = {}

    def add_handler(self, kind, handler) -> None:
        self.handlers[kind] = handler

    def remove_handler(self, kind) -> None:
        self.handlers.pop(kind, None)

    async def arrive(self, link: Link) -> None:
        first = await link.receive()
        await self.handlers[type(first)](link, first)


async def link_pair(theirs: LinkLimits = ROOM_LIMITS, peer: Identity = B) -> tuple[Link, Link]:
    """Our end (the room's limits) and theirs (``theirs``), ``peer``'s."""
    left, right = trio.testing.memory_stream_pair()
    links: dict[str, Link] = {}

    async def open_side(stream, identity, role, limits) -> None:
        links[role] = await open_link(stream, identity, role, limits=limits)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(open_side, left, A, DIALER, ROOM_LIMITS)
        nursery.start_soon(open_side, right, peer, LISTENER, theirs)
    return links[DIALER], links[LISTENER]


async def test_a_cut_closes_every_link_made_through_it_and_keeps_the_node_unreachable(autojump_clock):
    faults = LinkFaults()
    door = Doorway()
    accepted: list[Link] = []
    theirs: list[Link] = []

    async def handler(link: Link, first: MeshHello) -> None:
        accepted.append(link)
        await trio.sleep_forever()

    async def inner_dial(contact: str, peer: str, *, expensive=frozenset(), limits: LinkLimits = ROOM_LIMITS) -> Link:
        ours, other = await link_pair()
        theirs.append(other)
        return ours

    faults.doorway(door).add_handler(MeshHello, handler)
    dial = faults.dial(inner_dial)
    async with trio.open_nursery() as nursery:
        await nursery.start(faults.run)
        dialled = await dial("127.0.0.1:9", B.peer_id)
        theirs.append(arriving := (await link_pair()))
        await arriving[0].send(MeshHello("m" * 64))
        nursery.start_soon(door.arrive, arriving[1])
        await trio.testing.wait_all_tasks_blocked()
        assert accepted == [arriving[1]]
        faults.cut(5.0)
        await trio.testing.wait_all_tasks_blocked()
        assert dialled.closed.code == accepted[0].closed.code == "fault-disconnect"
        with pytest.raises(LinkClosed) as told:  # the peer is told why
            await theirs[0].receive()
        assert told.value.code == "fault-disconnect" and told.value.by_peer
        late = await link_pair()  # a link arriving while the node is unreachable is refused
        await late[0].send(MeshHello("m" * 64))
        await door.arrive(late[1])
        assert late[1].closed.code == "mesh-offline" and len(accepted) == 1
        start = trio.current_time()
        await dial("127.0.0.1:9", B.peer_id)  # a dial waits for the end of the cut
        assert trio.current_time() - start == pytest.approx(5.0)
        nursery.cancel_scope.cancel()


async def test_a_cut_of_one_link_drops_only_the_lowest_peer_s_and_keeps_that_peer_away(autojump_clock):
    faults = LinkFaults()
    door = Doorway()
    accepted: list[Link] = []

    async def handler(link: Link, first: MeshHello) -> None:
        accepted.append(link)
        await trio.sleep_forever()

    async def inner_dial(contact: str, peer: str, *, expensive=frozenset(), limits: LinkLimits = ROOM_LIMITS) -> Link:
        ours, _ = await link_pair(peer=B if peer == B.peer_id else C)
        return ours

    faults.doorway(door).add_handler(MeshHello, handler)
    dial = faults.dial(inner_dial)
    low, high = sorted([B, C], key=lambda i: i.peer_id)
    async with trio.open_nursery() as nursery:
        await nursery.start(faults.run)
        to_low, to_high = await dial("127.0.0.1:9", low.peer_id), await dial("127.0.0.1:9", high.peer_id)
        assert faults.cut_peer(5.0) == low.peer_id
        await trio.testing.wait_all_tasks_blocked()
        assert to_low.closed.code == "fault-disconnect" and to_high.closed is None  # the other link stays up
        for peer, refused in ((low, True), (high, False)):  # only the cut peer is kept away at the door
            ours, theirs = await link_pair(peer=peer)
            await theirs.send(MeshHello("m" * 64))
            nursery.start_soon(door.arrive, ours)
            await trio.testing.wait_all_tasks_blocked()
            assert (ours.closed is not None and ours.closed.code == "mesh-offline") is refused
        assert len(accepted) == 1
        start = trio.current_time()
        await dial("127.0.0.1:9", high.peer_id)  # the others are dialled at once
        assert trio.current_time() == start
        await dial("127.0.0.1:9", low.peer_id)  # the cut peer once the cut is over
        assert trio.current_time() - start == pytest.approx(5.0)
        nursery.cancel_scope.cancel()


async def test_a_frozen_link_neither_reads_nor_writes_until_the_freeze_ends_then_goes_on(autojump_clock):
    """What arrives during the freeze is read at its end, what is sent during it goes out at its end, and the
    link goes on. (A freeze longer than the peers' patience ends their links, as a stopped process's would.)"""
    faults = LinkFaults()
    ours, theirs = await link_pair()
    faults.adopt(ours)
    got: list[tuple[float, object]] = []
    sent_at: list[float] = []

    async def read() -> None:
        async for message in ours:
            got.append((trio.current_time(), message))

    async def write() -> None:
        await ours.send(VersionRequest(sender="from the frozen side"))
        sent_at.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.sleep(0.5)
        faults.freeze(2.0)
        await theirs.send(VersionRequest(sender="during"))
        nursery.start_soon(write)
        assert await theirs.receive() == VersionRequest(sender="from the frozen side")
        assert trio.current_time() == pytest.approx(2.5) and sent_at == [pytest.approx(2.5)]
        await trio.testing.wait_all_tasks_blocked()
        assert got == [(pytest.approx(2.5), VersionRequest(sender="during"))]
        await theirs.send(VersionRequest(sender="after"))
        await trio.testing.wait_all_tasks_blocked()
        assert got[-1] == (pytest.approx(2.5), VersionRequest(sender="after")) and ours.closed is None
        nursery.cancel_scope.cancel()


async def test_the_race_faults_fire_at_their_frame_in_the_first_round_and_say_so(autojump_clock):
    events = Recorder()
    faults = RaceFaults([NodeFault(FaultKind.PUMP_STALL, 3, 2.0), NodeFault(FaultKind.CORRUPT_STATE, 3)], events)
    wiring = faults.wire(RaceWiring(Doorway(), None))  # type: ignore[arg-type]
    assert wiring.paused_until is not None and wiring.paused_until() == -math.inf
    later = wiring.world(WorldAdapter(World.demo(2, seed=1)), 1, 0)
    first = wiring.world(WorldAdapter(World.demo(2, seed=1)), 0, 0)
    for _ in range(5):
        later.step(NO_EVENTS)
        first.step(NO_EVENTS)
    assert [(e["kind"], e["frame"]) for e in events.of("fault")] == [("pump-stall", 3), ("corrupt-state", 3)]
    assert wiring.paused_until() == pytest.approx(trio.current_time() + 2.0)
    assert faults.links.frozen_until == -math.inf  # only the pump stands still
    assert later.save_state() != first.save_state()  # the corruption is the first round's only
