"""The player's stdin commands: a command the member machine refuses (a ``LocalError``) is shown as an
``error`` event and the seat goes on; a bug while routing the machine's answer is not mistaken for one."""

import io
import sys

import pytest

from open4wd_node.room.driver import RoomDriver, read_player_commands
from protocol.errors import LocalError
from protocol.identity.keys import Identity
from protocol.room.member import MemberRoom
from protocol.room.messages import CancelReady
from protocol.room.states import Role
from protocol.versions.record import node_version_info
from tests.protocol.room.harness import FakeAssets
from tests.recorder import Recorder

ME, HOST = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)


def driver_for(role: Role) -> tuple[RoomDriver, Recorder]:
    member = MemberRoom(ME, "room", HOST.peer_id, role, node_version_info("sim_core/1", 1, 0, "t"), FakeAssets())
    events = Recorder()
    return RoomDriver(member, events, transfer=None), events


async def test_a_refused_command_is_shown_and_the_next_one_runs(monkeypatch):
    driver, events = driver_for(Role.SPECTATOR)
    routed = []
    monkeypatch.setattr(driver, "from_member", routed.append)
    monkeypatch.setattr(sys, "stdin", io.StringIO("ready\ncancel\njump\n"))
    await read_player_commands(driver)
    assert events.events == [
        ("error", {"code": "not-allowed", "message": "only a participant with a car can declare Ready"}),
        ("error", {"code": "not-allowed", "message": "only a participant has a Ready to cancel"}),
        ("error", {"code": "unknown-command", "message": "commands: ready | cancel | leave"}),
    ]
    assert [a for actions in routed for a in actions] == []  # a spectator's cancel never leaves: the host would blame it


async def test_a_participants_cancel_is_sent(monkeypatch):
    driver, events = driver_for(Role.PARTICIPANT)
    routed = []
    monkeypatch.setattr(driver, "from_member", routed.append)
    monkeypatch.setattr(sys, "stdin", io.StringIO("cancel\n"))
    await read_player_commands(driver)
    assert [type(a.message) for actions in routed for a in actions] == [CancelReady] and events.events == []


async def test_a_bug_while_routing_a_command_is_raised_not_shown(monkeypatch):
    driver, events = driver_for(Role.PARTICIPANT)

    def broken(actions):
        raise LocalError("bug", "a bug in the routing")

    monkeypatch.setattr(driver, "from_member", broken)
    monkeypatch.setattr(sys, "stdin", io.StringIO("cancel\n"))
    with pytest.raises(LocalError):
        await read_player_commands(driver)
    assert events.events == []
