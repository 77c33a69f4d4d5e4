"""Rooms over real TCP on 127.0.0.1: whole nodes (host_room / join_room) in one trio run.

Time runs on an autojump MockClock: it jumps to the next deadline only when every task waits, so the
5 s countdown costs nothing and CPU work (admission, signatures) takes no virtual time at all: a slow
or busy machine changes how long the test takes, never what it sees.
"""

from __future__ import annotations

import socket
from dataclasses import replace

import pytest
import trio

from open4wd_node.assets.cars import CarChoice
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.errors import UserError, first_coded
from tests.recorder import Recorder
from open4wd_node.room import session as room_session
from open4wd_node.net.reach import with_listener
from open4wd_node.room.session import HostOptions, JoinOptions
from open4wd_node.net.transport import dial
from open4wd_node.runtime.build_info import own_version_info
from open4wd_node.runtime.clock import NodeClock
from protocol.encoding.wire import decode_message, encode_message
from protocol.identity.keys import Identity
from protocol.room import member as member_module
from protocol.room.invitation import Invitation, parse_secret, role_proof
from protocol.room.messages import (
    EXPENSIVE_TYPES,
    RELAY_TO_ALL,
    CancelReady,
    JoinRequest,
    Leave,
    ReadyDeclarationMsg,
    ReadyRefusal,
    Relay,
    RoomState,
)
from protocol.room.ready import build_declaration
from protocol.versions.collection import VERSION_COLLECT_TIMEOUT_MS, VersionInfoMessage, VersionRequest

TIME_LIMIT_S = 60


def ctx_for(tmp_path, name: str, **config) -> NodeContext:
    return NodeContext(tmp_path / name, replace(DEFAULTS, **config))


car = CarChoice.parse("speed")


async def host_room(ctx, identity, options, choose, events):
    return await with_listener(identity, "127.0.0.1", 0,
                               lambda lis: room_session.host_room(ctx, identity, options, choose, events, lis))


async def join_room(ctx, identity, invite, options, choose, events):
    return await with_listener(identity, "127.0.0.1", 0,
                               lambda lis: room_session.join_room(ctx, identity, invite, options, choose, events, lis))


