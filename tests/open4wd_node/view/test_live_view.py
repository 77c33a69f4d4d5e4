"""The live view: what it draws from a real round (real world, real race session), how often it draws,
and that a stuck terminal never holds up the 60 Hz frame pump."""

from __future__ import annotations

import io
import threading

import trio
from rich.console import Console

from open4wd_node.race.budget import CostPart, CostSplit
from open4wd_node.race.pump import FramePump
from open4wd_node.view.live_console import LiveConsole, Screen, showing
from open4wd_node.view.live_model import LiveBoard
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.events.vocabulary import InRound, RoundEnd, SessionEnd
from protocol.race.actions import ChecksumVoted, DesyncDetected
from open4wd_node.view.live_render import board_lines, board_renderable
from open4wd_node.race.world import WorldAdapter
from protocol.identity.keys import Identity
from protocol.race.session import RaceSession
from protocol.actions import UserEvent
from protocol.race.keys import RaceKeyBook, announce, signed_leave
from protocol.race.messages import LeaveReason
from protocol.race.recovery import LINK_GRACE_MS
from protocol.race.results import Quit, rank_with_quits
from sim_core import World
from tests.protocol.race.harness import identities, make_setup
from tests.protocol.room.harness import Net

FRAMES = 240


def short(peer: str) -> str:
    return f"…{peer[-4:]}"


def drawn(renderable) -> str:
    out = io.StringIO()
    Console(file=out, width=140, color_system=None).print(renderable)
    return out.getvalue()


def raced_round(rounds: int = 2, rollbacks_before: int = 5):
    """Four cars on the built-in demo track after 240 frames, this node (ids[0]) watching."""
    ids = identities(4)
    world = World.demo(4, seed=1)
    for _ in range(FRAMES):
        world.step({})
    setup = make_setup(ids)
    session = RaceSession(setup, ids[0], WorldAdapter(world), RaceKeyBook(setup.roster))
    console = LiveConsole(ids[0].peer_id, io.StringIO(), interactive=False, width=140)
    pump = FramePump(lambda: False, lambda: session.current_frame)
    console.watch_round(RoundWatch(0, rounds, setup.slots, world, session, pump, rollbacks_before))
    return ids, world, setup, session, console


def route(console: LiveConsole, actions) -> None:
    """What the match runner does with a session's user events (its ``_event``)."""
    for action in actions:
        if isinstance(action, UserEvent):
            console.emit(InRound(0, action))


def row_of(text: str, peer: str) -> str:
    return next(line for line in text.splitlines() if short(peer) in line)


def test_the_race_view_shows_each_car_and_this_nodes_figures():
    ids, world, setup, session, console = raced_round()
    console.emit(InRound(0, ChecksumVoted(120, True)))
    session.receive(ids[3].peer_id, announce(ids[3], session.race_id), 0)
    leave = signed_leave(ids[3].race_key(session.race_id), session.race_id, LeaveReason.DESYNC)
    route(console, session.receive(ids[3].peer_id, leave, 0))  # voted out: it says so itself (signed)
    route(console, session.peer_lost(ids[2].peer_id, 0))
    route(console, session.tick(LINK_GRACE_MS))  # no new link within the grace: lost, and shown so
    text = drawn(console.renderable())
    assert "round 1 of 2" in text and f"frame {FRAMES}" in text and "rollbacks 5" in text
    assert "last vote: agreed at frame 120" in text
    assert "desync" in row_of(text, ids[3].peer_id) and "reconnecting" in row_of(text, ids[2].peer_id)
    mine = row_of(text, ids[0].peer_id)
    assert "(you)" in mine and "racing" in mine and "1/3" in mine  # lap 1 of the track's 3
    ranked = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert ranked == ["1", "2", "3", "4"]
    assert row_of(text, ids[3].peer_id).startswith("│   4 │ ")  # the voted-out car drops to the last block
    progress = {row["slot"]: row for row in world.standings()}
    assert all(0 < progress[s]["progress_um"] for s in range(4))  # the cars did move: progress is real
    assert "%" in mine and " 0%" not in mine


