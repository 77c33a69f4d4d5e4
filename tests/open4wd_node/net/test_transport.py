"""Links over real TCP on 127.0.0.1 (port 0), with the real clock; no test waits on a timeout here."""

import dataclasses

import pytest
import structlog
import trio

from open4wd_base.errors import LocalError
from open4wd_node.net.admission import ListenerLimits
from open4wd_node.net.link import LinkClosed, now_ms
from open4wd_node.net.stream_carrier import open_link
from open4wd_node.net.link_rules import LinkLimits
from open4wd_node.net.transport import dial, serve
from protocol.errors import ProtocolError
from protocol.link.handshake import DIALER, Handshake, LinkClose, decode_handshake_message
from protocol.identity.keys import Identity
from protocol.versions.collection import VersionInfoMessage, VersionRequest
from protocol.encoding.wire import HANDSHAKE, HEADER, ROOM, FrameDecoder, encode_frame, encode_message
from tests.open4wd_node.net.peers import RawPeer

HOST_ID = Identity(bytes([2]) * 32)
GUEST_ID = Identity(bytes([1]) * 32)
THIRD_ID = Identity(bytes([3]) * 32)


class Host:
    """A listener whose handler echoes and records how each link ended."""

    def __init__(self, reply=True):
        self.reply = reply
        self.received = []
        self.ended = []
        self.links = []

    async def handler(self, link):
        self.links.append(link)
        try:
            async for msg in link:
                self.received.append((link.peer_id, msg))
                if self.reply:
                    await link.send(VersionRequest(sender=f"echo:{msg.sender}"))
        except LinkClosed as exc:
            self.ended.append(exc.code)
            raise


async def start_host(nursery, host, **options):
    return await nursery.start(
        lambda task_status: serve(host.handler, HOST_ID, "127.0.0.1", 0, task_status=task_status, **options))


async def wait_for(predicate):
    while not predicate():
        await trio.sleep(0.01)


async def test_two_nodes_link_and_exchange_messages():
    host = Host()
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host)
        assert address.port != 0
        async with await dial(address.host, address.port, GUEST_ID, expected_peer=HOST_ID.peer_id) as link:
            assert link.peer_id == HOST_ID.peer_id
            for i in range(3):
                await link.send(VersionRequest(sender=f"m{i}"))
                assert await link.receive() == VersionRequest(sender=f"echo:m{i}")
            big = VersionInfoMessage(sender="big", payload={"blob": b"x" * (200 * 1024)})
            await link.send(big)
            assert await link.receive() == VersionRequest(sender="echo:big")
            (server_link,) = host.links
            assert server_link.peer_id == GUEST_ID.peer_id
            assert server_link.transcript == link.transcript and len(link.transcript) == 32
        await wait_for(lambda: host.ended)
        assert host.ended == ["link-closed"]  # our aclose told the host why
        nursery.cancel_scope.cancel()
    assert [m for _, m in host.received][:3] == [VersionRequest(sender=f"m{i}") for i in range(3)]


@pytest.mark.parametrize("after_first_message", [False, True])
async def test_garbage_frames_close_after_three_violations_and_the_listener_keeps_serving(after_first_message):
    """While a link opens (before its first message) and after, in the handler: the same rule, logged."""
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host)
            raw = RawPeer(await trio.open_tcp_stream(address.host, address.port), GUEST_ID)
            await raw.handshake(HOST_ID.peer_id)
            if after_first_message:
                await raw.send(raw.frame(VersionRequest(sender="hello")))
            body_garbage = [b"\xc1", b"\x93\x01\x02\x03", b'\x81\xa4type\xa7no-such']
            await raw.send(b"".join(raw.seal(b) for b in body_garbage))
            told = await raw.messages_until_eof()
            await wait_for(lambda: any(entry["event"] == "link-closed" for entry in logs))
            assert [m for m in told if isinstance(m, LinkClose)] == [LinkClose("unknown-message-type", told[-1].message)]
            assert host.ended == (["unknown-message-type"] if after_first_message else [])  # the last violation's code
            (closed,) = [entry for entry in logs if entry["event"] == "link-closed"]
            assert closed["code"] == "unknown-message-type" and closed["peer"] == GUEST_ID.peer_id
            assert closed["address"] == "127.0.0.1:%d" % raw.stream.socket.getsockname()[1]
            # garbage before any handshake is refused too, and neither costs the listener anything
            async with await trio.open_tcp_stream(address.host, address.port) as stream:
                await stream.send_all(b"\x00\x00\x00\x03abc")
                assert await RawPeer(stream, GUEST_ID).messages_until_eof() != []
            async with await dial(address.host, address.port, THIRD_ID) as link:
                await link.send(VersionRequest(sender="still here"))
                assert await link.receive() == VersionRequest(sender="echo:still here")
            nursery.cancel_scope.cancel()


async def test_an_oversize_frame_closes_the_link_at_once():
    host = Host()
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host)
        raw = RawPeer(await trio.open_tcp_stream(address.host, address.port), GUEST_ID)
        await raw.handshake()
        await raw.send(raw.frame(VersionRequest(sender="ok")))
        await wait_for(lambda: host.received)
        await raw.send(HEADER.pack(ROOM.max_frame_bytes + 16 + 1))  # the header alone is enough (+16: the tag)
        told = await raw.messages_until_eof()
        await wait_for(lambda: host.ended)
        assert host.ended == ["frame-too-large"]
        assert [m for _, m in host.received] == [VersionRequest(sender="ok")]
        assert told[-1].code == "frame-too-large"
        nursery.cancel_scope.cancel()