class TimedRecorder(Recorder):
    """Also keeps the (virtual) trio time of each event."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[tuple[float, str]] = []

    def emit(self, event) -> None:
        self.times.append((trio.current_time(), event.EVENT))
        super().emit(event)

    def first(self, name: str) -> float:
        return next(t for t, e in self.times if e == name)


async def run_room(tmp_path, n: int, *, host_config=None, member_configs=None, min_players=None, deadline=TIME_LIMIT_S,
                   host_options=None, recorder=Recorder):
    """Host + n-1 auto-ready members; returns (host recorder, member recorders, outcomes)."""
    recorders = [recorder() for _ in range(n)]
    outcomes: dict[int, object] = {}
    options = host_options or HostOptions(min_players=min_players or n, auto_ready=True)
    with trio.move_on_after(deadline):
        async with trio.open_nursery() as nursery:
            async def host():
                ctx = ctx_for(tmp_path, "host", **(host_config or {}))
                outcomes[0] = await host_room(ctx, Identity(bytes([1]) * 32), options, car, recorders[0])

            async def member(i: int):
                await recorders[0].created.wait()
                invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])
                ctx = ctx_for(tmp_path, f"m{i}", **((member_configs or {}).get(i, {})))
                outcomes[i] = await join_room(ctx, Identity(bytes([i + 1]) * 32), invite,
                                              JoinOptions(auto_ready=True), car, recorders[i])

            nursery.start_soon(host)
            for i in range(1, n):
                nursery.start_soon(member, i)
    return recorders, outcomes


@pytest.mark.parametrize("n", [2, 4, 8])
async def test_nodes_reach_the_same_match(tmp_path, fast_clock, n):
    recorders, outcomes = await run_room(tmp_path, n)
    assert len(outcomes) == n and all(o.started is not None for o in outcomes.values())
    match_ids = {o.started.locked.match_id for o in outcomes.values()}
    digests = {o.started.locked.digest for o in outcomes.values()}
    assert len(match_ids) == 1 and len(digests) == 1
    for rec in recorders:
        starts = rec.of("match-start")
        assert starts and starts[0]["match_id"] in match_ids and len(starts[0]["roster"]) == n
        assert all(line["compatible"] for line in rec.of("compatibility"))
        assert len({line["peer"] for line in rec.of("compatibility")}) == n - 1


async def test_eight_nodes_reach_the_ready_set_without_waiting_on_a_timer(tmp_path, fast_clock):
    """On an autojump clock virtual time moves only when every task waits for a deadline, so the
    virtual time from join to ready-set counts timers that fired, never CPU work: a dropped message
    would show up as VERSION_COLLECT_TIMEOUT_MS here (it did: 3 s)."""
    recorders, outcomes = await run_room(tmp_path, 8, recorder=TimedRecorder)
    assert len(outcomes) == 8 and all(o.started is not None for o in outcomes.values())
    host = recorders[0]
    ready_set = host.first("ready-set")
    well_below = VERSION_COLLECT_TIMEOUT_MS / 1000 / 10
    assert ready_set - host.first("ready") < well_below
    assert ready_set - host.first("member-joined") < well_below
    assert host.first("countdown") - ready_set < well_below  # acks and both grid phases: no PHASE_TIMEOUT_MS


async def test_a_newcomer_hears_of_every_member_before_their_messages(tmp_path, fast_clock):
    """The host's own seat was once routed depth-first: its version request reached a newcomer before
    the room-state that lists the host, and the newcomer dropped it. A raw joiner checks the order."""
    host_rec = Recorder()
    joiner = Identity(bytes([2]) * 32)
    relays: list[Relay] = []
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            options = HostOptions(min_players=3, auto_ready=True)
            nursery.start_soon(host_room, ctx_for(tmp_path, "host"), Identity(bytes([1]) * 32), options, car, host_rec)
            await host_rec.created.wait()
            invite = Invitation.parse(host_rec.of("room-created")[0]["invite"])
            link = await dial(invite.host, invite.port, joiner, expected_peer=invite.host_peer_id, expensive=EXPENSIVE_TYPES)
            proof = role_proof(parse_secret(invite.secret), link.transcript, invite.room_id, "participant",
                               joiner.peer_id, invite.host_peer_id)
            await link.send(JoinRequest(invite.room_id, "participant", proof, "raw", ""))
            assert (await link.receive()).ok
            listed: set[str] = set()
            while not relays:
                message = await link.receive()
                if isinstance(message, RoomState):
                    listed = {m.peerId for m in message.members}
                elif isinstance(message, Relay):
                    assert message.origin in listed, "a relay arrived before the room-state listing its origin"
                    relays.append(message)
            nursery.cancel_scope.cancel()
    assert relays and relays[0].origin == invite.host_peer_id  # the host's seat asked for this node's version


async def test_version_mismatch_keeps_the_room_from_starting(tmp_path, fast_clock):
    recorders, outcomes = await run_room(tmp_path, 2, member_configs={1: {"economy_config_version": 4}}, deadline=15)
    assert not outcomes  # nobody reached match-start before the test gave up
    line = recorders[1].of("compatibility")[0]
    assert line["compatible"] is False and line["reasons"] == ["economy_config"]
    assert line["differences"] == ["your economy_config_version 4, peer's 1"]
    assert recorders[0].of("compatibility")[0]["differences"] == ["your economy_config_version 1, peer's 4"]
    assert not recorders[0].of("countdown")


async def test_deprecated_material_notice_is_local(tmp_path, fast_clock):
    recorders, outcomes = await run_room(tmp_path, 2, member_configs={1: {"deprecated_materials": ("copper",)}})
    assert all(o.started for o in outcomes.values())  # the notice never blocks
    notices = recorders[1].of("notice")
    assert [n["kind"] for n in notices] == ["deprecated-material"] and "copper" not in notices[0]["text"]
    assert not recorders[0].of("notice")


async def test_bad_joins_are_refused_and_the_host_survives(tmp_path, fast_clock):
    host_rec = Recorder()
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            options = HostOptions(min_players=2, max_players=2, auto_ready=False)
            nursery.start_soon(host_room, ctx_for(tmp_path, "host"), Identity(bytes([1]) * 32), options, car, host_rec)
            await host_rec.created.wait()
            invite = Invitation.parse(host_rec.of("room-created")[0]["invite"])

            async def attempt(name, seed, inv, **kw):
                rec = Recorder()
                outcome = await join_room(ctx_for(tmp_path, name), Identity(bytes([seed]) * 32), inv, JoinOptions(**kw), car, rec)
                return rec, outcome

            wrong = replace(invite, secret="A" * 32)
            rec, outcome = await attempt("wrong", 2, wrong)
            assert outcome.started is None and [e["code"] for e in rec.of("error")][0] == "join-rejected"

            with pytest.raises(BaseExceptionGroup) as info:
                await attempt("impostor", 3, replace(invite, host_peer_id=Identity(bytes([9]) * 32).peer_id))
            assert first_coded(info.value, (UserError,)).code == "handshake-wrong-peer"

            # garbage on a raw socket: refused at the handshake, the listener keeps serving
            with socket.create_connection((invite.host, invite.port)) as raw:
                raw.sendall(b"\x00\x00\x00\x05hello" + b"\xff" * 64)

            nursery.start_soon(attempt, "first", 4, invite)
            await trio.sleep(2)
            rec, outcome = await attempt("full", 5, invite)
            assert [e["code"] for e in rec.of("error")][0] == "join-rejected"
            assert "full" in rec.of("error")[0]["message"]
            nursery.cancel_scope.cancel()
    joined = [d["peer"] for d in host_rec.of("member-joined")]
    assert joined == [Identity(bytes([4]) * 32).peer_id]


async def test_a_silent_link_is_closed_after_5_seconds(tmp_path, fast_clock):
    host_rec = Recorder()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(host_room, ctx_for(tmp_path, "host"), Identity(bytes([1]) * 32), HostOptions(), car, host_rec)
        await host_rec.created.wait()
        invite = Invitation.parse(host_rec.of("room-created")[0]["invite"])
        from open4wd_node.net.link import LinkClosed

        link = await dial(invite.host, invite.port, Identity(bytes([2]) * 32), expected_peer=invite.host_peer_id)
        start = trio.current_time()
        with pytest.raises(LinkClosed) as info:
            await link.receive()
        assert info.value.code == "join-timeout" and 5 <= trio.current_time() - start < 6
        nursery.cancel_scope.cancel()


async def test_host_succession_over_tcp(tmp_path, fast_clock):
    recorders = [Recorder() for _ in range(3)]
    ids = [Identity(bytes([i + 1]) * 32) for i in range(3)]
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            host_scope = trio.CancelScope()

            async def host():
                with host_scope:
                    await host_room(ctx_for(tmp_path, "a"), ids[0], HostOptions(min_players=4, auto_ready=True), car,
                                    recorders[0])

            nursery.start_soon(host)
            await recorders[0].created.wait()
            invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])
            for i in (1, 2):
                nursery.start_soon(join_room, ctx_for(tmp_path, f"m{i}"), ids[i], invite, JoinOptions(auto_ready=True),
                                   car, recorders[i])
                while len(recorders[i].of("compatibility")) < i:
                    await trio.sleep(0.05)
            host_scope.cancel()  # the host goes away while the room waits for a fourth player
            while not recorders[2].of("host-succession") or len(recorders[2].of("joined")) < 2:
                await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    assert recorders[1].of("room-hosted")
    assert recorders[2].of("host-succession")[0] == {"lost": ids[0].peer_id, "successor": ids[1].peer_id}
    assert len(recorders[2].of("joined")) == 2


async def test_spectator_follows_the_room_to_the_start(tmp_path, fast_clock):
    recorders = [Recorder() for _ in range(3)]
    outcomes = {}
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            async def host():
                options = HostOptions(min_players=2, auto_ready=True, spectators=2)
                outcomes[0] = await host_room(ctx_for(tmp_path, "h"), Identity(bytes([1]) * 32), options, car, recorders[0])

            nursery.start_soon(host)
            await recorders[0].created.wait()
            invites = recorders[0].of("room-created")[0]["invites"]
            watch = Invitation.parse(invites["spectator"])

            async def spectator():
                outcomes[2] = await join_room(ctx_for(tmp_path, "s"), Identity(bytes([3]) * 32), watch,
                                              JoinOptions(spectate=True), car, recorders[2])

            nursery.start_soon(spectator)
            while not recorders[2].of("joined"):
                await trio.sleep(0.05)
            outcomes[1] = await join_room(ctx_for(tmp_path, "p"), Identity(bytes([2]) * 32),
                                          Invitation.parse(invites["participant"]), JoinOptions(auto_ready=True), car,
                                          recorders[1])
    assert all(o.started for o in outcomes.values()) and len(outcomes) == 3
    assert len({o.started.locked.match_id for o in outcomes.values()}) == 1
    assert recorders[2].of("match-start")[0]["roster"] == sorted(
        [Identity(bytes([1]) * 32).peer_id, Identity(bytes([2]) * 32).peer_id]
    )


async def test_a_missing_asset_is_fetched_from_its_owner(tmp_path, fast_clock):
    from open4wd_node.assets.store import AssetStore
    from sim_core.assets.builtins import builtin_bytes

    owner_ctx = ctx_for(tmp_path, "owner")
    cid = AssetStore.in_data_dir(owner_ctx.data_dir).put(builtin_bytes("builtin:body-01"))
    custom = dict(car.cars[0], body=cid)
    recorders = [Recorder(), Recorder()]
    outcomes = {}
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            async def host():
                options = HostOptions(min_players=2, auto_ready=True)
                outcomes[0] = await host_room(ctx_for(tmp_path, "h"), Identity(bytes([1]) * 32), options, car, recorders[0])

            nursery.start_soon(host)
            await recorders[0].created.wait()
            invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])
            outcomes[1] = await join_room(owner_ctx, Identity(bytes([2]) * 32), invite, JoinOptions(auto_ready=True),
                                          CarChoice((custom,), False, "custom"), recorders[1])
    assert all(o.started for o in outcomes.values()) and len(outcomes) == 2
    fetched = recorders[0].of("asset-fetched")
    assert fetched and fetched[0]["content_id"] == cid
    assert AssetStore.in_data_dir(tmp_path / "h").has(cid)


async def test_a_user_made_track_is_fetched_from_the_host_before_ready(tmp_path, fast_clock):
    """The host races on a track only its own store holds (a content id, not a built-in): every member
    fetches it from the host, and declares Ready only once it is stored (its ReadySet check needs it)."""
    from open4wd_node.assets.store import AssetStore
    from tests.open4wd_node.race.nodes import short_track

    host_ctx = ctx_for(tmp_path, "h")
    track = AssetStore.in_data_dir(host_ctx.data_dir).put(short_track(40.0))
    recorders = [Recorder() for _ in range(3)]
    outcomes: dict[int, object] = {}
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            async def host():
                options = HostOptions(track=track, min_players=3, auto_ready=True)
                outcomes[0] = await host_room(host_ctx, Identity(bytes([1]) * 32), options, car, recorders[0])

            async def member(i: int):
                invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])
                outcomes[i] = await join_room(ctx_for(tmp_path, f"m{i}"), Identity(bytes([i + 1]) * 32), invite,
                                              JoinOptions(auto_ready=True), car, recorders[i])

            nursery.start_soon(host)
            await recorders[0].created.wait()
            for i in (1, 2):
                nursery.start_soon(member, i)
    assert len(outcomes) == 3 and all(o.started for o in outcomes.values())
    assert not any(rec.of("ready-set-refused") or rec.of("error") for rec in recorders)
    for i in (1, 2):
        assert [e["content_id"] for e in recorders[i].of("asset-fetched")] == [track]
        assert AssetStore.in_data_dir(tmp_path / f"m{i}").has(track)


async def open_room(nursery, tmp_path, ids, recorders, outcomes, *, min_players):
    """Host ``ids[0]`` (auto-ready) in ``nursery``; returns the invitation and ``member(i)``, which starts
    the auto-ready node ``ids[i]`` joining it (each node's outcome lands in ``outcomes[i]``)."""
    async def host():
        options = HostOptions(min_players=min_players, auto_ready=True)
        outcomes[0] = await host_room(ctx_for(tmp_path, "a"), ids[0], options, car, recorders[0])

    nursery.start_soon(host)
    await recorders[0].created.wait()
    invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])

    async def join(i: int):
        outcomes[i] = await join_room(ctx_for(tmp_path, f"m{i}"), ids[i], invite, JoinOptions(auto_ready=True), car,
                                      recorders[i])

    return invite, lambda i: nursery.start_soon(join, i)


