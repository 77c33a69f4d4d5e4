"""The player's stdin commands: a command the member machine refuses (a ``LocalError``) is shown as an
``error`` event and the seat goes on; a bug while routing the machine's answer is not mistaken for one."""

import io
import sys

from open4wd_node.room.driver import RoomDriver, read_player_commands
from protocol.errors import LocalError
from protocol.identity.keys import Identity
from protocol.room.member import MemberRoom
from protocol.room.messages import CancelReady
from protocol.room.states import Role
from protocol.versions.record import node_version_info
from tests.protocol.room.harness import FakeAssets
from tests.recorder import Recorder
from tests.coded import raises_coded

ME, HOST = Identity(bytes([1]) * 32), Identity(bytes([2]) * 32)


def driver_for(role: Role) -> tuple[RoomDriver, Recorder]:
    member = MemberRoom(ME, "room", HOST.peer_id, role, node_version_info("sim_core/1", 1, 0, "t"), FakeAssets())
    events = Recorder()
    return RoomDriver(member, events, transfer=None), events


async def typed(monkeypatch, role: Role, lines: str) -> tuple[list, Recorder]:
    """The seat of ``role`` reads ``lines`` as its stdin: what it sent (routed actions) and what it showed."""
    driver, events = driver_for(role)
    routed = []
    monkeypatch.setattr(driver, "from_member", routed.append)
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    await read_player_commands(driver)
    return [a for actions in routed for a in actions], events


async def test_a_refused_command_is_shown_and_the_next_one_runs(monkeypatch):
    sent, events = await typed(monkeypatch, Role.SPECTATOR, "ready\ncancel\njump\n")
    assert events.events == [
        ("error", {"code": "not-allowed", "message": "only a participant with a car can declare Ready"}),
        ("error", {"code": "not-allowed", "message": "only a participant has a Ready to cancel"}),
        ("error", {"code": "unknown-command", "message": "commands: ready | cancel | leave"}),
    ]
    assert sent == []  # a spectator's cancel never leaves: the host would blame it


async def test_a_participants_cancel_is_sent(monkeypatch):
    sent, events = await typed(monkeypatch, Role.PARTICIPANT, "cancel\n")
    assert [type(a.message) for a in sent] == [CancelReady] and events.events == []


async def test_a_bug_while_routing_a_command_is_raised_not_shown(monkeypatch):
    driver, events = driver_for(Role.PARTICIPANT)

    def broken(actions):
        raise LocalError("bug", "a bug in the routing")

    monkeypatch.setattr(driver, "from_member", broken)
    monkeypatch.setattr(sys, "stdin", io.StringIO("cancel\n"))
    with raises_coded(LocalError, "bug"):
        await read_player_commands(driver)
    assert events.events == []
