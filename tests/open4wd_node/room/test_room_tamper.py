"""A party in the middle of a room link, on real TCP through the impairment proxy (autojump clock): it
can write frames of its own between the real ones, but without the link's keys none of them is a room
message. An injected ``cancel-ready`` or ``leave`` never reaches the host's room, a forged ``room-state``
or a changed frame never reaches the member's: the receiving end closes that one link as tampered
(logged, counted), and the other members' room goes on."""

from __future__ import annotations

from dataclasses import replace

import pytest
import trio

from open4wd_node.net.impair import Direction, ImpairmentProxy
from open4wd_node.net.link import LINK_COUNTERS
from open4wd_node.net.reach import with_listener
from open4wd_node.room import session as room_session
from open4wd_node.room.session import HostOptions, JoinOptions
from open4wd_node.runtime.addresses import Address, Advertise
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation
from protocol.room.messages import CancelReady, Leave, MemberWire, RoomState
from tests.open4wd_node.net.peers import plain_frame
from tests.open4wd_node.room.test_rooms_tcp import TIME_LIMIT_S, car, ctx_for
from tests.recorder import Recorder


def forged_state(host: str, member: str) -> RoomState:
    """A room-state in which the host is renamed and ``member`` is no longer Ready."""
    members = [MemberWire(peer, nickname, "participant", 1, ready, [], "") for peer, nickname, ready in
               ((host, "mallory", True), (member, "b", False))]
    return RoomState(roomId="r" * 16, hostPeerId=host, phase="open", matchConfig={}, configDigest="",
                     minPlayers=3, maxPlayers=8, maxSpectators=20, members=members, stateEpoch=10_000)


async def inject(proxy: ImpairmentProxy, direction: Direction, frame: bytes) -> None:
    assert await proxy.inject(direction, frame) == 1  # B's link: the only one through the proxy


async def change_next_frame(proxy: ImpairmentProxy, direction: Direction) -> None:
    proxy.flip_next_frame(direction)


ATTACKS = {  # what the proxy does to B's link, given the host's and B's PeerIds
    "cancel-ready to the host": lambda proxy, a, b: inject(proxy, Direction.UP, plain_frame(CancelReady("player"))),
    "leave to the host": lambda proxy, a, b: inject(proxy, Direction.UP, plain_frame(Leave("voluntary"))),
    "room-state to the member": lambda proxy, a, b: inject(proxy, Direction.DOWN, plain_frame(forged_state(a, b))),
    "a changed frame to the member": lambda proxy, a, b: change_next_frame(proxy, Direction.DOWN),
}


@pytest.mark.parametrize("attack", ATTACKS)
async def test_a_forged_room_message_closes_one_link_and_changes_nothing(tmp_path, fast_clock, attack):
    """A hosts for three players; B joins through the proxy, C straight to A. Once B and C are Ready (the
    countdown runs) the proxy forges a frame on B's link: that link ends as tampered, B is told why, its
    Ready is never withdrawn, and the countdown ends in the start for A and C, B a pre-start disconnect
    (spec/rooms.md §4.6)."""
    ids = [Identity(bytes([i + 1]) * 32) for i in range(3)]
    a, b, c = (i.peer_id for i in ids)
    recorders = [Recorder() for _ in ids]
    outcomes: dict[int, object] = {}
    proxy = ImpairmentProxy()
    listening: dict[str, Address] = {}
    tampered_before = LINK_COUNTERS.tampered

    def hosting(lis):
        listening["host"] = lis.address
        proxy.point_at(Address("127.0.0.1", lis.address.port))
        return room_session.host_room(ctx_for(tmp_path, "a"), ids[0], HostOptions(min_players=3, auto_ready=True), car,
                                      recorders[0], lis)

    async def host() -> None:
        assert proxy.address is not None
        outcomes[0] = await with_listener(ids[0], "127.0.0.1", 0, hosting, Advertise(proxy.address.host, proxy.address.port))

    async def join(i: int, through_proxy: bool) -> None:
        invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])  # the proxy's address
        if not through_proxy:
            invite = replace(invite, host=listening["host"].host, port=listening["host"].port)
        outcomes[i] = await with_listener(
            ids[i], "127.0.0.1", 0,
            lambda lis: room_session.join_room(ctx_for(tmp_path, f"m{i}"), ids[i], invite, JoinOptions(auto_ready=True),
                                               car, recorders[i], lis))

    def ready_at_host(peer: str) -> bool:
        return any(e["peer"] == peer and e["ready"] for e in recorders[0].of("ready"))

    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(proxy.run)
            nursery.start_soon(host)
            await recorders[0].created.wait()
            nursery.start_soon(join, 1, True)
            nursery.start_soon(join, 2, False)
            while not (ready_at_host(b) and ready_at_host(c)):
                await trio.sleep(0.05)
            await ATTACKS[attack](proxy, a, b)
            while not all(rec.of("match-start") for rec in (recorders[0], recorders[2])) or 1 not in outcomes:
                await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    assert LINK_COUNTERS.tampered == tampered_before + 1
    (lost,) = recorders[1].of("error")  # B's room ended, with a code that says why, not in a hang
    assert lost["code"] == "host-lost" and "link-tampered" in lost["message"]
    assert [e["ready"] for e in recorders[0].of("ready") if e["peer"] == b] == [True]  # never withdrawn
    assert not [e for e in recorders[1].events if e[1].get("nickname") == "mallory"]  # the forged state never applied
    (started,) = recorders[0].of("match-start")  # the room went on: the countdown ran out, B a pre-start disconnect
    assert recorders[2].of("match-start") == [started] and started["pre_start_disconnects"] == [b]
