"""The listener's door over real loopback TCP (docs/transport.md, "The listener's door"): junk from one
source address cannot keep another out, an opening link holds its place only for a while and cannot
buffer more than one small frame, every end is logged with its code and the peer's address, and a dialer
refused with ``listener-busy`` tries again. Junk comes from 127.0.0.2 (its sockets are bound there
before they connect); the listener and the real joiners are on 127.0.0.1.

Time is trio's autojump clock: the 5 s time boxes cost nothing and no test depends on the machine's speed.
"""

from __future__ import annotations

import dataclasses

import pytest
import structlog
import trio

from open4wd_node.net.admission import LISTENER_LIMITS, ListenerLimits
from open4wd_node.net.link import LinkClosed
from open4wd_node.net.stream_carrier import open_link
from open4wd_node.net.link_rules import LinkLimits
from open4wd_node.net.listener import NodeListener
from open4wd_node.net.transport import BUSY_RETRY_S, dial, serve
from open4wd_node.room import session as room_session
from open4wd_node.room.session import HostOptions, JoinOptions
from protocol.encoding.wire import HEADER
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LinkClose
from protocol.room.invitation import Invitation
from protocol.versions.collection import VersionInfoMessage, VersionRequest
from tests.open4wd_node.net.peers import RawPeer
from tests.open4wd_node.net.test_transport import GUEST_ID, HOST_ID, THIRD_ID, Host
from tests.open4wd_node.room.test_rooms_tcp import car, ctx_for
from tests.recorder import Recorder

JUNK = "127.0.0.2"
TIMEOUT_S = LISTENER_LIMITS.first_message_timeout_ms / 1000
SHARE = LISTENER_LIMITS.openings_per_source


async def start_host(nursery, host, **options):
    return await nursery.start(
        lambda task_status: serve(host.handler, HOST_ID, "127.0.0.1", 0, task_status=task_status, **options))


async def idle(address, source=JUNK):
    """A connection that never sends a byte."""
    return await trio.open_tcp_stream(address.host, address.port, local_address=source)


async def authenticated(address, source=JUNK):
    """A connection that completes the handshake and then says nothing."""
    raw = RawPeer(await idle(address, source), GUEST_ID)
    await raw.handshake(HOST_ID.peer_id)
    return raw


async def settle():
    """Let the listener take in everything that has connected (the clock jumps only when every task waits)."""
    await trio.sleep(0.01)


async def logged(logs, count=1):
    """Wait until the listener has logged ``count`` link ends (it logs once the connection is closed)."""
    while len(ends(logs)) < count:
        await trio.sleep(0.01)


def closes(messages):
    return [m.code for m in messages if isinstance(m, LinkClose)]


def ends(logs, event=None):
    """(event, code, source host) of every link end the listener logged."""
    return [(e["event"], e["code"], e["address"].rsplit(":", 1)[0]) for e in logs
            if e["event"] in ("link-refused", "link-closed") and (event is None or e["event"] == event)]


async def assert_gets_in(address, identity=THIRD_ID, sender="in"):
    async with await dial(address.host, address.port, identity) as link:
        await link.send(VersionRequest(sender=sender))
        assert await link.receive() == VersionRequest(sender=f"echo:{sender}")


async def test_the_ninth_opening_from_one_address_is_refused_while_another_address_gets_in(autojump_clock):
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host)
            junk = [await idle(address) for _ in range(SHARE)]
            await settle()
            ninth = await idle(address)
            with pytest.raises(LinkClosed) as info:  # told why, in a link-close before any handshake
                await open_link(ninth, GUEST_ID, DIALER)
            assert (info.value.code, info.value.by_peer) == ("listener-busy", True)
            assert "127.0.0.2" in info.value.message and "share" in info.value.message
            start = trio.current_time()
            await assert_gets_in(address)
            assert trio.current_time() - start < 1  # nobody waited for the junk's handshake timeout
            for stream in junk:
                await stream.aclose()
            nursery.cancel_scope.cancel()
    refused = ends(logs, "link-refused")
    assert refused[0] == ("link-refused", "listener-busy", JUNK)
    assert {end[1] for end in refused[1:]} <= {"link-eof", "link-broken"}  # the junk hanging up at the end


async def test_a_hundred_idle_sockets_from_one_address_do_not_stop_a_join_from_another(tmp_path, fast_clock):
    """A whole room: host_room with its node listener, join_room dialling it from 127.0.0.1."""
    outcome = await join_behind_junk(tmp_path, LISTENER_LIMITS)
    assert outcome["joined_after_s"] < 1 and outcome["busy"] == []
    refused = [end for end in outcome["ends"] if end[0] == "link-refused"]
    assert refused.count(("link-refused", "listener-busy", JUNK)) == 100 - SHARE
    assert all(end[2] == JUNK for end in refused)


