"""The match runner: its waits between frames, and whose fault an error in a message handler is.

The waits are woken by what they wait for, never by a polling period. The barrier ends when the last
linked peer's ``MeshReady`` arrives (or its link is lost); the anchor wait ends when the anchor is
decided, by a message or by the session's own timer at the deadline the session names. Each keeps
its timeout. Whole-node races cover the same code end to end (``test_races.py``); here a runner is
built around a stand-in session to time each wait exactly.

The mesh hands the runner what its links deliver as ``MeshEvent``s on one channel; the tests here put
them there as its links' readers do. A ``LocalError`` (this node's bug) raised while handling a peer's
message propagates out of the handler, and the runner closes that peer's link with ``internal-error``:
only the session turns a peer's ``PeerError`` into its ``Misbehaviour``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from open4wd_base.errors import LocalError
from open4wd_node.net.listener import NodeListener
from open4wd_node.drivers.idle import IdleDriver
from open4wd_node.race.mesh import Arrived, Lost
from open4wd_node.race.runner import ANCHOR_WAIT_S, BARRIER_TIMEOUT_S, MatchRunner, RaceOptions, RaceWiring
from open4wd_node.net.reach import contact_dialler
from open4wd_node.events.sink import EventSink
from protocol.identity.keys import Identity
from protocol.race.actions import AnchorDecided
from protocol.race.mesh import MeshReady

ME, A, B = (Identity(bytes([i]) * 32) for i in (1, 2, 3))


@dataclass
class _Locked:
    """The two fields of a ``LockedStart`` a runner reads before its first round."""

    match_id: str
    roster: list[str]


class _AnchorSession:
    """A session at round end: its anchor is decided by ``tick`` at ``decide_ms`` or by any message."""

    def __init__(self, decide_ms: int | None) -> None:
        self.decide_ms = decide_ms
        self.ticks: list[int] = []
        self.decided = False

    def tick(self, now_ms: int) -> list[Any]:
        self.ticks.append(now_ms)
        if self.decide_ms is not None and now_ms >= self.decide_ms and not self.decided:
            self.decided = True
            return [AnchorDecided(0, None)]
        return []

    def next_deadline_ms(self) -> int | None:
        return None if self.decided else self.decide_ms

    def receive(self, peer: str, message: object, now_ms: int) -> list[Any]:
        self.decided = True
        return [AnchorDecided(0, {"by": peer})]


def _runner(tmp_path: Path) -> MatchRunner:
    roster = [ME.peer_id, A.peer_id, B.peer_id]
    addresses = {peer: "127.0.0.1:9" for peer in roster}
    listener = NodeListener(ME, reachability="direct")
    wiring = RaceWiring(listener, contact_dialler(listener))
    return MatchRunner(ME, EventSink(as_json=True, stream=io.StringIO()), _Locked("ab" * 32, roster),  # type: ignore[arg-type]
                       addresses, wiring, None, IdleDriver(), RaceOptions(), tmp_path)  # type: ignore[arg-type]


def _link(runner: MatchRunner, *peers: str) -> None:
    """The mesh holds a link per linked peer: the barrier waits for exactly those peers."""
    for peer in peers:
        runner.mesh.links[peer] = None  # type: ignore[assignment]  # the barrier only asks who is linked


async def arrives(runner: MatchRunner, peer: str, message: object) -> None:
    """``message`` from ``peer`` reaches the runner as the mesh delivers it."""
    await runner.mesh._hand(Arrived(peer, None, message))  # type: ignore[arg-type]


async def test_the_barrier_ends_when_the_last_linked_peer_is_ready(tmp_path, fast_clock):
    runner = _runner(tmp_path)
    _link(runner, A.peer_id, B.peer_id)

    async def peers_get_ready() -> None:
        await trio.sleep(0.3)
        await arrives(runner, A.peer_id, MeshReady(0))
        await trio.sleep(0.45)
        await arrives(runner, B.peer_id, MeshReady(1))  # another round's: not this barrier's
        await trio.sleep(0.4845)
        await arrives(runner, B.peer_id, MeshReady(0))

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peers_get_ready)
        await runner._barrier(0)
        assert round(trio.current_time() - start, 6) == 1.2345  # the instant B's MeshReady arrived
    assert runner.ready[0] == {ME.peer_id, A.peer_id, B.peer_id}


async def test_the_barrier_does_not_wait_for_a_peer_whose_link_is_lost(tmp_path, fast_clock):
    runner = _runner(tmp_path)
    _link(runner, A.peer_id, B.peer_id)
    runner._on_message(A.peer_id, MeshReady(0))

    async def lose_b() -> None:
        await trio.sleep(2.0037)
        del runner.mesh.links[B.peer_id]  # as the mesh does, then it reports the loss
        await runner.mesh._hand(Lost(B.peer_id))

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lose_b)
        await runner._barrier(0)
    assert round(trio.current_time() - start, 6) == 2.0037


async def test_the_barrier_keeps_its_timeout(tmp_path, fast_clock):
    runner = _runner(tmp_path)
    _link(runner, A.peer_id)
    start = trio.current_time()
    await runner._barrier(3)
    assert trio.current_time() - start == BARRIER_TIMEOUT_S and runner.ready[3] == {ME.peer_id}


async def test_the_anchor_wait_ticks_the_session_at_its_deadline(tmp_path, fast_clock):
    runner = _runner(tmp_path)
    session = _AnchorSession(decide_ms=runner.clock.now_ms() + 2_003)
    start = trio.current_time()
    await runner._await_anchor(session)  # type: ignore[arg-type]
    assert runner.anchor_done.is_set()
    # at the deadline (1 ms later when the clock's rounding woke it a hair early), not a polling period later
    assert round(trio.current_time() - start, 3) in (2.003, 2.004)
    assert len(session.ticks) <= 3


async def test_the_anchor_wait_ends_when_a_message_decides_it(tmp_path, fast_clock):
    runner = _runner(tmp_path)
    session = _AnchorSession(decide_ms=None)  # no timer runs: only a message can decide it
    runner._session = session  # type: ignore[assignment]

    async def signature_arrives() -> None:
        await trio.sleep(0.7)
        await arrives(runner, A.peer_id, MeshReady(9))  # not the session's: the wait goes on
        await trio.sleep(0.2013)
        await arrives(runner, A.peer_id, object())

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(signature_arrives)
        await runner._await_anchor(session)  # type: ignore[arg-type]
    assert round(trio.current_time() - start, 6) == 0.9013 and runner.anchor_done.is_set()


async def test_the_anchor_wait_keeps_its_timeout_in_the_caller(tmp_path, fast_clock):
    runner = _runner(tmp_path)
    session = _AnchorSession(decide_ms=None)
    start = trio.current_time()
    with trio.move_on_after(ANCHOR_WAIT_S):
        await runner._await_anchor(session)  # type: ignore[arg-type]
    assert trio.current_time() - start == ANCHOR_WAIT_S and not runner.anchor_done.is_set()
    assert len(session.ticks) == 1  # nothing was due: it never woke to tick again


class _BrokenSession(_AnchorSession):
    """A session with a bug: handling any message raises ``LocalError``."""

    def receive(self, peer: str, message: object, now_ms: int) -> list[Any]:
        raise LocalError("race-bug", "a bug of this node, whatever the peer sent")


async def test_a_local_error_while_handling_a_message_is_raised_not_blamed_on_the_peer(tmp_path, fast_clock):
    runner = _runner(tmp_path)
    runner._session = _BrokenSession(decide_ms=None)  # type: ignore[assignment]
    with pytest.raises(LocalError) as info:
        runner._on_message(A.peer_id, object())  # type: ignore[arg-type]
    assert info.value.code == "race-bug"
    assert runner.report.leaves == [] and not runner.anchor_done.is_set()


def test_a_lockstep_node_sends_its_inputs_as_many_frames_ahead_as_its_tick_groups_them():
    """docs/node.md "Frames per tick": in lockstep the input delay is at least frames_per_tick - 1."""
    from open4wd_node.race.runner import RaceOptions

    assert RaceOptions(mode="lockstep", frames_per_tick=3).session_input_delay == 2
    assert RaceOptions(mode="lockstep", frames_per_tick=3, input_delay=5).session_input_delay == 5
    assert RaceOptions(mode="lockstep").session_input_delay == 0
    assert RaceOptions(mode="rollback", frames_per_tick=4, input_delay=1).session_input_delay == 1
