"""The signaling service end to end on loopback: this project's client against it, raw frames as a
foreign client sends them, every refusal counted, and the drain."""

from __future__ import annotations

import json

import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, open_websocket_url

from open4wd_node.signal.client import SignalingClient
from protocol.signaling.client import Error, PeerJoined, PeerLeft, Registered, Signal
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, sign_envelope
from protocol.signaling.limits import MAX_FRAME_BYTES
from protocol.signaling.proof import build_proof
from protocol.signaling.scope import new_room_scope
from tests.open4wd_node.signal.helpers import get, http, running_service
from tests.protocol.signaling.helpers import ALICE, BOB, CAROL


async def next_event(events, kind):
    with trio.fail_after(30):
        async for event in events:
            if isinstance(event, kind):
                return event
    raise AssertionError(f"the events ended before a {kind.__name__}")


async def test_two_clients_exchange_offer_answer_and_candidates(fast_clock):
    scope = new_room_scope()
    async with running_service() as run:
        async with SignalingClient.connect(run.url, scope, ALICE) as alice:
            alice_events = alice.events()
            assert (await next_event(alice_events, Registered)).peers == (ALICE.peer_id,)
            async with SignalingClient.connect(run.url, scope, BOB) as bob:
                bob_events = bob.events()
                assert (await next_event(bob_events, Registered)).host == ALICE.peer_id
                assert await next_event(alice_events, PeerJoined) == PeerJoined(BOB.peer_id)
                await bob.send(ALICE.peer_id, Sdp(SdpKind.OFFER, "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n"))
                got = await next_event(alice_events, Signal)
                assert got.signer == BOB.peer_id and got.message.kind is SdpKind.OFFER
                await alice.send(BOB.peer_id, Sdp(SdpKind.ANSWER, "v=0\r\n"))
                await alice.send(BOB.peer_id, IceCandidate("candidate:1 1 udp 1 127.0.0.1 9 typ host", "0", 0))
                assert (await next_event(bob_events, Signal)).message.kind is SdpKind.ANSWER
                assert (await next_event(bob_events, Signal)).message == IceCandidate(
                    "candidate:1 1 udp 1 127.0.0.1 9 typ host", "0", 0, None)
            assert await next_event(alice_events, PeerLeft) == PeerLeft(BOB.peer_id)  # Bob's leave
        metrics = run.service.metrics.exposition().decode()
        assert 'open4wd_signal_relayed_total{type="sdp-offer"} 1.0' in metrics
        assert 'open4wd_signal_departures_total{reason="left"} 2.0' in metrics  # Bob's, then Alice's


def register_frame(identity, scope, now_ms, **extra):
    proof = build_proof(identity, scope, now_ms)
    return json.dumps({"type": "register", "sender": identity.peer_id, "note": "extra keys are fine",
                       "payload": {"peerId": identity.peer_id, "proof": {**proof.to_json(), **extra}}})


async def test_a_foreign_client_with_raw_frames(fast_clock):
    scope = new_room_scope()
    async with running_service() as run:
        now = run.service.now_ms
        url = f"{run.url}/ws?room={scope}"
        async with open_websocket_url(url) as raw_alice, open_websocket_url(url, max_message_size=2**20) as raw_bob:
            await raw_alice.send_message(register_frame(ALICE, scope, now(), sdpHint="x"))
            assert json.loads(await raw_alice.get_message())["type"] == "room-state"
            await raw_bob.send_message(register_frame(BOB, scope, now()).encode())  # a binary frame
            assert json.loads(await raw_bob.get_message())["payload"]["peers"] == [ALICE.peer_id, BOB.peer_id]
            assert json.loads(await raw_alice.get_message())["type"] == "peer-joined"
            envelope = json.loads(sign_envelope(ALICE, scope, BOB.peer_id, IceCandidate("candidate:7"), now()).wire_text())
            assert envelope["message"]["candidate"] == {"candidate": "candidate:7"}  # omitted keys, as sent
            await raw_alice.send_message("{not json")
            await raw_alice.send_message(json.dumps({**envelope, "ninth": 1}))
            await raw_alice.send_message(json.dumps(envelope).encode())
            assert json.loads(await raw_bob.get_message()) == envelope  # only the good one, forwarded as sent
            await raw_bob.send_message("x" * (MAX_FRAME_BYTES + 1))
            with pytest.raises(ConnectionClosed) as closed:
                with trio.fail_after(30):
                    await raw_bob.get_message()
            assert closed.value.reason.code == 1009
            assert json.loads(await raw_alice.get_message())["type"] == "peer-left"
        codes = run.service.metrics.exposition().decode()
        for code in ("frame-not-json", "frame-invalid", "frame-too-large"):
            assert f'open4wd_signal_refusals_total{{code="{code}"}} 1.0' in codes