def test_a_disagreeing_vote_names_the_outvoted_peer():
    ids, _, _, _, console = raced_round()
    console.emit(InRound(0, ChecksumVoted(240, False)))
    console.emit(InRound(0, DesyncDetected(240, [ids[3].peer_id], {})))
    assert f"DISAGREED at frame 240 (outvoted {short(ids[3].peer_id)})" in drawn(console.renderable())


def test_the_round_end_makes_every_status_final_dnf_and_desync():
    ids, world, setup, session, console = raced_round(rounds=1)
    slots = setup.slots
    peer_of = {slot: peer for peer, slot in slots.items()}
    rows = rank_with_quits(world.standings(), slots, {ids[3].peer_id: Quit(200, "desync")})
    standings = [dict(row, peer=peer_of[row["slot"]]) for row in rows]
    console.emit(RoundEnd(round=0, frame=FRAMES, standings=standings))
    text = drawn(console.renderable())
    assert "round 1 of 1 · over" in text
    assert "DNF" in row_of(text, ids[0].peer_id) and "desync" in row_of(text, ids[3].peer_id)
    plain = "\n".join(console.plain())
    assert "\x1b" not in plain and "round 1 of 1 · over" in plain
    assert "DNF" in row_of(plain, ids[1].peer_id) and "desync" in row_of(plain, ids[3].peer_id)
    printed = console.screen.queued[-1]  # the event line, queued for the screen
    assert printed.startswith(f"round 1 over at frame {FRAMES}:")
    assert f"4. {short(ids[3].peer_id)}  1 pts  desync (voted out)" in printed
    assert "pts  DNF" in printed and "finished" not in printed


def test_this_nodes_own_row_says_desync_once_it_was_voted_out():
    ids, _, _, _, console = raced_round()
    console.emit(SessionEnd(round=0, reason="persistent-desync", detail="three minority votes in a row"))
    assert "desync" in row_of(drawn(console.renderable()), ids[0].peer_id)


def test_the_room_view_shows_members_versions_ready_notices_and_the_countdown():
    people = [Identity(bytes([i + 1]) * 32) for i in range(3)]
    net = Net(people[0], min_players=3)
    net.add_member(people[1])
    net.add_member(people[2], auto_ready=False)
    board = LiveBoard(people[0].peer_id)
    board.room_changed(net.members[people[0].peer_id])
    board.on_event("notice", {"kind": "data-may-differ", "text": "a car's data may differ"})
    text = drawn(board_renderable(board, 0))
    assert f"room {net.room_id[:8]}… · collecting · 3/8 players (start at 3) · 0 spectating" in text
    assert "(host)" in row_of(text, people[0].peer_id) and "this node" in row_of(text, people[0].peer_id)
    assert "READY" in row_of(text, people[1].peer_id) and "not ready" in row_of(text, people[2].peer_id)
    assert "notice [data-may-differ] a car's data may differ" in text
    assert "racing in" not in text
    board.on_event("countdown", {"match_id": "ab" * 32, "deadline_ms": 10_000})
    assert "start locked: racing in 3 s" in drawn(board_renderable(board, 7_500))
    plain = board_lines(board)
    assert plain[0].startswith("── room") and len(plain) == 4 and "\x1b" not in "".join(plain)


class CountingView:
    def __init__(self) -> None:
        self.calls = 0

    def renderable(self):
        self.calls += 1
        return f"view {self.calls}"

    def plain(self) -> list[str]:
        self.calls += 1
        return [f"── view {self.calls}"]


async def pump_frames(frames: int) -> FramePump:
    stepped = 0

    def step() -> bool:
        nonlocal stepped
        stepped += 1
        return True

    pump = FramePump(step, lambda: stepped)
    await pump.run(lambda: stepped >= frames)
    return pump