async def test_without_a_share_per_address_the_same_junk_blocks_the_join_until_it_times_out(tmp_path, fast_clock):
    """The control of the test above (it would fail without the share), and the joiner's retry: refused
    with listener-busy while the junk holds every place, it tries again and gets in once the junk's
    handshakes time out."""
    outcome = await join_behind_junk(tmp_path, ListenerLimits(openings=64, openings_per_source=64))
    # a handshake's deadline is kept in whole milliseconds (``now_ms`` rounds): a junk socket accepted in the
    # millisecond the join starts in may time out up to half of one before 5 s have passed since
    handshake_s = LinkLimits().handshake_timeout_ms / 1000 - 0.0005
    assert handshake_s <= outcome["joined_after_s"] < BUSY_RETRY_S
    assert len(outcome["busy"]) >= 3 and all(entry["address"].startswith("127.0.0.1:") for entry in outcome["busy"])
    assert outcome["ends"].count(("link-refused", "handshake-timeout", JUNK)) == 64


async def join_behind_junk(tmp_path, door):
    host_id, joiner_id = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)
    host_rec, joiner_rec = Recorder(), Recorder()
    outcome = {}
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            listener = NodeListener(host_id, door=door)
            await nursery.start(listener.run, "127.0.0.1", 0)
            options = HostOptions(min_players=2, auto_ready=False)
            nursery.start_soon(room_session.host_room, ctx_for(tmp_path, "host"), host_id, options, car, host_rec, listener)
            await host_rec.created.wait()
            invite = Invitation.parse(host_rec.of("room-created")[0]["invite"])
            junk = [await idle(listener.address) for _ in range(100)]
            await settle()
            start = trio.current_time()

            async def join():
                async with trio.open_nursery() as inner:
                    own = NodeListener(joiner_id)
                    await inner.start(own.run, "127.0.0.1", 0)
                    await room_session.join_room(ctx_for(tmp_path, "joiner"), joiner_id, invite, JoinOptions(), car,
                                                 joiner_rec, own)

            nursery.start_soon(join)
            while not host_rec.of("member-joined"):
                await trio.sleep(0.01)
            outcome["joined_after_s"] = trio.current_time() - start
            for stream in junk:
                await stream.aclose()
            nursery.cancel_scope.cancel()
    assert host_rec.of("member-joined")[0]["peer"] == joiner_id.peer_id
    outcome["busy"] = [entry for entry in logs if entry["event"] == "dial-busy"]
    outcome["ends"] = ends(logs)
    return outcome


async def test_authenticated_links_that_say_nothing_hold_their_places_only_until_their_time_box(autojump_clock):
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host)
            silent = [await authenticated(address) for _ in range(SHARE)]
            with pytest.raises(LinkClosed) as info:
                await open_link(await idle(address), GUEST_ID, DIALER)
            assert info.value.code == "listener-busy"
            await assert_gets_in(address, sender="other address")
            start = trio.current_time()
            told = [await raw.messages_until_eof() for raw in silent]
            assert TIMEOUT_S <= trio.current_time() - start < TIMEOUT_S + 1
            assert all(closes(messages) == ["join-timeout"] for messages in told)  # (after pings: links keep alive)
            await assert_gets_in(address, sender="junk address, later")  # its places are free again
            nursery.cancel_scope.cancel()
    assert ends(logs).count(("link-closed", "join-timeout", JUNK)) == SHARE
    assert host.links and all(link.peer_id == THIRD_ID.peer_id for link in host.links)  # no silent link reached it


async def test_opening_links_beyond_all_places_are_refused_until_one_says_what_it_is_for(autojump_clock):
    host = Host()
    door = ListenerLimits(openings=4, openings_per_source=2)
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host, door=door)
            silent = [await authenticated(address, f"127.0.0.{i}") for i in (2, 2, 3, 4)]
            with pytest.raises(LinkClosed) as info:  # a fresh address: no share used, but no place left
                await open_link(await idle(address, "127.0.0.5"), GUEST_ID, DIALER)
            assert info.value.code == "listener-busy" and "4 links" in info.value.message
            await silent[2].send(silent[2].frame(VersionRequest(sender="claimed")))  # a first message: the handler has it
            while not host.links:
                await trio.sleep(0.01)
            await assert_gets_in(address)
            assert trio.current_time() < TIMEOUT_S  # the place came free with the first message, not a timeout
            nursery.cancel_scope.cancel()
    assert ("link-refused", "listener-busy", "127.0.0.5") in ends(logs)


@pytest.mark.parametrize("announced", [LISTENER_LIMITS.first_frame_bytes + 1, 256 * 1024])
async def test_a_first_frame_over_the_limit_closes_the_link_at_its_header(autojump_clock, announced):
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host)
            raw = await authenticated(address)
            await raw.send(HEADER.pack(announced) + b"\0" * min(announced, 64 * 1024))  # a partial frame
            told = await raw.messages_until_eof()
            assert closes(told) == ["frame-too-large"]
            assert trio.current_time() < TIMEOUT_S  # at once, not at the time box
            await logged(logs)
            nursery.cancel_scope.cancel()
    assert ends(logs) == [("link-closed", "frame-too-large", JUNK)]
    assert host.links == []


