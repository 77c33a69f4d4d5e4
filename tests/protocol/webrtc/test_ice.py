"""ICE servers, allowed host addresses, the candidate budget, paths and TURN REST credentials."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from protocol.errors import LocalError, PeerError
from protocol.webrtc.channels import Lane, LinkKind, channel_plan
from protocol.webrtc.chunks import MAX_WHOLE_BODY
from protocol.webrtc.ice import (
    CandidateBudget,
    HostAddresses,
    IceScheme,
    IceServer,
    LinkPath,
    link_path,
    offered_outside,
    turn_rest_credentials,
)
from protocol.webrtc.sdp import parse_candidate
from tests.coded import raises_coded


def test_ice_server_urls_are_checked():
    stun = IceServer.parse("stun:127.0.0.1:3478")
    assert (stun.scheme, stun.host, stun.port) == (IceScheme.STUN, "127.0.0.1", 3478)
    turn = IceServer.parse("turn:[::1]:3479?transport=udp", "u", "c")
    assert (turn.scheme, turn.host, turn.port) == (IceScheme.TURN, "::1", 3479)
    for url, user, credential in (("stun:host", None, None), ("turns:h:1", "u", "c"), ("turn:h:1", None, None),
                                  ("stun:h:1", "u", "c"), ("stun:h:0", None, None), ("http://h:1", None, None),
                                  ("stun:h:1?transport=udp", None, None), ("turn:h:1?x=y", "u", "c")):
        with raises_coded(LocalError, "ice-server-invalid"):
            IceServer.parse(url, user, credential)


def test_turn_rest_credentials_are_coturns_scheme():
    creds = turn_rest_credentials("s3cret", "zPeer", now_s=1_000, ttl_s=300)
    assert creds.username == "1300:zPeer" and creds.expires_s == 1300
    expected = base64.b64encode(hmac.new(b"s3cret", b"1300:zPeer", hashlib.sha1).digest()).decode()
    assert creds.credential == expected


def test_only_allowed_addresses_and_given_servers_may_be_offered():
    hosts = HostAddresses.only("127.0.0.1")
    turn = IceServer.parse("turn:127.0.0.1:3478", "u", "c")
    ok = [parse_candidate("candidate:1 1 udp 1 127.0.0.1 5000 typ host"),
          parse_candidate("candidate:2 1 udp 1 127.0.0.1 5001 typ relay raddr 0.0.0.0 rport 0")]
    assert offered_outside(ok, hosts, [turn]) == []
    leaked = parse_candidate("candidate:3 1 udp 1 192.0.2.2 5000 typ host")
    reflexive = parse_candidate("candidate:4 1 udp 1 198.51.100.9 5000 typ srflx")
    foreign_relay = parse_candidate("candidate:5 1 udp 1 203.0.113.1 5000 typ relay")
    assert offered_outside([*ok, leaked, reflexive, foreign_relay], hosts, []) == [ok[1], leaked, reflexive, foreign_relay]
    assert offered_outside([reflexive], hosts, [IceServer.parse("stun:127.0.0.1:3478")]) == []
    assert HostAddresses(interfaces=True).allows("192.0.2.2") and not hosts.allows("::1")
    with raises_coded(LocalError, "host-address-invalid"):
        HostAddresses.only("localhost")


def test_a_flood_of_candidates_is_refused_past_the_budget():
    budget = CandidateBudget(limit=3)
    budget.take(2)
    budget.take()
    with raises_coded(PeerError, "ice-candidate-flood"):
        budget.take()


@pytest.mark.parametrize(("local", "remote", "path"), [
    ("host", "host", LinkPath.HOST), ("host", "srflx", LinkPath.SRFLX), ("srflx", "prflx", LinkPath.PRFLX),
    ("host", "relay", LinkPath.RELAY), ("relay", "prflx", LinkPath.RELAY),
])
def test_the_path_of_a_pair(local, remote, path):
    assert link_path(local, remote) == path


def test_the_channel_plans():
    (room,) = channel_plan(LinkKind.ROOM, 262_144)
    assert (room.label, room.id, room.ordered, room.reliable, room.lane) == ("room", 0, True, True, Lane.RELIABLE)
    control, inputs = channel_plan(LinkKind.RACE, 4_000_000)
    assert (control.label, control.id, control.reliable, control.max_message_bytes) == ("control", 1, True, 4_000_000)
    assert (inputs.label, inputs.id, inputs.ordered, inputs.max_retransmits, inputs.lane) == ("race", 2, False, 0, Lane.INPUTS)
    assert inputs.max_message_bytes == MAX_WHOLE_BODY
    with raises_coded(LocalError, "channel-plan-invalid"):
        channel_plan(LinkKind.ROOM, 0)
