"""A race log as a film: what the replay page shows, gathered in one re-simulation of the log.

Per round: every car's plan position at every frame (sampled every n-th frame only past ``MAX_SAMPLES``),
its rank and laps over time, every checksum vote with its outcome and hashes, the input changes the peers
had to predict (what rollbacks are made of), and what else the log noted (a snapshot loaded, a state
saved, the session's end). For a match whose votes split: the split frame, and from the saved states of
that frame the first fields in which each minority state differs from a majority one (``state-diff``'s
comparison).

The film re-simulates the logged inputs without judging them: whether the log verifies is
``open4wd-node replay``'s verdict, which the caller passes in (``ReplayVerdict``). So the outvoted node's own
log, whose recorded hashes the re-simulation cannot reproduce, still plays to its last frame.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.race.log import LogReader
from open4wd_node.race.replay import _locked_start as locked_start_of_header
from open4wd_node.race.state_files import read_state_file, state_differences
from open4wd_node.race.world import build_round_world
from open4wd_node.runtime.errors import UserError
from open4wd_node.events.text import short
from open4wd_node.view.race_picture import car_places, standing_ranks, world_map
from open4wd_node.view.track_map import TrackMap
from protocol.race.inputs import holds
from sim_core.errors import SimError
from sim_core.specs.inputs import SkillEvent
from sim_core.world import World

MAX_SAMPLES = 36_000  # positions kept per round: every frame under a 10-minute limit, every n-th under a longer one
TIMELINE_EVERY = 30  # frames between two samples of ranks and laps (half a second)
ROLLBACK_BUCKET = 60  # predicted input changes are counted per second of race
FIELDS_SHOWN = 12  # first differing fields shown per minority state
CENTIMETRES = 100


@dataclass(frozen=True)
class ReplayVerdict:
    """What ``replay`` said of the log: verified (``ok``), or the coded error it refused it with."""

    ok: bool
    text: str


@dataclass(frozen=True)
class FilmVote:
    """One checksum vote as the log recorded it: ``result`` for the logging node (agreed, majority,
    minority, tie; a spectator's agreed or mismatch), every counted hash by peer, the peers outvoted."""

    frame: int
    result: str
    hashes: Mapping[str, str]
    dissenters: tuple[str, ...]

    @property
    def split(self) -> bool:
        """Whether the counted hashes differ."""
        return len(set(self.hashes.values())) > 1


@dataclass(frozen=True)
class FilmNote:
    """Something the log noted at a frame, in words (a snapshot loaded, a state saved, the end)."""

    frame: int
    kind: str
    text: str


@dataclass
class FilmRound:
    """One round of the film. ``positions[k]`` is every car's plan position (x, y per slot, centimetres)
    after ``first_frame + k × stride`` frames; ``ranks`` and ``laps`` (per slot) at each of ``timeline_frames``
    (every ``TIMELINE_EVERY`` frames, and the last); ``predicted`` counts the input changes peers had to predict per
    ``ROLLBACK_BUCKET`` frames."""

    round_index: int
    track_ref: str
    track: TrackMap
    slots: dict[str, int]  # peer -> start slot
    stride: int
    first_frame: int = -1  # -1 until the first frame is filmed
    last_frame: int = 0
    positions: list[tuple[int, ...]] = field(default_factory=list)
    timeline_frames: list[int] = field(default_factory=list)
    ranks: list[tuple[int, ...]] = field(default_factory=list)
    laps: list[tuple[int, ...]] = field(default_factory=list)
    votes: list[FilmVote] = field(default_factory=list)
    predicted: list[int] = field(default_factory=list)
    notes: list[FilmNote] = field(default_factory=list)
    standings: list[dict[str, Any]] | None = None

    @property
    def peers(self) -> list[str]:
        """The round's peers in slot order."""
        return sorted(self.slots, key=self.slots.__getitem__)


@dataclass(frozen=True)
class Split:
    """The first vote whose hashes differ: its round, frame and every counted hash by peer."""

    round_index: int
    frame: int
    hashes: Mapping[str, str]

    @property
    def majority(self) -> str | None:
        """The hash a strict majority of the voters held, if one did."""
        value, count = Counter(self.hashes.values()).most_common(1)[0]
        return value if count * 2 > len(self.hashes) else None


@dataclass(frozen=True)
class StateDifference:
    """How one node's saved state of the split frame differs from a majority node's: the first differing
    fields (name, majority value, this node's value) and how many differ in all."""

    node: str
    reference: str
    fields: tuple[tuple[str, int, int], ...]
    total: int


@dataclass
class ReplayFilm:
    """A whole log as a film: the logging node, its role, the verdict, the rounds, and for a split
    match where the votes split and how the saved states differ there."""

    match_id: str
    node: str
    role: str
    verdict: ReplayVerdict
    rounds: list[FilmRound] = field(default_factory=list)
    split: Split | None = None
    differences: list[StateDifference] = field(default_factory=list)
    states_seen: int = 0  # saved states of the split frame found among those given

    def label(self, peer: str) -> str:
        """A peer as the page names it: its short PeerId, and which one logged."""
        return short(peer) + (" (this log's node)" if peer == self.node else "")


class _Filming:
    """The round being filmed: samples the world after each step."""

    def __init__(self, film: FilmRound, world: World) -> None:
        self.film, self.world = film, world
        self._last_inputs: dict[str, tuple[tuple[Any, ...], ...]] = {}

    def sample(self) -> None:
        world, film = self.world, self.film
        frame = world.frame
        if film.first_frame < 0:
            film.first_frame = frame - frame % film.stride
        film.last_frame = max(film.last_frame, frame)
        if frame % film.stride == 0:
            self._position((frame - film.first_frame) // film.stride)
        if frame % TIMELINE_EVERY == 0:
            self.timeline()

    def _position(self, index: int) -> None:
        track, positions = self.film.track, self.film.positions
        row: list[int] = []
        for place in car_places(self.world):
            x, y = track.place(place.arc_um, place.lat_um, place.h_um)
            row += [round(x * CENTIMETRES), round(y * CENTIMETRES)]
        while len(positions) < index:  # frames a loaded snapshot skipped: the cars stay where they were seen
            positions.append(positions[-1] if positions else tuple(row))
        positions[index:] = [tuple(row)]

    def timeline(self) -> None:
        """Sample every car's rank and laps at the world's frame (again, if it was sampled there)."""
        film, frame = self.film, self.world.frame
        ranks = standing_ranks(self.world)
        laps = {p.slot: p.laps for p in car_places(self.world)}
        if film.timeline_frames and film.timeline_frames[-1] == frame:
            del film.timeline_frames[-1], film.ranks[-1], film.laps[-1]
        film.timeline_frames.append(frame)
        film.ranks.append(tuple(ranks[s] for s in range(len(ranks))))
        film.laps.append(tuple(laps[s] for s in range(len(laps))))

    def inputs(self, frame: int, inputs: Sequence[Sequence[Any]], node: str) -> None:
        """Count the peers' input changes that a predicting peer got wrong (the prediction repeats the
        hold skills of the peer's previous input and no event skill: ``protocol.race.inputs.holds``)."""
        changed = 0
        for _, peer, events, _, _ in inputs:
            now = tuple(tuple(e) for e in events)
            if peer != node and now != holds(self._last_inputs.get(peer, ())):
                changed += 1
            self._last_inputs[peer] = now
        bucket = frame // ROLLBACK_BUCKET
        counts = self.film.predicted
        counts.extend([0] * (bucket + 1 - len(counts)))
        counts[bucket] += changed


def film_log(path: Path, assets: NodeRoomAssets, verdict: ReplayVerdict, state_files: Iterable[Path] = ()) -> ReplayFilm:
    """The film of the log at ``path`` (``replay``'s ``verdict`` on it passed in); ``state_files`` are saved
    states of any node (the log's own ``<log>.states/`` are always read). ``UserError`` when the log's
    header cannot be read or its start package does not verify (then there is nothing to film); a
    damaged record later ends the film there."""
    reader = LogReader(path)
    film: ReplayFilm | None = None
    filming: _Filming | None = None
    try:
        for entry in reader:
            record = entry.record
            kind = record["kind"]
            if kind == "header":
                locked, config_rounds = locked_start_of_header(record, assets)
                film = ReplayFilm(locked.match_id, record["node"], record.get("role", "racer"), verdict)
            elif film is None:
                raise UserError("race-log-damaged", f"record {entry.index} comes before the header")
            elif kind == "round-start":
                filming = _start_round(film, record, locked, config_rounds, assets)
            elif filming is not None:
                _take(film, filming, record)
    except UserError as exc:
        if film is None:
            raise
        film.verdict = ReplayVerdict(False, f"{verdict.text}; the film ends at {exc.code}: {exc.message}")
    if film is None:
        raise UserError("race-log-damaged", f"{path} holds no header record")
    film.split = next((Split(r.round_index, v.frame, v.hashes) for r in film.rounds for v in r.votes if v.split), None)
    if film.split is not None:
        _compare_states(film, film.split, [*_own_states(path), *state_files])
    return film


def _start_round(film: ReplayFilm, record: Mapping[str, Any], locked: Any, config_rounds: list[dict[str, Any]],
                 assets: NodeRoomAssets) -> _Filming:
    index = record["round"]
    cars = {peer: locked.car(peer, index) for peer in locked.roster}
    config = config_rounds[index]
    world = build_round_world(assets, locked.match_id, index, config, record["slots"], cars)
    stride = max(1, -(-config["durationLimitSec"] * 60 // MAX_SAMPLES))
    round_film = FilmRound(index, config["trackRef"], world_map(world), dict(record["slots"]), stride)
    film.rounds.append(round_film)
    filming = _Filming(round_film, world)
    filming.sample()
    return filming


def _take(film: ReplayFilm, filming: _Filming, record: Mapping[str, Any]) -> None:
    """One record of the round being filmed."""
    kind, world, round_film = record["kind"], filming.world, filming.film
    if kind == "frame":
        if record["frame"] != world.frame or world.done:
            round_film.notes.append(FilmNote(record["frame"], "gap", f"inputs of frame {record['frame']} arrive while "
                                             f"the world is at frame {world.frame}: the film stops here"))
            return
        filming.inputs(record["frame"], record["inputs"], film.node)
        try:
            world.step({slot: [SkillEvent(s, h) for s, h in events] for slot, _, events, _, _ in record["inputs"] if events})
        except SimError as exc:
            round_film.notes.append(FilmNote(record["frame"], "refused", f"the simulation refused an input: {exc}"))
            return
        filming.sample()
    elif kind == "caught-up":
        world.load_state(record["state"])
        round_film.notes.append(FilmNote(record["frame"], "caught-up", f"a snapshot of frame {record['frame']} loaded"))
        filming.sample()
    elif kind == "checksum":
        round_film.votes.append(FilmVote(record["frame"], record["result"], dict(record["hashes"]),
                                         tuple(record.get("dissenters", ()))))
    elif kind == "state-file":
        round_film.notes.append(FilmNote(record["frame"], "state-saved", f"state saved ({record.get('reason', '')})"))
    elif kind == "session-end":
        round_film.notes.append(FilmNote(world.frame, "session-end", f"the session ended: {record['reason']}"))
    elif kind == "round-end":
        filming.timeline()
        round_film.standings = record["standings"]
        round_film.notes.append(FilmNote(record["frame"], "round-end", "the round is over"))


def _own_states(log: Path) -> list[Path]:
    """The saved states the logging node wrote beside its log (``<log>.states/``)."""
    return sorted(log.with_suffix(".states").glob("*.state"))


def state_paths(given: Iterable[Path]) -> list[Path]:
    """Saved-state files named directly or found under the directories named."""
    found: list[Path] = []
    for path in given:
        found += sorted(path.rglob("*.state")) if path.is_dir() else [path]
    return found


def _compare_states(film: ReplayFilm, split: Split, paths: Iterable[Path]) -> None:
    """Each saved state of the split frame whose hash is not the majority's, compared with one that is."""
    by_node: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in dict.fromkeys(paths):
        state = read_state_file(path)
        if (state.get("matchId"), state.get("round"), state.get("frame")) == (film.match_id, split.round_index, split.frame):
            by_node[str(state.get("node"))] = (hashlib.sha256(state["state"]).hexdigest(), state)
    film.states_seen = len(by_node)
    majority = split.majority
    reference = next(((node, state) for node, (digest, state) in sorted(by_node.items()) if digest == majority), None)
    if reference is None:
        return
    for node, (digest, state) in sorted(by_node.items()):
        if digest != majority:
            fields = state_differences(reference[1], state)
            film.differences.append(StateDifference(node, reference[0], tuple(fields[:FIELDS_SHOWN]), len(fields)))
