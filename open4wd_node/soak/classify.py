"""Judging one soak race from what its nodes did: one class per race, with the reason in a sentence.

Pure: it reads ``NodeObservation``s (exit status, the ``result`` event, votes, the replay's verdict,
the final state hash, ...) that ``soak.race`` gathered of the race's nodes, of its spectators (``watch``
processes: their hash checks are their votes), and the race's plan; no
process, no file. The classes, from the worst down (the first that applies wins; docs/soak.md):

- ``hang``: a node or a spectator neither ended nor progressed within the limit;
- ``crash``: a traceback (a node's or a spectator's), the room never formed, an exit the faults do not
  explain, or (profile ``turn``) a link that did not go through coturn;
- ``false-desync``: a disagreement (a vote, or the final state hashes of finishing nodes) that no
  injected fault explains;
- ``spectator-desync``: a spectator whose own state disagreed with the players' agreed hash (a hash
  check that failed, an ``error`` end: it could not reproduce the race) or whose round ended on another
  state than the players' (not one of the issue's six: the spectators profile's own finding);
- ``replay-failed``: a node's or a spectator's race log that ``open4wd-node replay`` does not verify;
- ``undetected``: an injected corruption no vote caught, or a flipped byte no link refused (a fault the
  rules should have handled and did not, which no other class names);
- ``detected``: an injected fault fired and the rules handled it as docs/soak.md documents;
- ``slow``: every node finished and agreed, but the race ran below ``SLOW_BELOW`` of real time (its
  ``realtime_ratio``): for players it failed;
- ``agreed``: every node finished and agreed, with no fault (or link trouble only), in real time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from open4wd_node.soak.plan import RacePlan
from open4wd_node.soak.profiles import LinkTransport, SpectatorFaultKind
from protocol.identity.keys import PeerId

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
    SPECTATOR_DESYNC = "spectator-desync"
    SLOW = "slow"


GIVE_UP_ENDS = frozenset({"partition-void", "catch-up-impossible", "catch-up-failed"})
"""Session ends the recovery rules give a node cut off from a majority (docs/race.md)."""
VOTE_ENDS = frozenset({"persistent-desync", "consensus-invalid"})
"""Session ends the checksum votes give: outvoted three times, or a vote without a majority."""
SPECTATOR_RACE_ENDS = frozenset({"consensus-invalid", "partition-void"})
"""A spectator's session ends that are the race's own end (docs/spectate.md): allowed when a racer ended so."""
SPECTATOR_ERROR = "error"
"""A spectator's end when its own state disagreed twice at one vote frame: it cannot reproduce the race."""
SOURCE_UNAVAILABLE = "source-unavailable"
SLOW_BELOW = 0.9
"""The ``realtime_ratio`` below which a race that agreed is ``slow``: a tenth behind real time is a race
players feel dragging."""


@dataclass
class NodeObservation:
    """What one node of a race did, as the harness saw it."""

    index: int
    peer: PeerId | None = None
    returncode: int | None = None  # None: still running when the race was stopped
    outcome: str | None = None  # its ``result`` event's outcome (finished, persistent-desync, ...)
    agreed: int = 0
    disagreements: int = 0  # a spectator: its hash checks that failed (``mismatches``)
    disagree_frames: list[int] = field(default_factory=list)  # its ``checksum`` events that did not agree
    last_frame: int = -1
    traceback: bool = False
    error: str | None = None  # its ``error[code]: ...`` line, if it printed one
    hung: bool = False
    fault_fired: bool = False  # its own ``fault`` event (``--fault``), or the harness's signal reached it (a
    # spectator: its stop or kill)
    link_tampered: bool = False  # it refused a link as ``link-tampered``
    replay_ok: bool | None = None  # None: no log to replay
    replay_status: str | None = None
    replay_error: str | None = None
    final_hash: str | None = None  # the round-end state hash of its log
    link_paths: tuple[str, ...] = ()  # the paths its ``link-path`` events reported (host, srflx, prflx, relay)
    realtime_ratio: float | None = None  # frames of its first round per second from GO to its end, / 60 per tick


@dataclass
class HostileSeen:
    """Profile ``hostile-ready``: the hostile member's process, how often it declared Ready, and the host's
    decisions about non-host participants (``room-decision``: its ``decision`` values; ``removed``: one
    removed a member)."""

    process: NodeObservation
    declared: int
    decisions: list[str]
    removed: bool


@dataclass(frozen=True)
class Verdict:
    """A race's class, why, and for a caught corruption the frames it took (corruption to leave)."""

    race_class: RaceClass
    reason: str
    detection_frames: int | None = None


