"""Re-simulating a race log and checking every hash it recorded (``open4wd-node replay``).

The start package in the header is verified again (signatures, ReadySet, grid proof, match id); each
round's world is rebuilt exactly as the race built it; every signed input is checked against its
peer's race key (announced under its master key, logged); the confirmed inputs are stepped in order, and
the node's own vote hash at every checksum frame and the state hash at each round end must match.
The first difference is reported with its round and frame.

The report says how much of the match the log holds (``LogStatus``: complete, incomplete, torn) and
why its node closed it (the end record's reason and outcome). What it counts is named exactly:
``votes_verified`` (checksum votes whose recorded own hash the re-simulation reproduced),
``votes_agreed`` (those of them that every voter agreed on: the demo's ``agreed_hashes``) and
``round_ends_verified`` (final state hashes of rounds, which are not votes). Inputs are checked as the
racers check them (a run of a peer's inputs proven by one signature, ``_InputProofs``); a round that
ended must have every input proven, and ``unproven_tail`` counts the peers whose last inputs of the
log's unended last round wait for a signature the log does not hold (a node that stopped racing first).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import sim_core
from open4wd_node.runtime.errors import UserError
from open4wd_node.events.text import round_text
from open4wd_node.race.log import END_KIND, LogReader, LogStatus
from open4wd_node.race.world import build_round_world
from open4wd_node.assets.room_assets import NodeRoomAssets
from protocol.errors import ProtocolError
from protocol.identity.ed25519 import PublicKey
from protocol.identity.keys import race_id
from protocol.race.keys import RaceKeyBook, verify_race_signature
from protocol.race.messages import RaceKey
from protocol.race.signing import input_digest
from protocol.race.votes import VOTE_INTERVAL_FRAMES
from protocol.room.config import MatchConfig
from protocol.room.locked_start import LockedStart, verify_package
from protocol.versions.record import PROTOCOL_VERSION, ClientVersionInfo
from protocol.identity.keys import PeerId
from sim_core.errors import SimError
from sim_core.specs.inputs import SkillEvent


@dataclass
class ReplayReport:
    """What ``replay`` verified of a log (the module docstring names every count)."""

    match_id: str = ""
    node: str = ""
    status: LogStatus = LogStatus.INCOMPLETE
    end_reason: str | None = None  # the end record's reason (EndReason), None without one
    outcome: str | None = None  # the match's outcome for this node, when it ran to its end
    rounds: int = 0
    frames: int = 0
    last_round: int = -1  # the last frame re-simulated: how far a torn or incomplete log is verified
    last_frame: int = -1
    votes_verified: int = 0
    votes_agreed: int = 0
    round_ends_verified: int = 0
    unproven_tail: int = 0  # peers whose last inputs of an unended round no logged signature reaches
    standings: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def hashes_checked(self) -> int:
        """Every hash the re-simulation reproduced: the votes and the round ends."""
        return self.votes_verified + self.round_ends_verified


UNFINISHED = {  # why a log short of its end record is refused (the verified part is still reported)
    LogStatus.INCOMPLETE: ("replay-incomplete", "the log has no end record: its node stopped without closing it "
                                                "(killed, or its machine went down), so the rest of the match and "
                                                "its result are missing"),
    LogStatus.TORN: ("replay-torn", "the log ends inside a record (its node was killed while writing), so the "
                                    "rest of the match and its result are missing"),
}


def unfinished(report: ReplayReport) -> UserError | None:
    """The error for a log that is not complete, naming how far it was verified; None for a complete log."""
    if report.status not in UNFINISHED:
        return None
    code, why = UNFINISHED[report.status]
    return UserError(code, f"{why}; verified up to {round_text(report.last_round)} frame {report.last_frame} "
                           "(--allow-incomplete accepts a partial log)")


def _mismatch(round_index: int, frame: int, what: str) -> UserError:
    return UserError("replay-mismatch", f"{round_text(round_index)} frame {frame}: {what}")


def _locked_start(header: dict[str, Any], assets: NodeRoomAssets) -> tuple[LockedStart, list[dict[str, Any]]]:
    package, node = header["package"], header["node"]
    declarations = package.get("declarations", [])
    declared = next((d for d in declarations if d.get("signer") == node), None)
    if declared is None and header.get("role") == "spectator" and declarations:
        declared = declarations[0]  # a spectator declared nothing: the racers' engine is the one to re-run
    if declared is None:
        raise UserError("race-log-damaged", "the header's start package has no declaration by the logging node")
    mine = ClientVersionInfo.from_wire(declared["payload"]["clientVersion"])
    if mine.rapier_version != sim_core.ENGINE_ID:
        raise UserError("replay-engine-mismatch",
                        f"the log was raced on engine {mine.rapier_version}; this node runs {sim_core.ENGINE_ID}")
    if mine.protocol_version != PROTOCOL_VERSION:  # what its inputs' signatures cover differs between versions
        raise UserError("replay-protocol-mismatch",
                        f"the log was raced on protocol {mine.protocol_version}; this node speaks {PROTOCOL_VERSION}")
    try:
        digests = assets.track_digests(MatchConfig.from_wire(package["matchConfig"]))
        locked = verify_package(package, room_id=package["roomId"], mine=mine, track_digests=digests)
        return locked, package["matchConfig"]["rounds"]
    except (ProtocolError, KeyError, TypeError) as exc:
        raise UserError("replay-package-invalid", f"the start package in the log does not verify: {exc}") from None


class _InputProofs:
    """One round's logged inputs checked by the racers' own rule (docs/race.md, "Chained inputs"): an
    input is authentic if its own signature verifies, or if a later input of the same peer whose
    signature verifies reaches it through the chain of ``prev`` digests. A racer proves a run of inputs
    by one signature at a frame it has stepped, so the proof of a logged input is always logged too,
    except at the tail of a round its node stopped racing (``open_tail``).

    Checked as the racers check it, a run at a time: a peer's inputs are kept, chained, until its chain
    breaks or the round ends, and then the run is proven by its newest input whose signature verifies,
    found from the newest back (one verification for a whole run that closes with a good signature, where
    checking every input costs one per input: most of a replay's CPU). Each input is judged with the race
    key known when it was logged. Every input a signature reaches is accepted and every other one refused
    at the same frame as checking each input would."""

    def __init__(self, keys: RaceKeyBook, race: str) -> None:
        self.keys, self.race = keys, race
        self._last: dict[str, tuple[int, bytes]] = {}  # peer -> (frame, digest) of its newest logged input
        # peer -> its inputs that no verified signature reaches yet, chained, oldest first: (frame, digest,
        # signature, the peer's race key when the input was logged)
        self._runs: dict[PeerId, list[tuple[int, bytes, bytes, PublicKey | None]]] = {}

    def add(self, frame: int, peer: PeerId, events: list[list[Any]], prev: object, signature: bytes) -> None:
        """Take one logged signed input. Raises ``replay-signature-invalid`` when it breaks the chain of a
        run that is still unproven (no later signature can reach that run any more)."""
        if not isinstance(prev, bytes) or len(prev) != 32:
            self._fail(peer, frame)
        digest = input_digest(self.race, frame, tuple((skill, hold) for skill, hold in events), prev)
        if self._last.get(peer) != (frame - 1, prev):
            first = self._prove(peer)
            if first is not None:
                self._fail(peer, first)
        self._last[peer] = (frame, digest)
        self._runs.setdefault(peer, []).append((frame, digest, signature, self.keys.key(self.race, peer)))

    def _prove(self, peer: PeerId) -> int | None:
        """Prove ``peer``'s kept run by its newest input whose signature verifies (dropping every input that
        reaches); the first frame left unproven, or None."""
        run = self._runs.get(peer)
        if not run:
            return None
        for index in range(len(run) - 1, -1, -1):
            _, digest, signature, key = run[index]
            if key is not None and verify_race_signature(key, digest, signature):
                del run[:index + 1]
                break
        return run[0][0] if run else None

    def fail_unproven(self) -> None:
        """Raise ``replay-signature-invalid`` for the earliest input still unproven, if there is one: at
        a round's end, or when the simulation refused an input (the racers' checks let none through)."""
        unproven = {peer: first for peer in list(self._runs) if (first := self._prove(peer)) is not None}
        if unproven:
            peer, first = min(unproven.items(), key=lambda item: item[1])
            self._fail(peer, first)

    @property
    def open_tail(self) -> int:
        """How many peers' newest runs no logged signature reaches (a round cut short)."""
        return sum(self._prove(peer) is not None for peer in list(self._runs))

    def _fail(self, peer: PeerId, frame: int) -> NoReturn:
        raise UserError("replay-signature-invalid",
                        f"{round_text(int(self.race.rsplit('#', 1)[1]))} frame {frame}: "
                        f"{peer[-4:]}'s input is not signed by its race key")