async def test_a_member_cannot_speak_for_another_over_tcp(tmp_path, fast_clock):
    """A raw participant R, on its own authenticated link, tries to ready for B, cancel for B, relay as
    B and hand B a forged room-state: each is refused and blamed on R, B's Ready never moves, R's
    Ready attempt is answered (ready-refused), and the room goes on to the start once R leaves."""
    ids = [Identity(bytes([i + 1]) * 32) for i in range(4)]  # A (host), B, R (raw), C
    a, b, r, c = (i.peer_id for i in ids)
    recorders = [Recorder() for _ in range(4)]
    outcomes: dict[int, object] = {}
    received: list[object] = []
    info = own_version_info(DEFAULTS.economy_config_version)
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            invite, member = await open_room(nursery, tmp_path, ids, recorders, outcomes, min_players=3)
            # R joins as the third participant and answers version requests, but never declares Ready
            link = await dial(invite.host, invite.port, ids[2], expected_peer=a, expensive=EXPENSIVE_TYPES)
            proof = role_proof(parse_secret(invite.secret), link.transcript, invite.room_id, "participant", r, a)
            await link.send(JoinRequest(invite.room_id, "participant", proof, "raw", ""))
            assert (await link.receive()).ok
            member(1)
            while True:  # until A and B are Ready (the room waits for R)
                message = await link.receive()
                if isinstance(message, Relay) and isinstance(decode_message(message.body), VersionRequest):
                    reply = encode_message(VersionInfoMessage(sender=r, payload=info.to_wire()))
                    await link.send(Relay("", message.origin, reply))
                if isinstance(message, RoomState) and {m.peerId for m in message.members if m.ready} == {a, b}:
                    state = message
                    break

            epoch = {m.peerId: m.membershipEpoch for m in state.members}[b]
            now = NodeClock().now_ms()
            theirs = build_declaration(ids[1], invite.room_id, state.configDigest, epoch, info, car.cars[:1], now)
            forged = replace(state, members=[replace(m, ready=False) for m in state.members], stateEpoch=state.stateEpoch + 99)
            await link.send(ReadyDeclarationMsg(theirs.to_wire()))  # B's signed declaration, on R's link
            await link.send(CancelReady("player"))  # R has no Ready: cancels nobody's
            await link.send(Relay(b, RELAY_TO_ALL, encode_message(VersionInfoMessage(sender=b, payload={}))))
            await link.send(Relay("", b, encode_message(forged)))  # relayed to B
            await link.send(forged)  # to the host
            while not any(isinstance(m, ReadyRefusal) for m in received):
                received.append(await link.receive())
            await link.send(Leave("voluntary"))
            while not [e for e in recorders[0].of("member-left") if e["peer"] == r]:
                await trio.sleep(0.05)
            await link.aclose("done", "the test is over")
            member(3)
    (answer,) = [m for m in received if isinstance(m, ReadyRefusal)]
    assert (answer.nonce, answer.code) == (theirs.nonce, "ready-invalid")
    host_codes = [e["code"] for e in recorders[0].of("error")]
    assert host_codes == ["ready-invalid", "relay-origin-invalid", "unexpected-message"]
    assert [e["ready"] for e in recorders[0].of("ready") if e["peer"] == b] == [True]  # never withdrawn
    assert not [e for e in recorders[0].of("ready") if e["peer"] == r]  # R's cancel changed nothing
    assert [e["code"] for e in recorders[1].of("error")] == ["unknown-message-type"]  # the forged state, relayed
    assert [e for e in recorders[0].of("member-left") if e["peer"] == r] == [{"peer": r, "reason": "voluntary"}]
    assert not recorders[1].of("ready-withdrawn") and not recorders[1].of("ready-refused")
    assert set(outcomes) == {0, 1, 3} and all(o.started for o in outcomes.values())
    assert recorders[1].of("match-start")[0]["roster"] == sorted([a, b, c])


