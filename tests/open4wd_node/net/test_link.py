"""Link behaviour over in-memory streams; every timeout runs under trio's MockClock (autojump).
(Tampering: test_link_tamper.py.)"""

import dataclasses
import socket

import pytest
import trio
import trio.testing

from open4wd_node.net.link import LinkClosed, now_ms

from open4wd_node.net.stream_carrier import open_link, peer_address, peer_endpoint
from open4wd_node.net.link_rules import LinkLimits, LinkPing, LinkPong
from protocol.errors import LocalError
from protocol.link.handshake import DIALER, LISTENER, LinkClose, LinkIdentity, LinkNoise, LinkVersion
from protocol.link.noise import NoiseXX, Role
from protocol.identity.keys import Identity
from protocol.room.invitation import check_role_proof, role_proof
from protocol.versions.collection import VersionInfoMessage, VersionRequest
from protocol.versions.record import PROTOCOL_VERSION
from protocol.encoding.wire import HANDSHAKE, HEADER, FrameDecoder, decode_message, encode_frame, encode_message
from tests.open4wd_node.net.peers import RawPeer
from tests.coded import raises_coded

HOST_ID = Identity(bytes([2]) * 32)
GUEST_ID = Identity(bytes([1]) * 32)
LIMITS = LinkLimits()


async def open_pair(stream_pair=trio.testing.memory_stream_pair, **options):
    left, right = stream_pair()
    links = {}

    async def open_side(stream, identity, role):
        links[role] = await open_link(stream, identity, role, **options)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(open_side, left, GUEST_ID, DIALER)
        nursery.start_soon(open_side, right, HOST_ID, LISTENER)
    return links[DIALER], links[LISTENER]


async def raw_and_listener(stream_pair=trio.testing.memory_stream_pair, **options):
    """A RawPeer dialer that has completed the handshake with a real listener Link."""
    left, right = stream_pair()
    raw = RawPeer(left, GUEST_ID)
    links = []

    async def listen():
        links.append(await open_link(right, HOST_ID, LISTENER, **options))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(listen)
        await raw.handshake(HOST_ID.peer_id)
    return raw, links[0]


async def closed_reason(call, *args):
    with pytest.raises(LinkClosed) as info:
        await call(*args)
    return info.value


async def test_messages_flow_both_ways_over_any_stream():
    for stream_pair in (trio.testing.memory_stream_pair, trio.testing.lockstep_stream_pair):
        dialer, listener = await open_pair(stream_pair)
        assert (dialer.peer_id, listener.peer_id) == (HOST_ID.peer_id, GUEST_ID.peer_id)
        assert dialer.transcript == listener.transcript
        async with trio.open_nursery() as nursery:
            nursery.start_soon(dialer.send, VersionRequest(sender="a"))
            assert await listener.receive() == VersionRequest(sender="a")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(listener.send, VersionRequest(sender="b"))
            assert await dialer.receive() == VersionRequest(sender="b")
        await dialer.aclose()
        await listener.aclose()


async def test_every_session_has_its_own_transcript_and_a_role_proof_does_not_carry_over():
    first_dialer, first_listener = await open_pair()
    second_dialer, second_listener = await open_pair()
    assert first_dialer.transcript == first_listener.transcript != second_dialer.transcript == second_listener.transcript
    secret, room = bytes(range(24)), "0b6f2f7c-0a5e-4c39-9d0b-6f8f3f0e7e11"
    proof = role_proof(secret, first_dialer.transcript, room, "participant", GUEST_ID.peer_id, HOST_ID.peer_id)
    assert check_role_proof(proof, secret, first_listener.transcript, room, "participant", GUEST_ID.peer_id, HOST_ID.peer_id)
    assert not check_role_proof(proof, secret, second_listener.transcript, room, "participant", GUEST_ID.peer_id,
                                HOST_ID.peer_id)


