"""Of several TURN servers a link uses the first that answers: aiortc takes only the first TURN server it
is given, so with the first one dead a relay-only link gathers nothing, and the node puts an answering one
first (``turn_choice``). Real coturn on 127.0.0.1; the dead server is a port nothing is bound to."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.webrtc.connector import webrtc_endpoint
from open4wd_node.net.webrtc.signaling import SignalingHub
from open4wd_node.net.webrtc.turn_choice import answering_first, answers
from open4wd_node.signal.coturn import free_port, local_coturn
from protocol.link.lane import Lane
from protocol.webrtc.channels import LinkKind
from protocol.webrtc.ice import IceServer, IceTransportPolicy, LinkPath, turn_rest_credentials
from tests.open4wd_node.net.webrtc.helpers import ALICE, ANY, BOB, LOOPBACK, SCOPE, open_pair
from tests.services import require_binary


def relay_only(servers):
    return replace(LOOPBACK, ice_servers=tuple(servers), policy=IceTransportPolicy.RELAY)


def turn(url, secret, peer):
    creds = turn_rest_credentials(secret, peer, int(time.time()))
    return IceServer.parse(url, creds.username, creds.credential)


async def test_a_dead_port_refuses_at_once_and_a_coturn_answers():
    require_binary("turnserver", "coturn")
    async with local_coturn() as coturn:
        assert await answers(coturn.settings.host, coturn.settings.port)
        with trio.fail_after(30):  # a refusal is known without the silent server's wait
            assert not await answers("127.0.0.1", free_port("127.0.0.1"), wait_s=3600)


async def test_two_turn_servers_the_first_dead_the_link_forms_through_the_second():
    require_binary("turnserver", "coturn")
    async with local_coturn() as coturn:
        dead_url = f"turn:127.0.0.1:{free_port('127.0.0.1')}"
        secret = coturn.settings.secret
        given = {peer: (turn(dead_url, secret, peer), turn(coturn.turn_url, secret, peer))
                 for peer in (ALICE.peer_id, BOB.peer_id)}
        hub = SignalingHub(SCOPE)
        hub.endpoint(BOB.peer_id)
        async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.NODE, relay_only(given[ALICE.peer_id])) as alone:
            with pytest.raises(LinkClosed) as refused:  # as given, aiortc asks only the dead one
                await alone.connect(BOB.peer_id)
            assert refused.value.code == "ice-no-candidates"

        chosen = {peer: await answering_first(servers) for peer, servers in given.items()}
        assert all(servers[0].url == coturn.turn_url and servers[1].url == dead_url for servers in chosen.values())
        hub = SignalingHub(SCOPE)
        async with webrtc_endpoint(hub.endpoint(ALICE.peer_id), LinkKind.NODE, relay_only(chosen[ALICE.peer_id])) as alice, \
                webrtc_endpoint(hub.endpoint(BOB.peer_id), LinkKind.NODE, relay_only(chosen[BOB.peer_id])) as bob:
            a, b = await open_pair(alice, bob)
            assert a.path == b.path == LinkPath.RELAY
            await b.send(b"through the second", Lane.CONTROL)
            assert await a.receive(ANY) == b"through the second"


async def test_the_first_answering_server_keeps_its_place_and_one_server_is_not_asked():
    require_binary("turnserver", "coturn")
    async with local_coturn() as first, local_coturn() as second:
        stun = IceServer.parse(first.stun_url)
        both = (stun, turn(first.turn_url, "x", "p"), turn(second.turn_url, "x", "p"))
        assert await answering_first(both) == both  # both answer: the order given stands
        dead = turn(f"turn:127.0.0.1:{free_port('127.0.0.1')}", "x", "p")
        assert await answering_first((dead,)) == (dead,)  # nothing to choose
        assert await answering_first((dead, both[2], stun)) == (both[2], dead, stun)
        nobody = (dead, turn(f"turn:127.0.0.1:{free_port('127.0.0.1')}", "x", "p"))
        assert await answering_first(nobody) == nobody  # none answers: left as given, the link fails with its code
