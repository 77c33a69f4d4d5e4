"""The address a node advertises: what invitations carry and what mesh peers dial, never a wildcard.

Over loopback only: a "router" here is a real TCP port forward from 127.0.0.2:<public port> to the
node's listener on 127.0.0.1, so a connection counted by the forward was dialled at the advertised
address and at nothing else.
"""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys

import pytest
import trio
from hypothesis import given, strategies as st

from open4wd_node.runtime.addresses import ADVERTISE, AUTOMATIC, LISTEN, Address, Advertise, parse_address
from open4wd_node.net.advertise import Source, advertised_address, primary_interface_host
from open4wd_node.net.impair import ImpairmentProxy
from open4wd_node.assets.cars import CarChoice
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.errors import UserError
from open4wd_node.net.listener import NodeListener
from open4wd_node.net.reach import with_listener
from open4wd_node.room.session import HostOptions, JoinOptions, host_room, join_room
from open4wd_node.runtime.values import ValueRejected
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation
from tests.open4wd_node.race.nodes import race_behind_proxies, short_track
from tests.recorder import Recorder
from tests.coded import raises_coded

SHORT = short_track(8.0)
HANG_S = 60  # only a hang reaches it (real processes, real sockets)


@pytest.mark.parametrize("text, expected", [
    ("127.0.0.2", Advertise("127.0.0.2")),
    ("127.0.0.2:47600", Advertise("127.0.0.2", 47600)),
    ("play.example.org", Advertise("play.example.org")),
    ("play.example.org.:1", Advertise("play.example.org", 1)),
    ("2001:db8::7", Advertise("2001:db8::7")),
    ("[2001:db8::7]", Advertise("2001:db8::7")),
    ("[2001:0db8::7]:65535", Advertise("2001:db8::7", 65535)),
    ("", AUTOMATIC),
])
def test_advertise_takes_a_host_and_an_optional_port(text, expected):
    assert ADVERTISE.check(text) == expected
    assert ADVERTISE.parse(text) == expected


@pytest.mark.parametrize("text", [
    "0.0.0.0", "0.0.0.0:47600", "::", "[::]:47600",  # wildcards: a joiner would dial itself
    "127.0.0.2:0", "127.0.0.2:65536", "127.0.0.2:-1", "host:port", "under_score.example", "999.1.1.1",
    "fe80::1", "[fe80::1%eth0]:5", "224.0.0.1", "x" * 60, "a..b", "[2001:db8::7]:", ":47600",
])
def test_advertise_refuses_what_peers_cannot_dial(text):
    with pytest.raises(ValueRejected, match="^takes "):
        ADVERTISE.check(text)


@given(st.text(max_size=80))
def test_advertise_is_a_dialable_address_or_a_refusal(text):
    try:
        value = ADVERTISE.check(text)
    except ValueRejected:
        return
    if value.automatic:
        assert not text.strip()
        return
    assert value.host not in ("0.0.0.0", "::") and value.port != 0
    assert ADVERTISE.check(str(value)) == value  # what an invitation or the room carries reads back the same
    announced = str(Address(value.host, value.port or 65535))
    assert len(announced) <= 64 and parse_address(announced) == (value.host, value.port or 65535)
    assert Invitation.parse(str(Invitation(value.host, value.port or 1, "0" * 8 + "-0000-4000-8000-" + "0" * 12,
                                           Identity(bytes(32)).peer_id, "participant", "A" * 32))).host == value.host


@given(st.text(max_size=80))
def test_listen_and_announced_addresses_are_parsed_or_refused_with_a_code(text):
    try:
        address = LISTEN.check(text)
    except ValueRejected:
        with raises_coded(UserError, "address-invalid"):
            parse_address(text)
        return
    assert 0 <= address.port <= 65535 and parse_address(str(address)) == (address.host, address.port)


def test_the_advertised_address_is_the_option_else_the_listen_address_else_the_primary_interface():
    bound = Address("127.0.0.1", 40000)
    assert advertised_address(bound, AUTOMATIC).address == bound and advertised_address(bound, AUTOMATIC).source is Source.LISTEN
    given_host = advertised_address(bound, Advertise("127.0.0.2"))
    assert given_host.address == Address("127.0.0.2", 40000) and given_host.source is Source.OPTION  # the bound port
    forwarded = advertised_address(Address("0.0.0.0", 40000), Advertise("play.example.org", 47600))
    assert forwarded.address == Address("play.example.org", 47600) and not forwarded.guessed
    for wildcard, family in (("0.0.0.0", socket.AF_INET), ("::", socket.AF_INET6)):
        guessed = advertised_address(Address(wildcard, 40000), AUTOMATIC)
        assert guessed.guessed and guessed.address.port == 40000
        assert guessed.address.host == primary_interface_host(family)[0]
        ip = ipaddress.ip_address(guessed.address.host)
        assert not ip.is_unspecified and ip.version == (4 if family == socket.AF_INET else 6)
        assert ip.is_loopback == (guessed.source is Source.LOOPBACK)  # loopback only when nothing else is routed


