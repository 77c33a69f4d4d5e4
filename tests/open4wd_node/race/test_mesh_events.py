"""The race mesh hands what its links deliver to the race through a memory channel (``Mesh.events``), which
the frame pump drains once per tick (``MatchRunner._take_events``, ``receive_nowait``): the links' reader
tasks never wait for the race, and the race never reads a link. Each link's messages arrive in order, its
loss after its last message, its return as ``Back``. Over in-memory links on the autojump clock."""

from __future__ import annotations

import io

import trio
import trio.testing

from open4wd_base.errors import LocalError
from open4wd_node.drivers.idle import IdleDriver
from open4wd_node.net.link import Link
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.net.listener import NodeListener
from open4wd_node.net.stream_carrier import open_link
from open4wd_node.race.mesh import RACE_CONTROL_TYPES, RACE_LIMITS, Arrived, Back, Lost, Mesh
from open4wd_node.race.runner import MatchRunner, RaceOptions, RaceWiring
from open4wd_node.net.reach import contact_dialler
from open4wd_node.events.sink import EventSink
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LISTENER
from protocol.race.mesh import MeshHello, MeshReady
from protocol.race.messages import RACE_LINK
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.race.test_runner import _Locked

MATCH = "ab" * 32
ME, PEER = sorted((Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)), key=lambda i: i.peer_id)  # ME dials


class PeerEnds:
    """A ``Dialler`` whose every dial opens an in-memory link to the peer, whose ends it keeps."""

    def __init__(self) -> None:
        self.ends: list[Link] = []
        self.dialled = trio.Event()

    async def __call__(self, contact: str, peer: str, *, expensive=frozenset(), limits: LinkLimits = ROOM_LIMITS) -> Link:
        left, right = trio.testing.memory_stream_pair()
        links: dict[str, Link] = {}

        async def open_side(stream, identity, role) -> None:
            links[role] = await open_link(stream, identity, role, limits=RACE_LIMITS, expensive=RACE_CONTROL_TYPES)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(open_side, left, ME, DIALER)
            nursery.start_soon(open_side, right, PEER, LISTENER)
        theirs = links[LISTENER]
        theirs.repurpose(RACE_LINK, RACE_LIMITS, RACE_CONTROL_TYPES)
        self.ends.append(theirs)
        self.dialled.set()
        return links[DIALER]

    async def confirm(self) -> Link:
        """The peer's end of the newest link, once it confirmed the race link (as the peer's mesh does)."""
        await self.dialled.wait()
        self.dialled = trio.Event()
        end = self.ends[-1]
        assert await end.receive() == MeshHello(MATCH)
        await end.send(MeshHello(MATCH))
        return end


async def test_each_link_s_messages_reach_the_race_in_order_then_its_loss_then_its_return(autojump_clock):
    ends = PeerEnds()
    mesh = Mesh(ME, MATCH, {PEER.peer_id: "127.0.0.1:9"}, NodeListener(ME), ends)
    async with trio.open_nursery() as nursery:
        await nursery.start(mesh.run)
        theirs = await ends.confirm()
        for round_index in range(3):
            await theirs.send(MeshReady(round_index))
        await theirs.aclose("race-over", "bye")
        events = [await mesh.events.receive() for _ in range(4)]
        assert [e.message for e in events[:3] if isinstance(e, Arrived)] == [MeshReady(0), MeshReady(1), MeshReady(2)]
        assert events[3] == Lost(PEER.peer_id) and mesh.linked_peers == set()
        again = await ends.confirm()  # the mesh dials again
        assert await mesh.events.receive() == Back(PEER.peer_id) and mesh.linked_peers == {PEER.peer_id}
        await again.send(MeshReady(7))
        arrived = await mesh.events.receive()
        assert isinstance(arrived, Arrived) and arrived.message == MeshReady(7) and arrived.link is mesh.links[PEER.peer_id]
        nursery.cancel_scope.cancel()


def _runner(tmp_path) -> MatchRunner:
    listener = NodeListener(ME, reachability="direct")
    wiring = RaceWiring(listener, contact_dialler(listener))
    return MatchRunner(ME, EventSink(as_json=True, stream=io.StringIO()), _Locked(MATCH, [ME.peer_id, PEER.peer_id]),  # type: ignore[arg-type]
                       {ME.peer_id: "127.0.0.1:9", PEER.peer_id: "127.0.0.1:9"}, wiring, None, IdleDriver(),  # type: ignore[arg-type]
                       RaceOptions(), tmp_path)


async def test_the_pump_takes_every_event_waiting_before_its_tick_without_waiting(tmp_path, autojump_clock):
    runner = _runner(tmp_path)
    for round_index in range(5):
        await runner.mesh._hand(Arrived(PEER.peer_id, None, MeshReady(round_index)))  # type: ignore[arg-type]
    start = trio.current_time()
    runner._take_events()  # what the pump's before_tick does: synchronous, every waiting event, in order
    assert sorted(runner.ready) == [0, 1, 2, 3, 4] and all(runner.ready[r] == {PEER.peer_id} for r in range(5))
    runner._take_events()  # nothing more: returns at once
    assert trio.current_time() == start
    await runner.mesh._hand(Lost(PEER.peer_id))
    runner._take_events()  # a loss before any round: nobody to tell, nothing handled twice
    assert sorted(runner.ready) == [0, 1, 2, 3, 4]


class _Closing:
    """A link's part the runner uses when a message's handling fails: its close."""

    def __init__(self) -> None:
        self.closed: list[tuple[str, str]] = []

    async def aclose(self, code: str, text: str) -> None:
        self.closed.append((code, text))


class _Broken:
    """A session with a bug: handling any message raises ``LocalError``."""

    def receive(self, peer: str, message: object, now_ms: int) -> list:
        raise LocalError("race-bug", "a bug of this node, whatever the peer sent")


async def test_a_bug_while_handling_a_message_closes_that_peer_s_link_as_an_internal_error(tmp_path, autojump_clock):
    runner = _runner(tmp_path)
    runner._session = _Broken()  # type: ignore[assignment]
    link = _Closing()
    async with trio.open_nursery() as nursery:
        runner._nursery = nursery
        await runner.mesh._hand(Arrived(PEER.peer_id, link, MeshReady(0)))  # type: ignore[arg-type]
        await runner.mesh._hand(Arrived(PEER.peer_id, link, VersionRequest(sender="x")))  # type: ignore[arg-type]
        await runner.mesh._hand(Arrived(PEER.peer_id, link, MeshReady(1)))  # type: ignore[arg-type]
        runner._take_events()  # the failure does not stop the others
    assert [code for code, _ in link.closed] == ["internal-error"]
    assert sorted(runner.ready) == [0, 1]
