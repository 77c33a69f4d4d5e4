"""The host's phase table (``protocol.room.phases``): every legal move, every other one refused as this
node's bug, and no phase assigned in the room machines except through the table."""

import ast
import itertools

import pytest

from protocol.errors import LocalError
from protocol.room.phases import INITIAL_PHASE, TRANSITIONS, PhaseChange, next_phase
from protocol.room.states import RoomPhase
from tests.layout import REPO_ROOT

P, C = RoomPhase, PhaseChange
LEGAL = {
    (P.COLLECTING, C.READY_SET_FORMED, P.VERIFYING),
    (P.VERIFYING, C.ALL_ACKED, P.GRID_COMMIT),
    (P.VERIFYING, C.CEREMONY_DROPPED, P.COLLECTING),
    (P.VERIFYING, C.READY_SET_JUDGED, P.COLLECTING),
    (P.GRID_COMMIT, C.ALL_COMMITTED, P.GRID_REVEAL),
    (P.GRID_COMMIT, C.CEREMONY_DROPPED, P.COLLECTING),
    (P.GRID_COMMIT, C.GRID_TIMED_OUT, P.COLLECTING),
    (P.GRID_REVEAL, C.ALL_REVEALED, P.COUNTDOWN),
    (P.GRID_REVEAL, C.CEREMONY_DROPPED, P.COLLECTING),
    (P.GRID_REVEAL, C.GRID_TIMED_OUT, P.COLLECTING),
    (P.COUNTDOWN, C.COUNTDOWN_ENDED, P.STARTED),
    (P.COUNTDOWN, C.COUNTDOWN_CANCELLED, P.COLLECTING),
}
"""The Ready ceremony's moves (spec/rooms.md §4), written out apart from the table they check."""


def test_the_table_holds_exactly_the_legal_moves_for_every_phase():
    assert set(TRANSITIONS) == set(RoomPhase)
    assert {(phase, change, target) for phase, moves in TRANSITIONS.items() for change, target in moves.items()} == LEGAL


@pytest.mark.parametrize(("phase", "change", "target"), sorted(LEGAL, key=str))
def test_every_legal_move(phase, change, target):
    assert next_phase(phase, change) is target


ILLEGAL = sorted(((phase, change) for phase, change in itertools.product(RoomPhase, PhaseChange)
                  if not any(m[:2] == (phase, change) for m in LEGAL)), key=str)


@pytest.mark.parametrize(("phase", "change"), ILLEGAL)
def test_every_other_move_is_refused_as_this_node_s_bug(phase, change):
    with pytest.raises(LocalError) as refused:
        next_phase(phase, change)
    assert refused.value.code == "room-phase-illegal"


def test_every_phase_but_closed_is_reachable_from_the_start_and_can_reach_the_start():
    reached, frontier = {INITIAL_PHASE}, [INITIAL_PHASE]
    while frontier:
        for target in TRANSITIONS[frontier.pop()].values():
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(RoomPhase) - {RoomPhase.CLOSED}
    assert all(INITIAL_PHASE in TRANSITIONS[p].values() for p in reached - {INITIAL_PHASE, RoomPhase.STARTED})


@pytest.mark.parametrize("module", ["host", "member"])
def test_a_room_machine_assigns_a_phase_only_through_the_table(module):
    tree = ast.parse((REPO_ROOT / "protocol" / "room" / f"{module}.py").read_text(encoding="utf-8"))
    assigned = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                if any(isinstance(t, ast.Attribute) and t.attr == "phase" for t in names):
                    assigned.append(ast.unparse(node))
    allowed = {"self.phase = INITIAL_PHASE", "self.phase = next_phase(self.phase, change)"}
    assert set(assigned) <= allowed
