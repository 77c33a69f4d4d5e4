"""``POST /turn-token`` over real HTTP: the spec's body, order of checks and status codes with JSON error
bodies, the bounds, CORS (the preflight the spec's server cannot answer, an allow-list), and this
project's client fetching credentials with a fresh proof."""

from __future__ import annotations

import json

import pytest

from open4wd_node.runtime.errors import UserError
from open4wd_node.signal.client import SignalingClient, http_post
from protocol.errors import ProtocolError
from protocol.signaling.proof import TURN_TOKEN_ROOM, build_proof
from protocol.signaling.scope import new_room_scope
from protocol.signaling.turn import decode_turn_reply, turn_credential, turn_request_body
from tests.open4wd_node.signal.helpers import SECRET, get, http, post, running_service
from tests.protocol.signaling.helpers import ALICE, BOB
from tests.coded import raises_coded


def body_of(identity, now_ms, room=TURN_TOKEN_ROOM, **changes) -> bytes:
    proof = build_proof(identity, room, now_ms).to_json()
    return json.dumps({"peerId": identity.peer_id, "proof": {**proof, **changes}}).encode()


async def test_credentials_are_minted_with_the_spec_shape_and_codes(fast_clock):
    async with running_service(SECRET, limits={"turn_rate_per_min": 5}) as run:
        now = run.service.now_ms()
        good = body_of(ALICE, now)
        status, headers, reply = await http(run.address, post("/turn-token", good))
        assert status == 200 and headers["content-type"] == "application/json"
        assert headers["access-control-allow-origin"] == "*"
        minted = json.loads(reply)
        assert list(minted) == ["urls", "username", "credential", "ttlSec"] and minted["ttlSec"] == 300
        assert minted["username"] == f"{now // 1000 + 300}:{ALICE.peer_id}"
        assert minted["credential"] == turn_credential(SECRET, minted["username"])
        cases = [
            (good, 409, "nonce-replayed"),
            (body_of(BOB, now, signatureHex="0" * 128), 403, "invalid-proof"),  # forged
            (body_of(ALICE, now, room=new_room_scope()), 403, "invalid-proof"),  # a room's proof
            (body_of(ALICE, now - 31_000), 403, "invalid-proof"),
            (body_of(ALICE, now, nonce="hello"), 400, "invalid-request"),  # stricter than the WS register
            (json.dumps({"peerId": ALICE.peer_id}).encode(), 400, "invalid-request"),
            (b"not json", 400, "invalid-request"),
        ]
        for body, want, code in cases:
            status, _, reply = await http(run.address, post("/turn-token", body))
            assert (status, json.loads(reply)) == (want, {"error": code}), body
        status, _, reply = await http(run.address, post("/turn-token", body_of(ALICE, now)))
        assert (status, json.loads(reply)) == (429, {"error": "rate-limited"})  # 400s spent no budget
        status, _, reply = await http(run.address, post("/turn-token", b"{" + b" " * 5000 + b"}"))
        assert (status, json.loads(reply)) == (413, {"error": "body-too-large"})
        metrics = run.service.metrics.exposition().decode()
        assert 'open4wd_signal_refusals_total{code="turn-proof-invalid"} 3.0' in metrics
        assert "open4wd_signal_turn_tokens_total 1.0" in metrics


async def test_the_preflight_and_an_origin_allow_list(fast_clock):
    async with running_service(SECRET, cors_origins=("https://game.example",)) as run:
        status, headers, _ = await http(run.address, get("/turn-token", "OPTIONS", Origin="https://game.example",
                                                          Access_Control_Request_Method="POST"))
        assert status == 204 and headers["access-control-allow-origin"] == "https://game.example"
        assert headers["access-control-allow-methods"] == "POST, OPTIONS" and headers["vary"] == "Origin"
        status, headers, _ = await http(run.address, get("/turn-token", "OPTIONS", Origin="https://evil.example"))
        assert status == 204 and "access-control-allow-origin" not in headers
        status, headers, _ = await http(run.address, post("/turn-token", body_of(ALICE, run.service.now_ms()),
                                                          Origin="https://evil.example"))
        assert status == 200 and "access-control-allow-origin" not in headers  # a browser will not let the page read it
        status, _, _ = await http(run.address, get(f"/ws?room={new_room_scope()}", Origin="https://evil.example",
                                                   Upgrade="websocket", Connection="Upgrade",
                                                   Sec_WebSocket_Key="dGhlIHNhbXBsZSBub25jZQ==",
                                                   Sec_WebSocket_Version="13"))
        assert status == 403


async def test_without_turn_the_endpoint_is_404(fast_clock):
    async with running_service() as run:
        assert (await http(run.address, post("/turn-token", body_of(ALICE, run.service.now_ms()))))[0] == 404


async def test_the_client_fetches_credentials_and_bounds_the_reply(fast_clock):
    scope = new_room_scope()
    async with running_service(SECRET) as run:
        async with SignalingClient.connect(run.url, scope, ALICE) as alice:
            credentials = await alice.turn_credentials()
            again = await alice.turn_credentials()  # a fresh proof each time
        assert credentials.urls == ("turn:127.0.0.1:3478",) and credentials.username.endswith(ALICE.peer_id)
        assert again.credential == turn_credential(SECRET, again.username)
        assert run.service.metrics.turn_tokens._value.get() == 2  # two proofs, two nonces: both minted


async def test_a_reply_over_the_bound_is_refused(fast_clock):
    async with running_service(SECRET) as run:
        with pytest.raises(ProtocolError) as refused:
            await http_post(f"http://{run.address}/turn-token", turn_request_body(BOB, run.service.now_ms()), max_reply=16)
        assert refused.value.code == "turn-reply-invalid"
    with pytest.raises(UserError) as unreachable:
        await http_post(f"http://{run.address}/turn-token", b"{}", max_reply=16)
    assert unreachable.value.code == "turn-token-unreachable"


@pytest.mark.parametrize("body", [b"[]", b'{"urls":[],"username":"u","credential":"c","ttlSec":300}',
                                  b'{"urls":["http://x"],"username":"u","credential":"c","ttlSec":300}',
                                  b'{"urls":["turn:x"],"username":"u","credential":"c","ttlSec":0}',
                                  b'{"urls":["turn:x"],"username":"u","credential":"c","ttlSec":300' + b" " * 40000 + b"}"])
def test_bad_replies_are_refused(body):
    with raises_coded(ProtocolError, "turn-reply-invalid"):
        decode_turn_reply(body)