async def test_the_view_draws_at_most_four_times_a_second_and_never_per_frame(autojump_clock):
    screen, view = Screen(io.StringIO(), interactive=True, width=80), CountingView()
    async with showing(screen, view):
        pump = await pump_frames(600)  # 10 s at 60 Hz
    assert pump.max_lag == 0
    # at most one draw per 15 frames (+ the last one); fewer when a write spans several ticks (the pump goes on)
    assert 1 <= screen.draws <= 600 // 15 + 1
    assert view.calls == screen.draws  # the view is read when it is drawn, never by the frame path
    assert "view" in screen.stream.getvalue() and "\x1b[" in screen.stream.getvalue()


class StuckTerminal(io.StringIO):
    """A terminal that takes no output until ``gate`` opens (a paused terminal, a blocked pipe)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def write(self, text: str) -> int:
        assert self.gate.wait(60), "the terminal was never released"  # only a hang reaches the limit
        return super().write(text)


async def test_a_stuck_terminal_never_holds_up_the_frame_pump(autojump_clock):
    stream = StuckTerminal()
    screen = Screen(stream, interactive=True, width=80)
    async with showing(screen, CountingView()):
        screen.line("a line to write")
        pump = await pump_frames(600)
        assert pump.max_lag == 0 and screen.draws == 1  # the first write is still stuck, the frames went on
        stream.gate.set()
        await trio.sleep(1)
    assert screen.draws >= 2 and "a line to write" in stream.getvalue()


async def test_off_a_terminal_the_view_is_plain_lines_at_most_every_five_seconds(autojump_clock):
    screen, view = Screen(io.StringIO(), interactive=False), CountingView()
    async with showing(screen, view):
        for second in range(20):
            screen.line(f"event {second}")
            await trio.sleep(1)
    out = screen.stream.getvalue()
    assert "\x1b" not in out
    assert [f"event {s}" for s in range(20)] == [line for line in out.splitlines() if line.startswith("event")]
    # at most every 5 s (+ the first and the last); fewer when a write spans several seconds of the autojump
    # clock (it jumps whenever the trio tasks all wait, a worker thread's write included)
    assert 1 <= out.count("── view") <= 20 // 5 + 2


def test_a_racer_sees_its_cpu_per_frame_and_the_parts_that_take_it():
    ids = identities(4)
    world = World.demo(4, seed=1)
    setup = make_setup(ids)
    session = RaceSession(setup, ids[0], WorldAdapter(world), RaceKeyBook(setup.roster))
    console = LiveConsole(ids[0].peer_id, io.StringIO(), interactive=False, width=140)
    pump = FramePump(lambda: False, lambda: session.current_frame)
    nanos = dict.fromkeys(CostPart, 0) | {CostPart.STEP: 400_000_000, CostPart.LINK: 200_000_000, CostPart.SHELL: 197_000_000,
                                          CostPart.INPUT: 3_000_000}
    console.watch_round(RoundWatch(0, 1, setup.slots, world, session, pump, 0, lambda: CostSplit(1000, nanos)))
    text = drawn(console.renderable())
    (line,) = [line for line in text.splitlines() if "ms/frame" in line]
    assert "CPU 0.80 ms/frame · step 50% · link 25% · shell 25%" in line
    assert "input" not in line  # under 1 %: left out
    pump = FramePump(lambda: False, lambda: session.current_frame, frames_per_tick=3)
    console.watch_round(RoundWatch(0, 1, setup.slots, world, session, pump, 0, lambda: CostSplit(1000, nanos)))
    assert "CPU 0.80 ms/frame (3 frames/tick) · step 50%" in drawn(console.renderable())


def test_a_spectator_has_no_budget_line():
    ids, world, setup, session, console = raced_round()
    assert "ms/frame" not in drawn(console.renderable())
