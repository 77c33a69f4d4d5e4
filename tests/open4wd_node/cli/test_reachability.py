"""``--reachability relay`` is TURN only: a node that accepts no direct link is reached only through a
signaling service and a TURN server, so without either it is a usage error up front (exit 2, before any
identity, socket or room), never a link that fails later. What configured the retired circuit relay is
refused with a code: its key and table in a file, its flag, its command, an invitation naming one."""

from __future__ import annotations

import uuid

import pytest

from protocol.identity.keys import Identity
from protocol.room.invitation import new_secret
from tests.open4wd_node.cli.test_bad_inputs import cli

HOST = Identity(bytes([9]) * 32).peer_id
ROOM = str(uuid.UUID(int=7, version=4))
INVITE = f"open4wd:///{ROOM}?host={HOST}&signal=ws://127.0.0.1:9#participant={new_secret()}"
SPECTATE = INVITE.replace("#participant=", "#spectator=")


@pytest.mark.parametrize(("argv", "code"), [
    (["host", "--reachability", "relay", "--json"], "reachability-relay-needs-signal"),
    (["join", INVITE, "--reachability", "relay", "--json"], "reachability-relay-needs-signal"),
    (["host", "--reachability", "relay", "--signal", "ws://127.0.0.1:9", "--json"], "reachability-relay-needs-turn"),
    (["join", INVITE, "--reachability", "relay", "--signal", "ws://127.0.0.1:9", "--ice-server", "stun:127.0.0.1:9",
      "--json"], "reachability-relay-needs-turn"),
    (["watch", SPECTATE, "--reachability", "relay", "--signal", "ws://127.0.0.1:9", "--json"],
     "reachability-relay-needs-turn"),
])
def test_relay_only_without_a_service_or_a_turn_server_is_a_usage_error(capsys, tmp_path, argv, code):
    outcome = cli(capsys, tmp_path, *argv).refused(code, status=2)
    outcome.json_error(code)
    assert not (tmp_path / "data" / "identity.key").exists()  # refused before anything was made


def test_relay_only_from_the_configuration_file_is_refused_the_same_way(capsys, tmp_path):
    config = tmp_path / "node.toml"
    config.write_text('reachability = "relay"\nsignals = ["ws://127.0.0.1:9"]\n')
    cli(capsys, tmp_path, "--config", str(config), "host").refused("reachability-relay-needs-turn", status=2)


@pytest.mark.parametrize("text", ['relays = ["127.0.0.1:4100"]\n', "[relay]\nlisten = \"0.0.0.0:4100\"\n",
                                  "relay = 3\n"])
def test_an_old_configuration_naming_the_relay_is_refused_with_a_code(capsys, tmp_path, text):
    config = tmp_path / "node.toml"
    config.write_text(text)
    outcome = cli(capsys, tmp_path, "--config", str(config), "host").refused("config-relay-retired")
    assert "--signal" in outcome.err and "turn:" in outcome.err


@pytest.mark.parametrize("argv", [["relay", "--listen", "127.0.0.1:0"], ["host", "--relay", "127.0.0.1:4100"]])
def test_the_relay_command_and_flag_are_gone(capsys, tmp_path, argv):
    cli(capsys, tmp_path, *argv).refused("usage", status=2)


def test_an_invitation_naming_a_relay_is_refused_with_a_code_that_says_what_replaced_it(capsys, tmp_path):
    old = f"open4wd://127.0.0.1:47600/{ROOM}?host={HOST}&relay=127.0.0.1:4100#participant={new_secret()}"
    outcome = cli(capsys, tmp_path, "join", old).refused("invitation-relay-retired")
    assert "&signal=" in outcome.err and "TURN" in outcome.err
