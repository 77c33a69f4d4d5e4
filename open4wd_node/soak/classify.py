"""Judging one soak race from what its nodes did: one class per race, with the reason in a sentence.

Pure: it reads ``NodeObservation``s (exit status, the ``result`` event, votes, the replay's verdict,
the final state hash, ...) that ``soak.race`` gathered, and the race's plan; no process, no file.
The classes, from the worst down (the first that applies wins; docs/soak.md):

- ``hang``: a node neither ended nor progressed within the limit;
- ``crash``: a traceback, the room never formed, or a node's exit its fault does not explain;
- ``false-desync``: a disagreement (a vote, or the final state hashes of finishing nodes) that no
  injected fault explains;
- ``replay-failed``: a node's race log that ``open4wd-node replay`` does not verify;
- ``undetected``: an injected corruption no vote caught, or a flipped byte no link refused (not one
  of the issue's six: a fault the rules should have handled and did not, which no other class names);
- ``detected``: an injected fault fired and the rules handled it as docs/soak.md documents;
- ``agreed``: every node finished and agreed, with no fault (or link trouble only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from open4wd_node.soak.plan import RacePlan

REPLAY_MISMATCH = re.compile(r"replay-mismatch: round [0-9]+ frame ([0-9]+)")
KILLED = -9  # a node's exit status after SIGKILL, as ``trio.Process`` reports it


class RaceClass(StrEnum):
    """The verdict on one race."""

    AGREED = "agreed"
    DETECTED = "detected"
    FALSE_DESYNC = "false-desync"
    CRASH = "crash"
    HANG = "hang"
    REPLAY_FAILED = "replay-failed"
    UNDETECTED = "undetected"


GIVE_UP_ENDS = frozenset({"partition-void", "catch-up-impossible", "catch-up-failed"})
"""Session ends the recovery rules give a node cut off from a majority (docs/race.md)."""
VOTE_ENDS = frozenset({"persistent-desync", "consensus-invalid"})
"""Session ends the checksum votes give: outvoted three times, or a vote without a majority."""


@dataclass
class NodeObservation:
    """What one node of a race did, as the harness saw it."""

    index: int
    peer: str | None = None
    returncode: int | None = None  # None: still running when the race was stopped
    outcome: str | None = None  # its ``result`` event's outcome (finished, persistent-desync, ...)
    agreed: int = 0
    disagreements: int = 0
    disagree_frames: list[int] = field(default_factory=list)  # its ``checksum`` events that did not agree
    last_frame: int = -1
    traceback: bool = False
    error: str | None = None  # its ``error[code]: ...`` line, if it printed one
    hung: bool = False
    fault_fired: bool = False  # its own ``fault`` event (``--fault``), or the harness's signal reached it
    link_tampered: bool = False  # it refused a link as ``link-tampered``
    replay_ok: bool | None = None  # None: no log to replay
    replay_status: str | None = None
    replay_error: str | None = None
    final_hash: str | None = None  # the round-end state hash of its log


@dataclass(frozen=True)
class Verdict:
    """A race's class, why, and for a caught corruption the frames it took (corruption to leave)."""

    race_class: RaceClass
    reason: str
    detection_frames: int | None = None


def classify(plan: RacePlan, nodes: list[NodeObservation], failure: str | None = None, flipped: int = 0) -> Verdict:
    """The race's verdict (module docstring). ``failure`` is a harness-level failure (the room never
    formed), ``flipped`` how many bytes the tamper flipped."""
    hung = [n for n in nodes if n.hung or n.returncode is None]
    if hung:
        return Verdict(RaceClass.HANG, "; ".join(f"node{n.index} neither ended nor progressed (last frame {n.last_frame})"
                                                   for n in hung))
    desync = _false_desync(plan, nodes)
    crash = _crash(plan, nodes, failure, voted_off=bool(desync))
    if crash:
        return Verdict(RaceClass.CRASH, crash)
    if desync:
        return Verdict(RaceClass.FALSE_DESYNC, desync)
    bad_logs = [n for n in nodes if n.replay_ok is False and not _corrupted_log(plan, n)]
    if bad_logs:
        return Verdict(RaceClass.REPLAY_FAILED, "; ".join(f"node{n.index}'s log: {n.replay_error}" for n in bad_logs))
    return _fault_verdict(plan, nodes, flipped)


def _corrupted_log(plan: RacePlan, node: NodeObservation) -> bool:
    """The corrupted node's own log records the hashes of its corrupted state, which a replay (a clean
    re-simulation: the fault is no input) cannot reproduce from the corruption's frame on."""
    fault = plan.faults.node_fault
    if fault is None or fault.kind != "corrupt-state" or fault.node != node.index or node.replay_error is None:
        return False
    mismatch = REPLAY_MISMATCH.match(node.replay_error)
    return mismatch is not None and int(mismatch[1]) > fault.frame