async def test_what_follows_the_first_message_waits_in_the_socket_for_the_handler(autojump_clock):
    """The first message is read exactly, so a large frame right behind it is not judged by the opening's
    4 KiB cap: the handler reads it under the link's own limits."""
    host = Host()
    big = VersionInfoMessage(sender="big", payload={"blob": b"x" * (100 * 1024)})
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host)
        raw = await authenticated(address)
        await raw.send(raw.frame(VersionRequest(sender="first"), big))
        while len(host.received) < 2:
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert [m for _, m in host.received] == [VersionRequest(sender="first"), big]


async def test_the_node_listener_logs_a_wrong_first_message_with_its_code_and_address(autojump_clock):
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            listener = NodeListener(HOST_ID)
            address = await nursery.start(listener.run, "127.0.0.1", 0)
            raw = await authenticated(address)
            await raw.send(raw.frame(VersionRequest(sender="not a join")))
            told = await raw.messages_until_eof()
            assert closes(told) == ["join-expected"]
            await logged(logs)
            nursery.cancel_scope.cancel()
    (closed,) = [e for e in logs if e["event"] == "link-closed"]
    assert (closed["code"], closed["peer"]) == ("join-expected", GUEST_ID.peer_id)
    assert closed["address"] == f"{JUNK}:{raw.stream.socket.getsockname()[1]}"


async def hold_the_only_place(address, hold_s):
    junk = await idle(address)
    await trio.sleep(hold_s)
    await junk.aclose()


async def test_a_dialer_retries_a_busy_listener_and_gets_in_when_the_junk_goes_away(autojump_clock):
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host, door=ListenerLimits(openings=1, openings_per_source=1))
            nursery.start_soon(hold_the_only_place, address, 3.0)
            await settle()
            link = await dial(address.host, address.port, THIRD_ID, busy_retry_s=BUSY_RETRY_S)
            assert trio.current_time() >= 3.0
            await link.send(VersionRequest(sender="late"))
            assert await link.receive() == VersionRequest(sender="echo:late")
            await link.aclose()
            nursery.cancel_scope.cancel()
    busy = [e for e in logs if e["event"] == "dial-busy"]
    refused = [end[1] for end in ends(logs, "link-refused") if end[2] == "127.0.0.1"]
    assert len(busy) >= 3 and refused == ["listener-busy"] * len(busy)  # each refusal logged, and tried again
    assert ("link-refused", "link-eof", JUNK) in ends(logs)  # the junk hung up mid-handshake: logged as it is


async def test_a_dialer_gives_up_on_a_listener_busy_for_longer_than_its_window(autojump_clock):
    host = Host()
    slow_handshakes = dataclasses.replace(LinkLimits(), handshake_timeout_ms=60_000)  # the junk holds its place
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host, limits=slow_handshakes,
                                       door=ListenerLimits(openings=1, openings_per_source=1))
            nursery.start_soon(hold_the_only_place, address, 30.0)
            await settle()
            with pytest.raises(LinkClosed) as info:
                await dial(address.host, address.port, THIRD_ID, busy_retry_s=BUSY_RETRY_S)
            gave_up = trio.current_time()
            nursery.cancel_scope.cancel()
    assert (info.value.code, info.value.by_peer) == ("listener-busy", True)
    assert BUSY_RETRY_S - 2.5 < gave_up <= BUSY_RETRY_S + 0.1
    refusals = len(ends(logs, "link-refused"))
    assert refusals >= 6 and f"refused {refusals} attempts" in info.value.message and "try again later" in info.value.message


async def test_without_a_window_busy_is_reported_at_once_and_other_refusals_are_never_retried(autojump_clock):
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host, door=ListenerLimits(openings=1, openings_per_source=1))
            junk = await idle(address)
            await settle()
            with pytest.raises(LinkClosed) as busy:
                await dial(address.host, address.port, THIRD_ID)
            await junk.aclose()
            await settle()
            with pytest.raises(LinkClosed) as wrong:
                await dial(address.host, address.port, THIRD_ID, expected_peer=GUEST_ID.peer_id, busy_retry_s=BUSY_RETRY_S)
            assert trio.current_time() < 1
            await logged(logs, 3)
            nursery.cancel_scope.cancel()
    assert busy.value.code == "listener-busy" and "refused the attempt" in busy.value.message
    assert wrong.value.code == "handshake-wrong-peer"
    assert not [e for e in logs if e["event"] == "dial-busy"]
    assert [end[1] for end in ends(logs, "link-refused") if end[2] == "127.0.0.1"] == ["listener-busy", "handshake-wrong-peer"]