async def test_a_refused_ready_is_answered_and_declared_again_over_tcp(tmp_path, fast_clock, monkeypatch):
    """B's first declaration is signed with a clock 40 s ahead: the host refuses it, B reports
    ready-refused on its event stream, and declares again (auto-ready) when the room next changes."""
    ids = [Identity(bytes([i + 1]) * 32) for i in range(3)]
    recorders = [Recorder() for _ in range(3)]
    outcomes: dict[int, object] = {}
    skewed: list[int] = []
    real = member_module.build_declaration

    def build(identity, room_id, config_digest, epoch, version, rotation, now_ms):
        if identity.peer_id == ids[1].peer_id and not skewed:
            skewed.append(now_ms)
            now_ms += 40_000
        return real(identity, room_id, config_digest, epoch, version, rotation, now_ms)

    monkeypatch.setattr(member_module, "build_declaration", build)
    with trio.move_on_after(TIME_LIMIT_S):
        async with trio.open_nursery() as nursery:
            _, member = await open_room(nursery, tmp_path, ids, recorders, outcomes, min_players=2)
            member(1)
            while not recorders[1].of("ready-refused"):
                await trio.sleep(0.05)
            member(2)  # the room changes
    assert [e["code"] for e in recorders[1].of("ready-refused")] == ["timestamp-out-of-range"]
    assert "timestamp-out-of-range" in [e["code"] for e in recorders[0].of("error")]
    assert [e["ready"] for e in recorders[0].of("ready") if e["peer"] == ids[1].peer_id] == [True]
    assert set(outcomes) == {0, 1, 2} and all(o.started for o in outcomes.values())
