"""Match standings from the rounds' results (spec/simcore.md §6.5): points summed over rounds, ties broken
by total finish time (a round not finished counts as its whole time limit), then by PeerId.

Pure and integer-only so every node ranks the match identically. Times are compared in frames: at
exactly 60 Hz that orders the same as the spec's milliseconds without any rounding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocol.errors import ProtocolError


@dataclass(frozen=True)
class RoundResult:
    """One round by peer: points (P − k + 1) and the finish frame, or None for a car that did not finish."""

    points: Mapping[str, int]
    finish_frames: Mapping[str, int | None]
    time_limit_frames: int


def rank_with_quits(
    standings: Sequence[Mapping[str, Any]], slots: Mapping[str, int], quits: Mapping[str, int]
) -> list[dict[str, Any]]:
    """The simulation's round standings with the peers that left the race moved to the last block
    (spec/simcore.md §6.5: finished, alive, disabled, quit), re-ranked and re-pointed (P − k + 1).

    ``quits`` maps each peer that left to the frame count up to which it still played (its last signed
    input + 1; the same on every node, since it comes from the confirmed inputs). A finish by then is
    legal and never demoted; a car that crossed the line later drove on predictions alone. Within the
    quit block: laps ↓, route progress ↓, then PeerId.
    """
    peer_of = {slot: peer for peer, slot in slots.items()}

    def quit_before_finish(row: Mapping[str, Any]) -> bool:
        peer = peer_of[row["slot"]]
        return peer in quits and (row["finished_frame"] is None or row["finished_frame"] > quits[peer])

    stay = [dict(row) for row in standings if not quit_before_finish(row)]
    gone = [dict(row, status="quit") for row in standings if quit_before_finish(row)]
    gone.sort(key=lambda row: (-row["laps"], -row["progress_um"], peer_of[row["slot"]]))
    rows = stay + gone
    for rank, row in enumerate(rows, start=1):
        row["rank"], row["points"] = rank, len(rows) - rank + 1
    return rows


def round_result(standings: Sequence[Mapping[str, Any]], slots: Mapping[str, int], time_limit_frames: int) -> RoundResult:
    """A round from the simulation's slot standings (``rank``, ``slot``, ``points``, ``finished_frame``)."""
    peer_of = {slot: peer for peer, slot in slots.items()}
    if sorted(row["slot"] for row in standings) != sorted(peer_of):
        raise ProtocolError("race-results-invalid", "the standings must cover exactly the round's slots")
    return RoundResult(
        points={peer_of[row["slot"]]: row["points"] for row in standings},
        finish_frames={peer_of[row["slot"]]: row["finished_frame"] for row in standings},
        time_limit_frames=time_limit_frames,
    )


def match_standings(rounds: Sequence[RoundResult]) -> list[dict[str, Any]]:
    """Every peer of any round, best first: ``rank``, ``peer``, ``points``, ``finishFrames`` (the tiebreak)."""
    if not rounds:
        raise ProtocolError("race-results-invalid", "a match has at least one round")
    peers = sorted({peer for result in rounds for peer in result.points})
    rows = []
    for peer in peers:
        points = sum(result.points.get(peer, 0) for result in rounds)
        time = 0
        for result in rounds:
            finished = result.finish_frames.get(peer)
            time += result.time_limit_frames if finished is None else finished
        rows.append({"peer": peer, "points": points, "finishFrames": time})
    rows.sort(key=lambda row: (-row["points"], row["finishFrames"], row["peer"]))
    return [dict(row, rank=rank) for rank, row in enumerate(rows, start=1)]