async def test_the_first_message_may_follow_the_handshake_at_once():
    left, right = trio.testing.memory_stream_pair()
    big = VersionInfoMessage(sender="first", payload={"blob": b"x" * 100_000})  # far above the handshake cap
    received = []

    async def dialer_side():
        link = await open_link(left, GUEST_ID, DIALER)
        await link.send(big)

    async def listener_side():
        link = await open_link(right, HOST_ID, LISTENER)
        received.append(await link.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener_side)
        nursery.start_soon(dialer_side)
    assert received == [big]


async def test_handshake_timeout(autojump_clock):
    left, right = trio.testing.memory_stream_pair()
    reason = await closed_reason(open_link, right, HOST_ID, LISTENER)
    assert reason.code == "handshake-timeout"
    assert trio.current_time() == 5.0
    told = FrameDecoder(HANDSHAKE).feed(await left.receive_some(4096))
    assert decode_message(told[0]).code == "handshake-timeout"
    assert await left.receive_some(4096) == b""


def noise_frame(noise: NoiseXX, payload) -> bytes:
    return encode_frame(encode_message(LinkNoise(noise.write_message(encode_message(payload)))), HANDSHAKE)


async def test_a_listener_that_never_proves_itself_times_the_dialer_out(autojump_clock):
    left, right = trio.testing.memory_stream_pair()
    limits = dataclasses.replace(LIMITS, handshake_timeout_ms=2_000)
    async with trio.open_nursery() as nursery:
        # it answers message 1 with a partial message 2, and never with the rest
        partial = encode_frame(encode_message(LinkNoise(bytes(200))), HANDSHAKE)[:100]
        nursery.start_soon(right.send_all, partial)
        with raises_coded(LinkClosed, "handshake-timeout") as info:
            await open_link(left, GUEST_ID, DIALER, limits=limits)
        reason = info.value
    assert reason.code == "handshake-timeout" and trio.current_time() == 2.0


async def test_a_refusal_in_the_handshake_reaches_the_other_side():
    left, right = trio.testing.memory_stream_pair()
    forger = NoiseXX(Role.INITIATOR, bytes([9]) * 32)
    async with trio.open_nursery() as nursery:
        async def listen():
            reason = await closed_reason(open_link, right, HOST_ID, LISTENER)
            assert reason.code == "handshake-invalid-signature" and not reason.by_peer

        nursery.start_soon(listen)
        await left.send_all(noise_frame(forger, LinkVersion(PROTOCOL_VERSION)))
        decoder = FrameDecoder(HANDSHAKE)
        bodies = []
        while not bodies:
            bodies = decoder.feed(await left.receive_some(4096))
        forger.read_message(decode_message(bodies[0]).noise)
        # claims to be GUEST but signs its static key with HOST's identity
        await left.send_all(noise_frame(forger, LinkIdentity(PROTOCOL_VERSION, GUEST_ID.peer_id, HOST_ID.sign(b"x"))))
    # the forger's link is open after message 3, so the listener seals its refusal with the session's keys
    _, receive = forger.split()
    sealed = FrameDecoder(HANDSHAKE).feed(await left.receive_some(4096))
    assert [decode_message(receive.open(body)) for body in sealed] == [
        LinkClose("handshake-invalid-signature", f"the dialer's static Noise key is not signed by {GUEST_ID.peer_id}")]


async def raw_handshake_frames(stream):
    decoder, frames = FrameDecoder(HANDSHAKE), []
    while data := await stream.receive_some(4096):
        frames += [decode_message(body) for body in decoder.feed(data)]
    return frames


async def test_a_peer_refusal_is_reported_with_its_code(autojump_clock):
    left, right = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(right.send_all, encode_frame(encode_message(LinkClose("room-closed", "bye")), HANDSHAKE))
        reason = await closed_reason(open_link, left, GUEST_ID, DIALER)
    assert (reason.code, reason.by_peer) == ("room-closed", True) and "bye" in reason.message


