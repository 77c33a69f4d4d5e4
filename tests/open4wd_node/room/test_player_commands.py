"""``read_player_commands``: a command the seat refuses is shown to the player; a bug is raised.

Whether the member machine calls a refused command a protocol rule (``ProtocolError``) or a local
misuse (``LocalError``), the player typed it at the wrong moment and is told so in an ``error`` event.
A ``LocalError`` from routing the seat's answer is this node's bug: it propagates.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
import trio

from open4wd_base.errors import LocalError
from open4wd_node.room.driver import read_player_commands
from open4wd_node.runtime.clock import NodeClock
from protocol.errors import ProtocolError
from tests.recorder import Recorder


class _Seat:
    """A member machine whose ``ready`` is refused with ``refusal``; ``cancel`` is accepted."""

    def __init__(self, refusal: Exception) -> None:
        self.refusal = refusal

    def declare_ready(self, now_ms: int) -> list[object]:
        raise self.refusal

    def cancel_ready(self) -> list[object]:
        return ["cancelled"]

    def leave(self) -> list[object]:
        return ["left"]


class _Driver:
    """What ``read_player_commands`` uses of a ``RoomDriver``."""

    def __init__(self, member: _Seat, routing_bug: bool = False) -> None:
        self.member = member
        self.clock = NodeClock()
        self.events = Recorder()
        self.done = trio.Event()
        self.routed: list[Any] = []
        self.routing_bug = routing_bug

    def from_member(self, actions: list[object]) -> None:
        if self.routing_bug:
            raise LocalError("room-not-running", "a bug of this node")
        self.routed += actions

    def handle_error(self, exc: ProtocolError | LocalError) -> None:
        self.events.emit("error", code=exc.code, message=exc.message)


@pytest.mark.parametrize("refusal", [ProtocolError("not-allowed", "no car yet"), LocalError("not-allowed", "no car yet")])
async def test_a_refused_command_is_shown_and_the_next_one_is_read(monkeypatch, refusal):
    monkeypatch.setattr("sys.stdin", io.StringIO("ready\nnonsense\ncancel\nleave\n"))
    driver = _Driver(_Seat(refusal))
    await read_player_commands(driver)  # type: ignore[arg-type]
    assert [d["code"] for d in driver.events.of("error")] == ["not-allowed", "unknown-command", "left"]
    assert driver.routed == ["cancelled", "left"] and driver.done.is_set()


async def test_a_local_error_from_routing_the_seats_answer_propagates(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("cancel\n"))
    driver = _Driver(_Seat(ProtocolError("not-allowed", "")), routing_bug=True)
    with pytest.raises(LocalError):
        await read_player_commands(driver)  # type: ignore[arg-type]
    assert driver.events.of("error") == []
