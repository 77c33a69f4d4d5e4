"""What a race round needs to know before frame 0, and the world interface the session drives."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from protocol.encoding import dagcbor
from protocol.errors import LocalError
from protocol.race.signing import SKILL_ORDER, Event
from protocol.identity.keys import PeerId

MAX_INPUT_DELAY = 8
MAX_PREDICTION = 8
LOCAL_LEDGER_ADDRESS = "/orbitdb/open4wd-node-local"
"""This node keeps no ledger yet; anchors are bound to this chain id until one exists (docs/race.md)."""


class RaceWorld(Protocol):
    """The simulation as the session sees it; the shell adapts ``sim_core.World`` to this.

    ``load_state`` is atomic and raises ``SimError`` (``open4wd_base.errors``) on bytes it refuses: it
    takes bytes of any origin, above all a peer's snapshot, and that error is the peer's fault; any other
    exception is a bug of this node and is never blamed on a peer. ``save_own`` returns the state in whatever form this world
    restores fastest, for its own ``restore_own`` only (a rollback to a ring state: no checks a
    stranger's bytes need); ``pack_own`` gives such a state's canonical bytes (what ``save_state`` gave
    or would have given then), for a hash or a peer.
    ``done`` turns true when the round is over. Inputs map slot → events as ``(skill, hold)`` pairs in canonical order.
    """

    @property
    def frame(self) -> int:
        """The frame the next ``step`` computes."""

    @property
    def done(self) -> bool:
        """True once the round is over (nothing more is stepped)."""

    def step(self, inputs: Mapping[int, Sequence[Event]]) -> None:
        """Compute one frame with these inputs by start slot (a slot without events is left out)."""

    def save_state(self) -> bytes:
        """The whole state as canonical bytes (equal states give equal bytes)."""

    def load_state(self, data: bytes) -> None:
        """Replace the state by ``data`` atomically; raises ``SimError`` on bytes it refuses."""

    def save_own(self) -> object:
        """The state, for this world's own ``restore_own``."""

    def restore_own(self, state: object) -> None:
        """Replace the state by one this world's ``save_own`` returned (trusted: not validated)."""

    def pack_own(self, state: object) -> bytes:
        """The canonical bytes of a state this world's ``save_own`` returned."""


def loadout_digest(car: Any) -> str:
    """Hex SHA-256 of a car's canonical DAG-CBOR: what a reconnecting peer must present unchanged."""
    return hashlib.sha256(dagcbor.encode(car)).hexdigest()


@dataclass(frozen=True)
class RaceSetup:
    """One round: ``slots`` (peer → start slot) is the roster; ``skills`` are each car's chip skills,
    ``loadouts`` each car's ``loadout_digest``; the grid fields (hex) go into the round's anchor.

    Built by this node's shell from its verified start package and options, so a refusal is a
    ``LocalError`` ``race-setup-invalid`` (roster and slots, skills, ``input_delay``, ``max_prediction``)."""

    match_id: str
    round_index: int
    slots: Mapping[PeerId, int]
    skills: Mapping[PeerId, frozenset[str]]
    loadouts: Mapping[PeerId, str]
    grid_context_digest: str
    grid_seed: str
    input_delay: int = 0
    max_prediction: int = MAX_PREDICTION
    ledger_address: str = LOCAL_LEDGER_ADDRESS

    def __post_init__(self) -> None:
        peers = set(self.slots)
        if len(peers) < 2 or sorted(self.slots.values()) != list(range(len(peers))):
            raise LocalError("race-setup-invalid", "a race has at least 2 peers in slots 0..N-1")
        if set(self.skills) != peers or set(self.loadouts) != peers:
            raise LocalError("race-setup-invalid", "skills and loadouts must cover exactly the roster")
        if any(not set(s) <= set(SKILL_ORDER) for s in self.skills.values()):
            raise LocalError("race-setup-invalid", "chip skills must be among the eight skills")
        if type(self.input_delay) is not int or not 0 <= self.input_delay <= MAX_INPUT_DELAY:
            raise LocalError("race-setup-invalid", f"input_delay is 0..{MAX_INPUT_DELAY} frames")
        if type(self.max_prediction) is not int or not 0 <= self.max_prediction <= MAX_PREDICTION:
            raise LocalError("race-setup-invalid", f"max_prediction is 0..{MAX_PREDICTION} frames (0 = lockstep)")

    @property
    def roster(self) -> tuple[PeerId, ...]:
        """The round's peers in PeerId order."""
        return tuple(sorted(self.slots))

    @classmethod
    def from_locked_start(cls, locked: Any, round_index: int, skills: Mapping[PeerId, frozenset[str]],
                          **options: Any) -> "RaceSetup":
        """The round ``round_index`` of a verified ``LockedStart``; ``skills`` come from the baked cars.
        Raises ``LocalError`` ``race-setup-invalid`` as the constructor does."""
        return cls(
            match_id=locked.match_id,
            round_index=round_index,
            slots=locked.slots(round_index),
            skills=skills,
            loadouts={peer: loadout_digest(locked.car(peer, round_index)) for peer in locked.roster},
            grid_context_digest=locked.grid_context_digest.hex(),
            grid_seed=locked.grid_seed.hex(),
            **options,
        )
