"""Match standings from the rounds' results (spec/simcore.md §6.5): points summed over rounds, ties broken
by total finish time (a round not finished counts as its whole time limit), then by PeerId.

Pure and integer-only so every node ranks the match identically. Times are compared in frames: at
exactly 60 Hz that orders the same as the spec's milliseconds without any rounding.

Every standings row carries a ``status`` (``RaceStatus``) that a shell can print as it is: finished, DNF
(on the track when the round ended), left (voluntary or disconnect) or desync (voted out). Ranks and
points never depend on it beyond the spec's quit block; the reason of a departure is what this node
learnt (the peer's own ``leave`` message, or its link timing out), so it is shown, never ranked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from protocol.errors import LocalError
from protocol.identity.keys import PeerId


class RaceStatus(str, Enum):
    """How a car's round (or a peer's match) ended; the value is the JSON ``status``."""

    FINISHED = "finished"
    DNF = "dnf"  # did not finish: still on the track (or broken down) when the round ended
    LEFT = "left"  # left the race: voluntary, or its link was lost for good
    DESYNC = "desync"  # voted out: its state hashes lost three checksum votes in a row

    @property
    def departed(self) -> bool:
        """True for a peer that is out of the race (left or voted out): ranked in the quit block."""
        return self in (RaceStatus.LEFT, RaceStatus.DESYNC)


@dataclass(frozen=True)
class Quit:
    """A peer that left the race: the frame count up to which it still played (its last signed input + 1)
    and the reason it gave or this node saw (``voluntary``, ``disconnect``, ``desync``)."""

    frame: int
    reason: str

    @property
    def status(self) -> RaceStatus:
        """``desync`` for a peer voted out, else ``left``."""
        return RaceStatus.DESYNC if self.reason == "desync" else RaceStatus.LEFT


@dataclass(frozen=True)
class RoundResult:
    """One round by peer: points (P − k + 1), the finish frame (None for a car that did not finish) and
    how the peer's round ended."""

    points: Mapping[str, int]
    finish_frames: Mapping[str, int | None]
    time_limit_frames: int
    statuses: Mapping[str, RaceStatus]


def rank_with_quits(
    standings: Sequence[Mapping[str, Any]], slots: Mapping[PeerId, int], quits: Mapping[PeerId, Quit]
) -> list[dict[str, Any]]:
    """The simulation's round standings with the peers that left the race moved to the last block
    (spec/simcore.md §6.5: finished, alive, disabled, quit), re-ranked and re-pointed (P − k + 1).

    ``quits`` maps each peer that left to its ``Quit``: ``frame`` is the same on every node, since it
    comes from the confirmed inputs. A finish by then is legal and never demoted (the row says
    finished); a car that crossed the line later drove on predictions alone. Within the quit block:
    laps ↓, route progress ↓, then PeerId.

    Each row keeps the simulation's car state as ``car`` (finished, racing, disabled, retired) and gets
    ``status`` (a ``RaceStatus`` value); a departed peer's row also gets the leave ``reason``.
    """
    peer_of = {slot: peer for peer, slot in slots.items()}

    def quit_before_finish(row: Mapping[str, Any]) -> bool:
        peer = peer_of[row["slot"]]
        return peer in quits and (row["finished_frame"] is None or row["finished_frame"] > quits[peer].frame)

    def marked(row: Mapping[str, Any]) -> dict[str, Any]:
        car = row["status"]
        if quit_before_finish(row):
            quit = quits[peer_of[row["slot"]]]
            return dict(row, car=car, status=quit.status.value, reason=quit.reason)
        status = RaceStatus.DNF if row["finished_frame"] is None else RaceStatus.FINISHED
        return dict(row, car=car, status=status.value)

    rows = [marked(row) for row in standings]
    stay = [row for row in rows if not RaceStatus(row["status"]).departed]
    gone = [row for row in rows if RaceStatus(row["status"]).departed]
    gone.sort(key=lambda row: (-row["laps"], -row["progress_um"], peer_of[row["slot"]]))
    rows = stay + gone
    for rank, row in enumerate(rows, start=1):
        row["rank"], row["points"] = rank, len(rows) - rank + 1
    return rows


def round_result(standings: Sequence[Mapping[str, Any]], slots: Mapping[PeerId, int], time_limit_frames: int) -> RoundResult:
    """A round from the slot standings of ``rank_with_quits`` (``slot``, ``points``, ``finished_frame``,
    ``status``). Raises ``LocalError`` ``race-results-invalid`` when they do not cover exactly ``slots``."""
    peer_of = {slot: peer for peer, slot in slots.items()}
    if sorted(row["slot"] for row in standings) != sorted(peer_of):
        raise LocalError("race-results-invalid", "the standings must cover exactly the round's slots")
    return RoundResult(
        points={peer_of[row["slot"]]: row["points"] for row in standings},
        finish_frames={peer_of[row["slot"]]: row["finished_frame"] for row in standings},
        time_limit_frames=time_limit_frames,
        statuses={peer_of[row["slot"]]: RaceStatus(row["status"]) for row in standings},
    )


def match_status(statuses: Sequence[RaceStatus]) -> RaceStatus:
    """A peer's match in one word: how it first departed (left, desync), else DNF if any round was
    not finished, else finished."""
    departed = [status for status in statuses if status.departed]
    if departed:
        return departed[0]
    return RaceStatus.DNF if RaceStatus.DNF in statuses else RaceStatus.FINISHED


def match_standings(rounds: Sequence[RoundResult]) -> list[dict[str, Any]]:
    """Every peer of any round, best first: ``rank``, ``peer``, ``points``, ``finishFrames`` (the tiebreak:
    true finish frames only where ``status`` is finished), ``status`` (``match_status``) and ``rounds``
    (the status of each round the peer raced). Raises ``LocalError`` ``race-results-invalid`` without rounds."""
    if not rounds:
        raise LocalError("race-results-invalid", "a match has at least one round")
    peers = sorted({peer for result in rounds for peer in result.points})
    rows: list[dict[str, Any]] = []
    for peer in peers:
        points = sum(result.points.get(peer, 0) for result in rounds)
        time = 0
        for result in rounds:
            finished = result.finish_frames.get(peer)
            time += result.time_limit_frames if finished is None else finished
        statuses = [result.statuses[peer] for result in rounds if peer in result.statuses]
        rows.append({"peer": peer, "points": points, "finishFrames": time, "status": match_status(statuses).value,
                     "rounds": [status.value for status in statuses]})
    rows.sort(key=lambda row: (-row["points"], row["finishFrames"], row["peer"]))
    return [dict(row, rank=rank) for rank, row in enumerate(rows, start=1)]
