"""A bug triggered by one member's messages ends that member's link with ``internal-error``; the room
goes on and starts its match with the others (whole nodes over loopback TCP, autojump clock)."""

from __future__ import annotations

import structlog
import trio

from open4wd_node.net.containment import INTERNAL_ERROR
from open4wd_node.net.link import LINK_COUNTERS
from protocol.identity.keys import Identity
from protocol.room.host import HostRoom
from protocol.room.invitation import Invitation
from open4wd_node.room.session import HostOptions, JoinOptions
from tests.open4wd_node.room.test_rooms_tcp import TIME_LIMIT_S, car, ctx_for, host_room, join_room
from tests.recorder import Recorder

HOST, GOOD, VICTIM = (Identity(bytes([i]) * 32) for i in (1, 2, 3))


async def test_a_raising_host_handler_closes_one_members_link_and_the_room_starts(tmp_path, fast_clock, monkeypatch):
    receive = HostRoom.receive

    def buggy(self, peer, message, now_ms):  # a host bug that only this member's messages reach
        if self.identity.peer_id == HOST.peer_id and peer == VICTIM.peer_id:
            raise ZeroDivisionError(f"injected while handling {message.TYPE}")
        return receive(self, peer, message, now_ms)

    monkeypatch.setattr(HostRoom, "receive", buggy)
    recorders = {name: Recorder() for name in ("host", "good", "victim")}
    outcomes = {}
    closes_before = LINK_COUNTERS.closes[INTERNAL_ERROR]
    with structlog.testing.capture_logs() as logs, trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            async def host():
                options = HostOptions(min_players=2, auto_ready=True)
                outcomes["host"] = await host_room(ctx_for(tmp_path, "h"), HOST, options, car, recorders["host"])

            async def member(name, identity):
                invite = Invitation.parse(recorders["host"].of("room-created")[0]["invite"])
                outcomes[name] = await join_room(ctx_for(tmp_path, name), identity, invite, JoinOptions(auto_ready=True),
                                                 car, recorders[name])

            nursery.start_soon(host)
            await recorders["host"].created.wait()
            nursery.start_soon(member, "victim", VICTIM)  # its link ends at its first message after the join
            while LINK_COUNTERS.closes[INTERNAL_ERROR] == closes_before:
                await trio.sleep(0.1)
            await member("good", GOOD)
            while "host" not in outcomes:
                await trio.sleep(0.1)
            nursery.cancel_scope.cancel()  # the victim, left alone, may wait on in a room of its own
    assert outcomes["host"].started and outcomes["good"].started
    assert outcomes["host"].started.locked.roster == sorted([HOST.peer_id, GOOD.peer_id])
    assert "victim" not in outcomes or not outcomes["victim"].started
    assert LINK_COUNTERS.closes[INTERNAL_ERROR] == closes_before + 1
    errors = [e for e in logs if e["log_level"] == "error"]
    assert errors and {e["event"] for e in errors} == {INTERNAL_ERROR} and {e["peer"] for e in errors} == {VICTIM.peer_id}
    assert isinstance(errors[0]["exc_info"], ZeroDivisionError)


async def test_a_bug_in_relayed_asset_work_is_an_error_event_and_the_room_stays_up(tmp_path, fast_clock, monkeypatch):
    """Work done for a peer through the host's relay (here the admission of a fetched asset) has no link
    of its own: a bug there is an ``internal-error`` event, and the room goes on."""
    from open4wd_node.assets.cars import CarChoice
    from open4wd_node.assets.room_assets import NodeRoomAssets
    from open4wd_node.assets.store import AssetStore
    from sim_core.assets.builtins import builtin_bytes, is_builtin_ref

    owner_ctx = ctx_for(tmp_path, "owner")
    cid = AssetStore.in_data_dir(owner_ctx.data_dir).put(builtin_bytes("builtin:body-01"))
    prepare = NodeRoomAssets.prepare

    def buggy(self, refs):
        refs = list(refs)
        if self.store.root != AssetStore.in_data_dir(owner_ctx.data_dir).root and not all(map(is_builtin_ref, refs)):
            raise MemoryError("injected while admitting a fetched asset")
        prepare(self, refs)

    monkeypatch.setattr(NodeRoomAssets, "prepare", buggy)
    recorders = {name: Recorder() for name in ("host", "owner")}
    with structlog.testing.capture_logs() as logs, trio.move_on_after(TIME_LIMIT_S) as deadline:
        async with trio.open_nursery() as nursery:
            async def host():
                options = HostOptions(min_players=2, auto_ready=True)
                await host_room(ctx_for(tmp_path, "h"), HOST, options, car, recorders["host"])

            nursery.start_soon(host)
            await recorders["host"].created.wait()
            invite = Invitation.parse(recorders["host"].of("room-created")[0]["invite"])
            choice = CarChoice((dict(car.cars[0], body=cid),), False, "custom")
            nursery.start_soon(join_room, owner_ctx, GOOD, invite, JoinOptions(auto_ready=True), choice, recorders["owner"])
            while not [e for e in recorders["host"].of("error") if e["code"] == INTERNAL_ERROR]:
                await trio.sleep(0.1)
            await trio.sleep(5)  # the room goes on: both nodes are still in it
            nursery.cancel_scope.cancel()
    assert not deadline.cancelled_caught
    assert recorders["host"].of("asset-fetched") and not recorders["host"].of("match-start")
    assert not [e for e in recorders["owner"].of("error") if e["code"] in ("host-lost", INTERNAL_ERROR)]
    errors = [e for e in logs if e["log_level"] == "error"]
    assert [(e["event"], e["peer"]) for e in errors] == [(INTERNAL_ERROR, GOOD.peer_id)]
    assert isinstance(errors[0]["exc_info"], MemoryError)
