"""A member serves a GLB whose JSON holds ``1e999999999999`` (the number that once escaped the reader as
``decimal.Overflow``): the host fetches it during the room, refuses it with a code, stays up, and starts
the match with the members whose cars race (whole nodes over loopback TCP, autojump clock)."""

from __future__ import annotations

import json

import structlog
import trio

from open4wd_node.assets.cars import CarChoice
from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.room.session import HostOptions, JoinOptions
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation
from sim_core.assets.builtins import builtin_bytes
from sim_core.assets.container import read_container
from sim_core.assets.encoding import dumps
from tests.open4wd_node.room.test_rooms_tcp import TIME_LIMIT_S, car, ctx_for, host_room, join_room
from tests.recorder import Recorder
from tests.sim_core.assets.crafting import raw_glb

HOST, GOOD, HOSTILE = (Identity(bytes([i]) * 32) for i in (1, 2, 3))
HUGE = "1e999999999999"


def poisoned_body() -> bytes:
    """The built-in body with its first node moved to x = 1e999999999999 m (a real GLB otherwise)."""
    container = read_container(builtin_bytes("builtin:body-01"))
    doc = json.loads(container.json_text)
    doc["nodes"][0]["translation"] = ["HUGE", 0, 0]
    text = dumps(doc).replace('"HUGE"', HUGE, 1)
    return raw_glb(text.encode(), container.bin_chunk)


async def test_a_peer_serving_an_overflowing_number_is_refused_with_a_code(tmp_path, fast_clock, monkeypatch):
    hostile_ctx = ctx_for(tmp_path, "hostile")
    cid = AssetStore.in_data_dir(hostile_ctx.data_dir).put(poisoned_body())
    hostile_car = CarChoice((dict(car.cars[0], body=cid),), False, "hostile")
    hostile_store = AssetStore.in_data_dir(hostile_ctx.data_dir).root
    check_rotation = NodeRoomAssets.check_rotation

    def unchecked_by_the_hostile(self, peer, rotation):  # a modified node: serves its car and declares Ready
        if self.store.root != hostile_store:
            check_rotation(self, peer, rotation)

    monkeypatch.setattr(NodeRoomAssets, "check_rotation", unchecked_by_the_hostile)
    recorders = {name: Recorder() for name in ("host", "good", "hostile")}
    outcomes = {}
    with structlog.testing.capture_logs() as logs, trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            async def host():
                options = HostOptions(min_players=2, auto_ready=True)
                outcomes["host"] = await host_room(ctx_for(tmp_path, "h"), HOST, options, car, recorders["host"])

            async def member(name, identity, ctx, choice):
                invite = Invitation.parse(recorders["host"].of("room-created")[0]["invite"])
                outcomes[name] = await join_room(ctx, identity, invite, JoinOptions(auto_ready=True), choice, recorders[name])

            nursery.start_soon(host)
            await recorders["host"].created.wait()
            hostile_scope = trio.CancelScope()

            async def hostile():
                with hostile_scope:
                    await member("hostile", HOSTILE, hostile_ctx, hostile_car)

            nursery.start_soon(hostile)
            nursery.start_soon(member, "good", GOOD, ctx_for(tmp_path, "good"), car)
            while not refusals(recorders["good"]):
                await trio.sleep(0.1)
            hostile_scope.cancel()  # the hostile node goes away: the others start without it
            while "host" not in outcomes or "good" not in outcomes:
                await trio.sleep(0.1)
    for name in ("host", "good"):  # both fetched the asset and refused it with the reader's code
        assert recorders[name].of("asset-fetched")[0]["content_id"] == cid
        assert refusals(recorders[name])
    assert outcomes["host"].started and outcomes["good"].started
    assert outcomes["host"].started.locked.roster == sorted([HOST.peer_id, GOOD.peer_id])
    assert not [e for e in logs if e["log_level"] == "error"]  # refused by a code: nothing reached containment


def refusals(recorder: Recorder) -> list[dict]:
    return [e for e in recorder.of("error") if e["code"] == "non-finite-number" and "$.nodes.0.translation.0" in e["message"]]