async def test_hosting_on_a_wildcard_invites_to_a_concrete_address_and_says_so(tmp_path, fast_clock):
    events = Recorder()
    ctx = NodeContext(tmp_path, DEFAULTS)
    options = HostOptions(min_players=2)
    with trio.move_on_after(HANG_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(with_listener, Identity(bytes([1]) * 32), "0.0.0.0", 0,
                               lambda lis: host_room(ctx, Identity(bytes([1]) * 32), options, CarChoice.parse("speed"),
                                                     events, lis))
            await events.created.wait()
            nursery.cancel_scope.cancel()
    created = events.of("room-created")[0]
    invite = Invitation.parse(created["invite"])
    port = int(created["listen"].rsplit(":", 1)[1])
    assert created["listen"] == f"0.0.0.0:{port}" and invite.port == port
    assert invite.host == primary_interface_host(socket.AF_INET)[0] and invite.host != "0.0.0.0"
    assert created["advertise"] == f"{invite.host}:{port}"
    [said] = events.of("advertise")
    assert said == {"address": created["advertise"], "listen": created["listen"], "source": said["source"]}
    assert said["source"] in (Source.PRIMARY_INTERFACE.value, Source.LOOPBACK.value)


async def test_a_host_on_every_interface_invites_to_the_address_it_is_told(tmp_path, fast_clock):
    """``host --listen 0.0.0.0:0 --advertise 127.0.0.2``: the invitation names 127.0.0.2 and the bound port,
    and a joiner that follows it forms the room."""
    recorders, outcomes = [Recorder(), Recorder()], {}
    identities = [Identity(bytes([i + 1]) * 32) for i in range(2)]
    car = CarChoice.parse("speed")

    async def host() -> None:
        options = HostOptions(min_players=2, auto_ready=True)
        outcomes[0] = await with_listener(identities[0], "0.0.0.0", 0, lambda lis: host_room(
            NodeContext(tmp_path / "h", DEFAULTS), identities[0], options, car, recorders[0], lis), Advertise("127.0.0.2"))

    async def joiner() -> None:
        await recorders[0].created.wait()
        invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])
        outcomes[1] = await with_listener(identities[1], "127.0.0.1", 0, lambda lis: join_room(
            NodeContext(tmp_path / "j", DEFAULTS), identities[1], invite, JoinOptions(auto_ready=True), car, recorders[1], lis))

    with trio.move_on_after(HANG_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host)
            nursery.start_soon(joiner)
    created = recorders[0].of("room-created")[0]
    invite = Invitation.parse(created["invite"])
    assert (invite.host, f"0.0.0.0:{invite.port}") == ("127.0.0.2", created["listen"])
    assert all(outcome.started is not None for outcome in outcomes.values()) and len(outcomes) == 2
    assert not any(rec.of("advertise") or rec.of("advertise-unreachable") for rec in recorders)


async def test_joiners_and_mesh_peers_dial_the_advertised_address(tmp_path, fast_clock):
    n = 3
    forwards = [ImpairmentProxy(listen=Address("127.0.0.2", 0)) for _ in range(n)]  # a router's forwarded ports
    recorders, codes = await race_behind_proxies(tmp_path, forwards, track_bytes=SHORT)
    public = [forward.address.port for forward in forwards]
    assert codes == {i: 0 for i in range(n)}
    assert {rec.of("result")[0]["outcome"] for rec in recorders} == {"finished"}
    invite = Invitation.parse(recorders[0].of("room-created")[0]["invite"])
    assert (invite.host, invite.port) == ("127.0.0.2", public[0])
    peers = [Identity(bytes([i + 1]) * 32).peer_id for i in range(n)]
    for i in range(n):  # the smaller PeerId dials: each node is dialled by every peer below it
        dialled_by = sum(peer < peers[i] for peer in peers)
        joiners = n - 1 if i == 0 else 0
        assert forwards[i].stats.connections >= dialled_by + joiners, (i, forwards[i].stats.connections)
    assert not any(rec.of("advertise") for rec in recorders)  # given, not guessed: nothing to say


async def test_a_joiner_on_loopback_is_warned_when_the_host_is_elsewhere(tmp_path):
    async def check(listener: NodeListener) -> list[dict]:
        seen = []
        for host in ("192.0.2.77", "play.example.org", "127.0.0.5", "localhost", "::1"):
            events = Recorder()
            listener.report_advertised(events, host)
            seen.append([d["room_host"] for d in events.of("advertise-unreachable")])
        return seen

    seen = await with_listener(Identity(bytes([2]) * 32), "127.0.0.1", 0, check)
    assert seen == [["192.0.2.77"], ["play.example.org"], [], [], []]
    reachable = await with_listener(Identity(bytes([2]) * 32), "127.0.0.1", 0, check, Advertise("127.0.0.2"))
    assert reachable == [["192.0.2.77"], ["play.example.org"], [], [], []]  # 127.0.0.2 is loopback too
    elsewhere = await with_listener(Identity(bytes([2]) * 32), "127.0.0.1", 0, check, Advertise("play.example.net"))
    assert elsewhere == [[], [], [], [], []]


def test_a_real_host_process_configured_to_listen_everywhere(tmp_path):
    """``listen`` and ``log_format`` from the data dir's node.toml: a guessed address, an event, a JSON log line."""
    (tmp_path / "node.toml").write_text('listen = "0.0.0.0:0"\nlog_format = "json"\n')
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)}
    host = subprocess.Popen([sys.executable, "-m", "open4wd_node.cli.main", "host", "--json"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        said = json.loads(host.stdout.readline())
        created = json.loads(host.stdout.readline())
    finally:
        host.send_signal(signal.SIGTERM)
        _, stderr = host.communicate(timeout=HANG_S)
    assert host.returncode == 143
    assert said["event"] == "advertise" and created["event"] == "room-created"
    invite = Invitation.parse(created["invite"])
    assert said["address"] == created["advertise"] == f"{invite.host}:{invite.port}"
    assert invite.host == primary_interface_host(socket.AF_INET)[0] and created["listen"] == f"0.0.0.0:{invite.port}"
    logs = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    [guessed] = [line for line in logs if line["event"] == "advertise-guessed"]
    assert guessed["level"] == "warning" and guessed["advertise"] == said["address"] and "--advertise" in guessed["hint"]