async def test_a_silent_link_times_out_after_pinging(autojump_clock):
    raw, link = await raw_and_listener()
    reason = await closed_reason(link.receive)
    assert reason.code == "link-timeout" and trio.current_time() == 10.0
    assert await raw.messages_until_eof() == [
        LinkPing(nonce=1),
        LinkPing(nonce=2),
        LinkPing(nonce=3),
        LinkClose("link-timeout", "the peer sent nothing for 10000 ms"),
    ]
    assert (await closed_reason(link.receive)).code == "link-timeout"
    assert (await closed_reason(link.send, VersionRequest(sender="late"))).code == "link-timeout"


async def test_the_idle_timeout_is_configurable(autojump_clock):
    raw, link = await raw_and_listener(limits=dataclasses.replace(LIMITS, idle_timeout_ms=1_500))
    assert (await closed_reason(link.receive)).code == "link-timeout"
    assert trio.current_time() == 1.5


async def test_live_links_stay_up_and_measure_their_round_trip(autojump_clock):
    dialer, listener = await open_pair()
    async with trio.open_nursery() as nursery:
        for link in (dialer, listener):
            nursery.start_soon(_read_quietly, link, 60)
    assert trio.current_time() == 60.0
    assert dialer.rtt_ms == 0 and listener.rtt_ms == 0  # virtual time does not pass in memory
    assert dialer.closed is None and listener.closed is None


async def _read_quietly(link, seconds):
    with trio.move_on_after(seconds):
        await link.receive()
        raise AssertionError("pings must not reach the caller")