def classify(plan: RacePlan, nodes: list[NodeObservation], failure: str | None = None, flipped: int = 0,
             spectators: Sequence[NodeObservation] = (), hostile: HostileSeen | None = None) -> Verdict:
    """The race's verdict (module docstring). ``failure`` is a harness-level failure (the room never
    formed), ``flipped`` how many bytes the tamper flipped; ``spectators`` are the race's ``watch``
    processes (profile spectators), ``hostile`` its hostile member (profile hostile-ready)."""
    if failure and all(n.returncode is None and n.last_frame < 0 for n in nodes):  # the harness failed before any race
        return Verdict(RaceClass.CRASH, failure)
    hung = [(f"node{n.index}", n) for n in nodes if n.hung or n.returncode is None]
    hung += [(f"spectator{s.index}", s) for s in spectators if s.hung or s.returncode is None]
    if hung:
        return Verdict(RaceClass.HANG, "; ".join(f"{name} neither ended nor progressed (last frame {n.last_frame})"
                                                   for name, n in hung))
    desync = _false_desync(plan, nodes)
    crash = "; ".join(filter(None, [_crash(plan, nodes, failure, voted_off=bool(desync)),
                                    _spectator_crash(plan, nodes, spectators), _unrelayed(plan, nodes),
                                    "the hostile member printed a traceback" if hostile and hostile.process.traceback else ""]))
    if crash:
        return Verdict(RaceClass.CRASH, crash)
    if desync:
        return Verdict(RaceClass.FALSE_DESYNC, desync)
    spectator_desync = _spectator_desync(plan, nodes, spectators)
    if spectator_desync:
        return Verdict(RaceClass.SPECTATOR_DESYNC, spectator_desync)
    bad_logs = [(f"node{n.index}", n) for n in nodes if n.replay_ok is False and not _corrupted_log(plan, n)]
    bad_logs += [(f"spectator{s.index}", s) for s in spectators if s.replay_ok is False]
    if bad_logs:
        return Verdict(RaceClass.REPLAY_FAILED, "; ".join(f"{name}'s log: {n.replay_error}" for name, n in bad_logs))
    verdict = _hostile_verdict(nodes, hostile) if hostile is not None else _fault_verdict(plan, nodes, flipped, spectators)
    ratio = realtime_ratio(nodes)
    if verdict.race_class is RaceClass.AGREED and ratio is not None and ratio < SLOW_BELOW:
        return Verdict(RaceClass.SLOW, f"{verdict.reason}, but at {ratio:.2f} of real time (below {SLOW_BELOW})")
    return verdict


def realtime_ratio(nodes: Sequence[NodeObservation]) -> float | None:
    """The race's pace: the slowest ratio of the nodes that raced their round to its end (None: none did)."""
    ratios = [n.realtime_ratio for n in nodes if n.realtime_ratio is not None]
    return min(ratios) if ratios else None


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
    if faults.partition and plan.nodes > 2:  # both ends still reach the others: every node races on
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


def _spectator_fault(plan: RacePlan, spectator: NodeObservation, kind: SpectatorFaultKind) -> bool:
    """Whether the harness's ``kind`` of spectator fault reached ``spectator``."""
    spectators = plan.faults.spectators
    fault = spectators.fault if spectators is not None else None
    return fault is not None and fault.kind is kind and fault.spectator == spectator.index and spectator.fault_fired


def _spectator_crash(plan: RacePlan, nodes: list[NodeObservation], spectators: Sequence[NodeObservation]) -> str:
    """Why a spectator is a crash, or "": a traceback, or an exit its fault and the race's end do not
    explain. A spectator ends ``match-end`` (exit 0); a stopped one may find every source gone
    (``source-unavailable``); one of a race that ended race-wide ends as its racers did; ``error`` is
    judged as a spectator desync, not here."""
    race_ends = {n.outcome for n in nodes} & SPECTATOR_RACE_ENDS
    reasons = []
    for s in spectators:
        if s.traceback:
            reasons.append(f"spectator{s.index} printed a traceback")
        elif _spectator_fault(plan, s, SpectatorFaultKind.KILL) and s.returncode == KILLED:
            continue
        elif s.returncode == 0 and s.outcome == "match-end":
            continue
        elif s.returncode == 1 and (s.outcome == SPECTATOR_ERROR or s.outcome in race_ends or (
                s.outcome == SOURCE_UNAVAILABLE and _spectator_fault(plan, s, SpectatorFaultKind.STOP))):
            continue
        else:
            what = s.error or (f"outcome {s.outcome}" if s.outcome else "no result")
            reasons.append(f"spectator{s.index} exited {s.returncode} ({what}), which its faults do not explain")
    return "; ".join(reasons)


def _unrelayed(plan: RacePlan, nodes: list[NodeObservation]) -> str:
    """In a ``turn`` race (every node relay-only), the nodes that reported a link not relayed by coturn: the
    race did not test what its profile is for, or "" ."""
    if plan.faults.transport is not LinkTransport.TURN:
        return ""
    return "; ".join(f"node{n.index} linked over {', '.join(p for p in n.link_paths if p != 'relay')}, not through coturn"
                     for n in nodes if set(n.link_paths) - {"relay"})