def _allowed_ends(plan: RacePlan, node: int) -> frozenset[str]:
    """How ``node`` may end its match, besides finishing, under the race's faults (docs/soak.md)."""
    faults, victim = plan.faults, plan.faults.victim
    corrupt = faults.node_fault is not None and faults.node_fault.kind == "corrupt-state"
    if victim is None:
        return frozenset()
    if plan.nodes == 2:  # without the victim no side is a majority: both may give up, a 1–1 vote is a tie
        return GIVE_UP_ENDS | ({"consensus-invalid", "persistent-desync"} if corrupt else set())
    if node == victim:
        return frozenset({"persistent-desync"}) if corrupt else GIVE_UP_ENDS
    return frozenset()


def _crash(plan: RacePlan, nodes: list[NodeObservation], failure: str | None, voted_off: bool) -> str:
    """Why the race is a crash, or "". With ``voted_off`` (the race has an unexplained disagreement) the
    ends the votes give (``VOTE_ENDS``) are that disagreement's, not a crash: the race is a false desync."""
    if failure:
        return failure
    reasons = []
    for n in nodes:
        killed = plan.faults.kill is not None and plan.faults.kill.node == n.index and n.fault_fired
        if n.traceback:
            reasons.append(f"node{n.index} printed a traceback")
        elif killed and n.returncode == KILLED:
            continue
        elif n.returncode == 0 and n.outcome == "finished":
            continue
        elif n.returncode == 1 and (n.outcome in _allowed_ends(plan, n.index) or voted_off and n.outcome in VOTE_ENDS):
            continue
        else:
            what = n.error or (f"outcome {n.outcome}" if n.outcome else "no result")
            reasons.append(f"node{n.index} exited {n.returncode} ({what}), which its faults do not explain")
    return "; ".join(reasons)


def _false_desync(plan: RacePlan, nodes: list[NodeObservation]) -> str:
    fault = plan.faults.node_fault
    corrupt_from = fault.frame if fault is not None and fault.kind == "corrupt-state" else None
    reasons = []
    for n in nodes:
        unexplained = [f for f in n.disagree_frames if corrupt_from is None or f < corrupt_from]
        if unexplained or (n.disagreements and corrupt_from is None):
            reasons.append(f"node{n.index} saw {n.disagreements} disagreeing vote(s)"
                           + (f" at frames {unexplained[:5]}" if unexplained else ""))
    victim = plan.faults.victim if corrupt_from is not None else None
    finals = {n.final_hash for n in nodes if n.outcome == "finished" and n.final_hash and n.index != victim}
    if len(finals) > 1:
        reasons.append(f"the finishing nodes' final state hashes differ ({len(finals)} different)")
    return "; ".join(reasons)


def _fault_verdict(plan: RacePlan, nodes: list[NodeObservation], flipped: int) -> Verdict:
    faults = plan.faults
    everyone_finished = all(n.outcome == "finished" for n in nodes)
    if faults.node_fault is not None and faults.node_fault.kind == "corrupt-state":
        return _corruption_verdict(plan, nodes)
    if faults.tamper is not None:
        if flipped == 0:
            return Verdict(RaceClass.AGREED, "the tampered link carried fewer bytes than the flip's offset")
        if not any(n.link_tampered for n in nodes):
            return Verdict(RaceClass.UNDETECTED, f"{flipped} byte(s) flipped on a race link and no node refused it")
        return Verdict(RaceClass.DETECTED, "the flipped link was refused (link-tampered), re-dialled, and the race "
                       + ("finished in agreement" if everyone_finished else "ended as documented"))
    victim = faults.victim
    if victim is not None and any(n.fault_fired for n in nodes if n.index == victim):
        ends = ", ".join(f"node{n.index} {n.outcome or 'killed'}" for n in nodes)
        return Verdict(RaceClass.DETECTED, f"{plan.profile} of node{victim} handled: {ends}")
    if victim is not None:
        return Verdict(RaceClass.AGREED, f"the {plan.profile} fault never fired (the race ended first)")
    return Verdict(RaceClass.AGREED, f"{len(nodes)} nodes finished and agreed on every vote")


def _corruption_verdict(plan: RacePlan, nodes: list[NodeObservation]) -> Verdict:
    fault = plan.faults.node_fault
    assert fault is not None
    victim = nodes[fault.node]
    if not victim.fault_fired:
        return Verdict(RaceClass.AGREED, "the corruption never fired (the race ended first)")
    outvoted = victim.outcome == "persistent-desync"
    tie = plan.nodes == 2 and all(n.outcome == "consensus-invalid" for n in nodes)
    if not (outvoted or tie) or not victim.disagree_frames:
        return Verdict(RaceClass.UNDETECTED, f"node{victim.index} corrupted its state after frame {fault.frame} "
                                             f"and ended {victim.outcome}")
    decided = min(victim.disagree_frames) if tie else max(victim.disagree_frames)  # the vote that ended it
    how = "a 1–1 tie ended the race (consensus-invalid)" if tie else "it was voted out (persistent-desync)"
    return Verdict(RaceClass.DETECTED, f"node{victim.index} corrupted after frame {fault.frame}; {how} at vote "
                                       f"frame {decided}", decided - fault.frame)