async def test_round_trip_time_is_the_pong_delay(autojump_clock):
    raw, link = await raw_and_listener()

    async def answer_late():
        while True:
            for body in raw.decoder.feed(await raw.stream.receive_some(4096)):
                ping = decode_message(raw.result.receive.open(body))
                await trio.sleep(0.25)
                await raw.send(raw.frame(LinkPong(nonce=ping.nonce)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(answer_late)
        await _read_quietly(link, 3.5)
        nursery.cancel_scope.cancel()
    assert link.rtt_ms == 250


async def test_a_peer_that_stops_reading_is_closed_by_the_send_timeout(autojump_clock):
    raw, link = await raw_and_listener(trio.testing.lockstep_stream_pair)
    reason = await closed_reason(link.send, VersionRequest(sender="nobody reads this"))
    assert reason.code == "link-send-timeout" and trio.current_time() == 10.0
    assert (await closed_reason(link.receive)).code == "link-send-timeout"


async def test_flood_beyond_the_buckets_is_dropped_exactly(autojump_clock):
    raw, link = await raw_and_listener(expensive=frozenset({"version-info"}))
    costly = VersionInfoMessage(sender="c", payload={})
    await raw.send(raw.frame(*[costly] * 20, VersionRequest(sender="cheap")))
    received = [await link.receive() for _ in range(9)]
    assert received == [costly] * 8 + [VersionRequest(sender="cheap")]  # 12 expensive ones dropped
    await raw.send(raw.frame(*[VersionRequest(sender="x")] * 100))
    received = []
    reason = await closed_reason(_collect, link, received)
    assert reason.code == "link-flooded"
    assert len(received) == 64 - 21  # the general burst, less the 21 frames already charged
    assert LinkClose("link-flooded", reason.message) in await raw.messages_until_eof()


async def _collect(link, into):
    while True:
        into.append(await link.receive())


async def test_a_peer_close_ends_the_link_with_the_peers_code():
    dialer, listener = await open_pair()
    await dialer.aclose("room-closed", "the host left")
    reason = await closed_reason(listener.receive)
    assert (reason.code, reason.by_peer) == ("room-closed", True) and "the host left" in reason.message
    assert (await closed_reason(dialer.send, VersionRequest(sender="x"))).code == "room-closed"


async def test_iteration_ends_after_our_own_close_but_raises_on_any_other_end():
    dialer, listener = await open_pair()
    seen = []

    async def iterate():
        async for msg in listener:
            seen.append(msg)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(iterate)
        await dialer.send(VersionRequest(sender="one"))
        await trio.testing.wait_all_tasks_blocked()
        await listener.aclose()
    assert seen == [VersionRequest(sender="one")]
    dialer2, listener2 = await open_pair()
    await dialer2.aclose()
    with raises_coded(LinkClosed, "link-closed"):
        async for _ in listener2:
            pass


async def test_only_one_task_may_receive():
    dialer, listener = await open_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(listener.receive)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.BusyResourceError):
            await listener.receive()
        nursery.cancel_scope.cancel()


async def test_an_oversize_send_is_refused_locally_and_the_link_stays_up():
    dialer, listener = await open_pair()
    with pytest.raises(LocalError) as info:  # this node's own message: a LocalError, never the peer's fault
        await dialer.send(VersionInfoMessage(sender="x", payload={"b": b"x" * (256 * 1024)}))
    assert info.value.code == "frame-too-large"
    await dialer.send(VersionRequest(sender="fine"))
    assert await listener.receive() == VersionRequest(sender="fine")


async def test_handshake_frames_after_the_handshake_are_violations():
    raw, link = await raw_and_listener()
    late = [LinkNoise(bytes(48)), LinkIdentity(PROTOCOL_VERSION, GUEST_ID.peer_id, bytes(64)), LinkVersion("2.0.0")]
    await raw.send(raw.frame(*late[:2], VersionRequest(sender="after")))
    assert await link.receive() == VersionRequest(sender="after")
    await raw.send(raw.frame(late[2]))
    assert (await closed_reason(link.receive)).code == "unknown-message-type"


async def test_eof_without_a_reason():
    raw, link = await raw_and_listener()
    await raw.stream.aclose()
    reason = await closed_reason(link.receive)
    assert (reason.code, reason.by_peer) == ("link-eof", True)


async def test_an_oversize_handshake_frame_is_refused_before_its_body_is_read():
    left, right = trio.testing.memory_stream_pair()
    await left.send_all(HEADER.pack(HANDSHAKE.max_frame_bytes + 1))
    reason = await closed_reason(open_link, right, HOST_ID, LISTENER)
    assert reason.code == "frame-too-large"
    assert [m.code for m in await raw_handshake_frames(left)] == ["frame-too-large"]


async def test_a_send_cancelled_from_outside_ends_the_link(autojump_clock):
    raw, link = await raw_and_listener(trio.testing.lockstep_stream_pair)
    with trio.move_on_after(1):
        await link.send(VersionRequest(sender="nobody reads this"))
    assert (await closed_reason(link.send, VersionRequest(sender="next"))).code == "link-broken"
    await link.aclose()


async def test_the_clock_reads_a_deadline_as_reached(mock_clock):
    # 2.006 s * 1000 is 2005.999… in floating point; flooring it would make a timer fire again and again
    for seconds, expected in ((2.006, 2_006), (4.011, 4_011)):
        mock_clock.jump(seconds - trio.current_time())
        assert now_ms() == expected


async def test_a_fast_sender_is_paced_so_the_receiver_drops_nothing(autojump_clock):
    expensive = frozenset({"version-info"})
    dialer, listener = await open_pair(expensive=expensive)
    sent = [VersionRequest(sender=str(i)) for i in range(150)]
    sent += [VersionInfoMessage(sender=str(i), payload={"blob": b"x" * 200_000}) for i in range(12)]
    received = []

    async def read_all():
        while len(received) < len(sent):
            received.append(await listener.receive())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_all)
        for msg in sent:
            await dialer.send(msg)
    assert received == sent
    assert trio.current_time() >= (150 - 64) / 32  # the sender waited instead of overrunning


async def test_an_empty_handshake_frame_is_a_coded_refusal():
    left, right = trio.testing.memory_stream_pair()
    await left.send_all(HEADER.pack(0))
    assert (await closed_reason(open_link, right, HOST_ID, LISTENER)).code == "malformed-frame"