async def test_a_flood_is_dropped_and_sixteen_drops_in_a_row_close_the_link():
    host = Host(reply=False)
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host)
        raw = RawPeer(await trio.open_tcp_stream(address.host, address.port), GUEST_ID)
        await raw.handshake()
        await raw.send(raw.frame(*[VersionRequest(sender=str(i)) for i in range(200)]))
        await raw.messages_until_eof()
        await wait_for(lambda: host.ended)
        assert host.ended == ["link-flooded"]
        delivered = [m.sender for _, m in host.received]
        # the burst gets through in order; refills during the test are real time, so only bounds hold
        assert delivered[:64] == [str(i) for i in range(64)]
        assert len(delivered) < 200 - 16
        nursery.cancel_scope.cancel()


async def test_an_impersonator_is_refused_and_both_sides_learn_why():
    host = Host()
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await start_host(nursery, host)
            with pytest.raises(LinkClosed) as info:
                await dial(address.host, address.port, GUEST_ID, expected_peer=THIRD_ID.peer_id)
            assert info.value.code == "handshake-wrong-peer" and not info.value.by_peer
            await wait_for(lambda: logs)
            nursery.cancel_scope.cancel()
    assert host.links == []
    assert [(entry["event"], entry["code"]) for entry in logs] == [("link-refused", "handshake-wrong-peer")]


@pytest.mark.parametrize(
    ("error", "code", "logged_errors"),
    [
        (ProtocolError("join-rejected", "no"), "join-rejected", 0),  # the peer's fault: its own code
        # this node's bug: not the peer's fault (``internal-error``, never the error's own code), logged
        # with its traceback; the listener goes on (one peer's input costs at most its own link)
        (LocalError("room-not-running", "a bug of this node"), "internal-error", 2),
    ],
)
async def test_a_handler_that_raises_closes_only_that_link(error, code, logged_errors):
    async def handler(link):
        await link.receive()
        raise error

    async with trio.open_nursery() as nursery:
        address = await nursery.start(lambda task_status: serve(handler, HOST_ID, task_status=task_status))
        with structlog.testing.capture_logs() as logs:
            for _ in range(2):
                async with await dial(address.host, address.port, GUEST_ID) as link:
                    await link.send(VersionRequest(sender="me"))
                    with pytest.raises(LinkClosed) as info:
                        await link.receive()
                    assert (info.value.code, info.value.by_peer) == (code, True)
        nursery.cancel_scope.cancel()
    errors = [e for e in logs if e["log_level"] == "error"]
    assert len(errors) == logged_errors and all(e["exc_info"] is error for e in errors)


async def test_dial_failure_is_coded():
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()
    with pytest.raises(LinkClosed) as info:
        await dial("127.0.0.1", port, GUEST_ID)
    assert info.value.code == "dial-failed"


async def test_ping_round_trip_is_measured():
    fast = dataclasses.replace(LinkLimits(), ping_interval_ms=20)
    host = Host()
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host, limits=fast)
        async with await dial(address.host, address.port, GUEST_ID, limits=fast) as link:
            assert link.rtt_ms is None
            with trio.move_on_after(0.2):
                await link.receive()  # nothing comes; the link pings and reads pongs meanwhile
            assert isinstance(link.rtt_ms, int) and link.rtt_ms >= 0
            assert host.received == []  # pings and pongs never reach the caller
        nursery.cancel_scope.cancel()


async def test_connections_beyond_the_opening_places_are_refused_on_arrival():
    host = Host()
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host, door=ListenerLimits(openings=1, openings_per_source=1))
        slow = await trio.open_tcp_stream(address.host, address.port)
        handshake = Handshake(GUEST_ID, DIALER, now_ms())
        await slow.send_all(b"".join(encode_frame(encode_message(m), HANDSHAKE) for m in handshake.start()))
        decoder, replies = FrameDecoder(HANDSHAKE), []
        while not replies:  # the listener's Noise message 2: its handshake is now in progress
            replies += decoder.feed(await slow.receive_some(4096))
        async with await trio.open_tcp_stream(address.host, address.port) as refused:
            with pytest.raises(LinkClosed) as info:  # told why, on the handshake channel, before any handshake
                await open_link(refused, THIRD_ID, DIALER)
            assert (info.value.code, info.value.by_peer) == ("listener-busy", True)
        for body in replies:
            answer = handshake.receive(decode_handshake_message(body), now_ms())
        await slow.send_all(b"".join(encode_frame(encode_message(m), HANDSHAKE) for m in answer))
        sealed = handshake.result.send.seal(encode_message(VersionRequest(sender="slow")))
        await slow.send_all(HEADER.pack(len(sealed)) + sealed)  # its first message: the place is free again
        await wait_for(lambda: host.links)
        async with await dial(address.host, address.port, THIRD_ID) as link:
            await link.send(VersionRequest(sender="after"))
            assert await link.receive() == VersionRequest(sender="echo:after")
        await slow.aclose()
        nursery.cancel_scope.cancel()


async def test_a_silent_connection_times_out_over_tcp(autojump_clock):
    host = Host()
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host)
        async with await trio.open_tcp_stream(address.host, address.port) as silent:
            told = await RawPeer(silent, GUEST_ID).messages_until_eof()
        assert [m.code for m in told] == ["handshake-timeout"]
        assert trio.current_time() >= 5.0
        nursery.cancel_scope.cancel()


async def test_an_invalid_expected_peer_is_refused():
    host = Host()
    async with trio.open_nursery() as nursery:
        address = await start_host(nursery, host)
        with pytest.raises(LinkClosed) as info:
            await dial(address.host, address.port, GUEST_ID, expected_peer="z-not-a-peer")
        assert info.value.code == "peer-id-invalid"
        nursery.cancel_scope.cancel()