async def test_sockets_that_never_register_or_name_no_scope_are_closed(fast_clock):
    async with running_service() as run:
        async with open_websocket_url(f"{run.url}/ws?room={new_room_scope()}") as idle:
            with pytest.raises(ConnectionClosed) as closed, trio.fail_after(60):
                await idle.get_message()
            assert (closed.value.reason.code, closed.value.reason.reason) == (1008, "register-timeout")
        async with open_websocket_url(f"{run.url}/ws?room=ROOM") as bad:
            with pytest.raises(ConnectionClosed) as closed, trio.fail_after(60):
                await bad.get_message()
            assert (closed.value.reason.code, closed.value.reason.reason) == (1008, "register-rejected")
        assert await http(run.address, get("/elsewhere", Upgrade="websocket", Connection="Upgrade")) == (0, {}, b"")
        status, _, _ = await http(run.address, get("/ws"))
        assert status == 404


async def test_the_connect_rate_answers_429(fast_clock):
    async with running_service(limits={"connect_rate_per_min": 1}) as run:
        url = f"{run.url}/ws?room={new_room_scope()}"
        async with open_websocket_url(url):
            pass
        with pytest.raises(ConnectionRejected) as refused:
            async with open_websocket_url(url):
                pass
        assert refused.value.status_code == 429


async def test_metrics_healthz_and_head(fast_clock):
    async with running_service() as run:
        status, headers, body = await http(run.metrics, get("/metrics"))
        assert status == 200 and headers["content-type"].startswith("text/plain")
        assert b'open4wd_signal_refusals_total{code="signal-replayed"} 0.0' in body and b"open4wd_signal_rooms 0.0" in body
        status, headers, body = await http(run.metrics, get("/metrics", "HEAD"))
        assert status == 200 and body == b"" and int(headers["content-length"]) > 0
        assert (await http(run.address, get("/healthz")))[2] == b"ok\n"
        assert (await http(run.address, get("/metrics")))[0] == 404  # never on the public port


async def test_the_drain_tells_clients_and_closes_every_socket(fast_clock):
    scope = new_room_scope()
    async with running_service() as run:
        async with SignalingClient.connect(run.url, scope, CAROL) as carol:
            events = carol.events()
            await next_event(events, Registered)
            remaining = await run.service.drain(5)
            assert await next_event(events, Error) == Error("room-closed")
            assert remaining == 1 and run.service.hub.sockets == 0
            assert (await http(run.metrics, get("/healthz")))[0] == 503


async def test_the_client_reconnects_and_registers_again(fast_clock):
    scope = new_room_scope()
    async with running_service() as first:
        port = first.address.port
        async with SignalingClient.connect(first.url, scope, ALICE) as alice:
            events = alice.events()
            await next_event(events, Registered)
            await first.service.drain(0)  # the service goes away under the client
            async with running_service(listen=first.address) as second:
                assert second.address.port == port
                assert (await next_event(events, Registered)).peers == (ALICE.peer_id,)
                assert second.service.hub.registered == 1


async def test_a_broken_websocket_handshake_costs_only_its_connection(fast_clock):
    async with running_service() as run:
        status, _, _ = await http(run.address, get(f"/ws?room={new_room_scope()}", Upgrade="websocket",
                                                   Connection="Upgrade"))  # no Sec-WebSocket-Key
        assert status in (0, 400)
        await trio.sleep(11)  # the handshake's bound (virtual time)
        assert 'open4wd_signal_refusals_total{code="request-invalid"} 1.0' in run.service.metrics.exposition().decode()
        assert (await http(run.address, get("/healthz")))[0] == 200


async def test_a_socket_that_does_not_read_is_closed_and_costs_bounded_memory(fast_clock):
    scope = new_room_scope()
    async with running_service() as run:
        now = run.service.now_ms
        url = f"{run.url}/ws?room={scope}"
        async with open_websocket_url(url, message_queue_size=1) as sink, open_websocket_url(url) as source:
            await sink.send_message(register_frame(ALICE, scope, now()))
            await source.send_message(register_frame(BOB, scope, now()))
            big = Sdp(SdpKind.OFFER, "a=" + "x" * 120_000)
            for _ in range(200):  # 24 MB: more than the sink's TCP buffers and its outbox together
                await source.send_message(sign_envelope(BOB, scope, ALICE.peer_id, big, now()).wire_text())
            with trio.fail_after(60):
                while run.service.hub.registered != 1:
                    await trio.sleep(0.1)
        codes = run.service.metrics.exposition().decode()
        assert 'open4wd_signal_refusals_total{code="slow-consumer"} 1.0' in codes


async def test_connect_fails_with_a_code_when_unreachable_or_refused(fast_clock):
    from open4wd_node.runtime.errors import UserError
    from open4wd_node.signal.coturn import free_port

    with pytest.raises(UserError) as unreachable:
        async with SignalingClient.connect(f"ws://127.0.0.1:{free_port('127.0.0.1')}", new_room_scope(), ALICE):
            pass
    assert unreachable.value.code == "signal-unreachable"
    scope = new_room_scope()
    async with running_service(limits={"max_peers": 1}) as run:
        async with SignalingClient.connect(run.url, scope, ALICE):
            with pytest.raises(UserError) as refused:
                async with SignalingClient.connect(run.url, scope, BOB):
                    pass
    assert refused.value.code == "signal-refused" and "room-full" in refused.value.message
    with pytest.raises(UserError) as bad_url:
        async with SignalingClient.connect("http://127.0.0.1:1", scope, ALICE):
            pass
    assert bad_url.value.code == "signal-url-invalid"