async def _tcp_pair(buffer_bytes: int):
    """Two ends of a real loopback TCP connection with small socket buffers (so a writer fills them)."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        accepted = []

        async def accept():
            accepted.append(await listeners[0].accept())

        nursery.start_soon(accept)
        dialled = await trio.open_tcp_stream("127.0.0.1", port)
    await listeners[0].aclose()
    for stream in (dialled, accepted[0]):
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buffer_bytes)
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer_bytes)
    return dialled, accepted[0]


async def test_frames_a_full_socket_takes_in_part_go_out_whole_and_in_order_from_every_sending_task():
    """Nobody reads, the socket buffers fill and a send waits in the middle of a frame; other tasks' sends
    wait their turn (one frame at a time, sealed in the order they go out). Once the peer reads, every frame
    arrives whole and opens (a frame out of its sealing order would not), each task's in its order."""
    left, right = await _tcp_pair(4096)
    roomy = dataclasses.replace(LIMITS, general_burst=10_000, general_per_second=10_000,
                                general_bytes_burst=100_000_000, general_bytes_per_second=100_000_000)
    dialer, listener = await open_pair(lambda: (left, right), limits=roomy)
    sent: list[VersionRequest] = []

    async def sender(name: str) -> None:
        for k in range(40):
            message = VersionRequest(sender=f"{name}{k}:" + "x" * 2000)
            await dialer.send(message)
            sent.append(message)

    received = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sender, "a")
        nursery.start_soon(sender, "b")
        await trio.sleep(1)  # both senders now wait for the full socket
        assert len(sent) < 80
        while len(received) < 80:
            received.append(await listener.receive())
    assert sorted(received, key=lambda m: m.sender) == sorted(sent, key=lambda m: m.sender)
    for name in "ab":
        assert [m for m in received if m.sender[0] == name] == [m for m in sent if m.sender[0] == name]
    await dialer.aclose()
    await listener.aclose()


async def test_the_other_end_is_named_for_a_tcp_stream_and_none_for_others() -> None:
    """Logs and the door name a link's other end; a stream with no IP peer (a UNIX socket, memory, a
    closed socket) has none, and asking never raises (a UNIX socket's peer name ``''`` raised before)."""
    with trio.socket.socket() as listener:
        await listener.bind(("127.0.0.1", 0))
        listener.listen()
        client = await trio.open_tcp_stream(*listener.getsockname())
        async with client:
            host, port = client.socket.getsockname()
            assert str(peer_endpoint(client)) == peer_address(client) == f"127.0.0.1:{listener.getsockname()[1]}"
            accepted, _ = await listener.accept()
            with accepted:
                assert peer_address(trio.SocketStream(accepted)) == f"{host}:{port}"
        assert peer_endpoint(client) is None  # closed
    left, right = trio.socket.socketpair()
    with left, right:
        assert peer_endpoint(trio.SocketStream(left)) is None and peer_address(trio.SocketStream(right)) is None
    memory, _ = trio.testing.memory_stream_pair()
    assert peer_endpoint(memory) is None


async def test_what_arrived_over_tcp_is_taken_without_waiting_and_the_end_after_the_last_message():
    """``receive_arrived`` (a race link's reader at the pump's ticks): every whole message the socket holds,
    none when it holds none (no wait), the messages before the peer's close first, then the close."""
    left, right = await _tcp_pair(1 << 16)
    dialer, listener = await open_pair(lambda: (left, right))
    assert await listener.receive_arrived() == []
    sent = [VersionRequest(sender=f"m{k}") for k in range(5)]
    for message in sent:
        await dialer.send(message)
    await dialer.aclose("race-over", "done")
    await trio.sleep(0.05)  # on the wire by now (real loopback)
    assert await listener.receive_arrived() == sent
    with pytest.raises(LinkClosed) as ended:
        await listener.receive_arrived()
    assert ended.value.code == "race-over" and ended.value.by_peer


async def test_only_a_socket_tells_what_has_arrived():
    dialer, listener = await open_pair()  # in memory
    with pytest.raises(LocalError) as refused:
        await listener.receive_arrived()
    assert refused.value.code == "carrier-cannot-poll"
    await dialer.aclose()
    await listener.aclose()