def replay(path: Path, assets: NodeRoomAssets) -> ReplayReport:
    """Verify what the log holds and say how much that is (``status``): an incomplete or torn log is
    reported, not refused. Raises ``replay-mismatch`` naming the first bad round and frame,
    ``race-log-damaged`` (with the last good frame) for a damaged record."""
    report = ReplayReport()
    try:
        return _replay(path, assets, report)
    except UserError as exc:
        if exc.code != "race-log-damaged" or report.last_frame < 0:
            raise
        raise UserError(exc.code, f"{exc.message}; the log is good up to {round_text(report.last_round)} "
                                  f"frame {report.last_frame}") from None


def _replay(path: Path, assets: NodeRoomAssets, report: ReplayReport) -> ReplayReport:
    reader = LogReader(path)
    locked = world = keys = proofs = None
    config_rounds: list[dict[str, Any]] = []
    round_index = -1
    vote_hashes: dict[tuple[int, int], str] = {}  # hash after stepping each vote frame, until its vote record
    for entry in reader:
        record = entry.record
        kind = record["kind"]
        if kind == "header":
            locked, config_rounds = _locked_start(record, assets)
            report.match_id, report.node = locked.match_id, record["node"]
            keys = RaceKeyBook(locked.roster)
        elif locked is None or keys is None:  # both come with the header
            raise UserError("race-log-damaged", f"record {entry.index} comes before the header")
        elif kind == "race-key":
            try:
                keys.add(record["peer"], RaceKey(record["raceId"], record["publicKey"], record["signature"]))
            except ProtocolError as exc:
                raise UserError("replay-signature-invalid", f"record {entry.index}: {exc.message}") from None
        elif kind == "round-start":
            round_index = record["round"]
            if record["slots"] != locked.slots(round_index):
                raise _mismatch(round_index, 0, "the recorded start slots differ from the start package")
            cars = {peer: locked.car(peer, round_index) for peer in locked.roster}
            world = build_round_world(assets, locked.match_id, round_index, config_rounds[round_index],
                                      record["slots"], cars)
            proofs = _InputProofs(keys, race_id(locked.match_id, round_index))
            report.rounds += 1
        elif kind == "frame":
            if world is None or proofs is None or record["frame"] != world.frame:
                raise _mismatch(round_index, record["frame"],
                                f"inputs out of order (the world is at frame {world and world.frame})")
            for _, peer, events, prev, signature in record["inputs"]:
                if signature is not None:  # None: a final prediction of a lost peer, nothing was signed
                    proofs.add(record["frame"], peer, events, prev, signature)
            try:
                world.step({slot: [SkillEvent(s, h) for s, h in events]
                            for slot, _, events, _, _ in record["inputs"] if events})
            except SimError as exc:  # the racers' checks pass no such input: an unproven one is altered
                proofs.fail_unproven()
                raise _mismatch(round_index, record["frame"], f"the simulation refused a logged input: {exc}") from None
            report.frames += 1
            report.last_round, report.last_frame = round_index, record["frame"]
            if record["frame"] % VOTE_INTERVAL_FRAMES == 0:
                vote_hashes[(round_index, record["frame"])] = world.state_hash().hex()
        elif kind == "caught-up":
            state = record["state"]
            if world is None or hashlib.sha256(state).hexdigest() != record["stateHash"]:
                raise _mismatch(round_index, record["frame"], "the caught-up snapshot does not match its hash")
            world.load_state(state)  # a snapshot a strict majority vouched for: the race went on from it
            vote_hashes = {k: v for k, v in vote_hashes.items() if k[1] < record["frame"]}
        elif kind == "checksum":
            own = record["hashes"].get(report.node)
            if own is not None:
                replayed = vote_hashes.pop((round_index, record["frame"]), None)
                if replayed is None:
                    raise _mismatch(round_index, record["frame"], "a checksum for a frame the log never reached")
                if replayed != own:
                    raise _mismatch(round_index, record["frame"], "the re-simulated state hash differs from the recorded vote")
                report.votes_verified += 1
                report.votes_agreed += int(record["result"] == "agreed")
        elif kind == "round-end":
            if world is None or proofs is None or world.state_hash().hex() != record["stateHash"]:
                raise _mismatch(round_index, record["frame"], "the round's final state hash differs")
            proofs.fail_unproven()
            report.round_ends_verified += 1
            report.standings.append(record["standings"])
        elif kind == END_KIND:
            report.end_reason, report.outcome = record.get("reason"), record.get("outcome")
    if locked is None:
        raise UserError("race-log-damaged", f"{path} holds no header record")
    report.unproven_tail = 0 if proofs is None else proofs.open_tail
    report.status = reader.status
    return report