def _finishing_hashes(plan: RacePlan, nodes: list[NodeObservation]) -> set[str]:
    """The round-end state hashes of the nodes that finished (not the corrupted node's)."""
    fault = plan.faults.node_fault
    victim = plan.faults.victim if fault is not None and fault.kind == "corrupt-state" else None
    return {n.final_hash for n in nodes if n.outcome == "finished" and n.final_hash and n.index != victim}


def _spectator_desync(plan: RacePlan, nodes: list[NodeObservation], spectators: Sequence[NodeObservation]) -> str:
    """Spectators whose state disagreed with the players' (module docstring), or ""."""
    players = _finishing_hashes(plan, nodes)
    reasons = []
    for s in spectators:
        if s.disagreements or s.outcome == SPECTATOR_ERROR:
            reasons.append(f"spectator{s.index} found its state differing from the players' agreed hash "
                           f"{s.disagreements} time(s)" + (f" at frames {s.disagree_frames[:5]}" if s.disagree_frames else "")
                           + (" and could not reproduce the race (error)" if s.outcome == SPECTATOR_ERROR else ""))
        elif s.outcome == "match-end" and s.final_hash and len(players) == 1 and s.final_hash not in players:
            reasons.append(f"spectator{s.index}'s round ended on another state than the players'")
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
    finals = _finishing_hashes(plan, nodes)
    if len(finals) > 1:
        reasons.append(f"the finishing nodes' final state hashes differ ({len(finals)} different)")
    return "; ".join(reasons)


def _fault_verdict(plan: RacePlan, nodes: list[NodeObservation], flipped: int,
                   spectators: Sequence[NodeObservation]) -> Verdict:
    faults = plan.faults
    everyone_finished = all(n.outcome == "finished" for n in nodes)
    if faults.spectators is not None:
        return _spectators_verdict(plan, nodes, spectators)
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
    if faults.partition and plan.nodes > 2 and everyone_finished:  # link trouble: the others bridged the cut
        fault = faults.node_fault
        assert fault is not None
        fired = any(n.fault_fired for n in nodes if n.index == victim)
        return Verdict(RaceClass.AGREED, f"{len(nodes)} nodes finished and agreed on every vote"
                       + (f", node{victim}'s link to one peer cut for {fault.seconds} s" if fired else
                          " (the cut never fired: the race ended first)"))
    if victim is not None and any(n.fault_fired for n in nodes if n.index == victim):
        ends = ", ".join(f"node{n.index} {n.outcome or 'killed'}" for n in nodes)
        return Verdict(RaceClass.DETECTED, f"{plan.profile} of node{victim} handled: {ends}")
    if victim is not None:
        return Verdict(RaceClass.AGREED, f"the {plan.profile} fault never fired (the race ended first)")
    over = "" if faults.transport is LinkTransport.TCP else f" over {faults.transport} (links: {_paths(nodes)})"
    return Verdict(RaceClass.AGREED, f"{len(nodes)} nodes finished and agreed on every vote{over}")


def _paths(nodes: Sequence[NodeObservation]) -> str:
    return ", ".join(sorted({path for n in nodes for path in n.link_paths})) or "none reported"


def _hostile_verdict(nodes: list[NodeObservation], hostile: HostileSeen) -> Verdict:
    """Every honest node finished in agreement (any other end is a crash, judged before); the hostile member
    that declared its refused car was refused every time and removed: detected. One that never got to
    declare (the room was already counting down) changed nothing: agreed."""
    if hostile.declared == 0:
        return Verdict(RaceClass.AGREED, f"{len(nodes)} nodes finished and agreed; the hostile member never declared Ready")
    refused = [d for d in hostile.decisions if d != "declaration-refused"]
    if refused or not hostile.removed:
        return Verdict(RaceClass.UNDETECTED, f"the hostile member declared its refused car {hostile.declared} time(s); the "
                                             f"room decided {hostile.decisions or 'nothing'}"
                                             + ("" if hostile.removed else " and never removed it"))
    return Verdict(RaceClass.DETECTED, f"the hostile member's car was refused {len(hostile.decisions)} time(s) "
                                       f"(declaration-refused) and it was removed; {len(nodes)} nodes finished and agreed")


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



def _ends(nodes: Sequence[NodeObservation], name: str = "node") -> str:
    return ", ".join(f"{name}{n.index} {n.outcome or ('killed' if n.returncode == KILLED else f'exit {n.returncode}')}"
                     for n in nodes)


def _spectators_verdict(plan: RacePlan, nodes: list[NodeObservation], spectators: Sequence[NodeObservation]) -> Verdict:
    spectating = plan.faults.spectators
    assert spectating is not None
    watched = _ends(spectators, "spectator")
    fault = spectating.fault
    if fault is not None and any(s.fault_fired for s in spectators if s.index == fault.spectator):
        return Verdict(RaceClass.DETECTED, f"spectator{fault.spectator} {fault.kind} handled: {_ends(nodes)}; {watched}")
    return Verdict(RaceClass.AGREED, f"{len(nodes)} nodes finished and agreed; {watched}, every hash check agreed")
