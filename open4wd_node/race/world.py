"""A round's simulation, built only from the verified start package, and its adapter for the session.

Every peer (and ``replay``) builds the same ``sim_core.World`` from the same facts: the round's track
(admitted from the built-ins or the store, with the room's lap count and time limit), the cars of
the ``LockedStartPackage`` in start-slot order, and a seed derived from the match id and round.
"""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from open4wd_node.assets.room_assets import NodeRoomAssets
from protocol.race.results import Quit, rank_with_quits
from protocol.race.signing import Event
from sim_core.specs.inputs import SkillEvent

if TYPE_CHECKING:
    from sim_core.world import OwnState
from sim_core.assets.convert import track_spec, vehicle_from_loadout
from sim_core.world import SEED_MAX, World


def round_seed(match_id: str, round_index: int) -> int:
    """The world seed of a round: every peer (and ``replay``) derives the same one from the match."""
    digest = hashlib.sha256(f"open4wd-node-round-seed-v1\0{match_id}#{round_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (SEED_MAX + 1)


def build_round_world(
    assets: NodeRoomAssets,
    match_id: str,
    round_index: int,
    round_config: Mapping[str, Any],
    slots: Mapping[str, int],
    cars: Mapping[str, Any],
) -> World:
    """The round's world, the same on every peer: ``round_config`` is one entry of the match config
    (trackRef, lapCount, durationLimitSec), ``cars`` each peer's loadout; ``SimError`` (or
    ``AssetRejected``) when an asset cannot be admitted or a car assembled."""
    track = track_spec(
        assets.resolve(round_config["trackRef"]),
        track_id=round_config["trackRef"],
        lap_count=round_config["lapCount"],
        time_limit_s=round_config["durationLimitSec"],
    )
    order = sorted(slots, key=slots.__getitem__)
    vehicles = [vehicle_from_loadout(cars[peer], assets.resolve, peer) for peer in order]
    return World.new(track, vehicles, seed=round_seed(match_id, round_index))


def round_standings(world: World, slots: Mapping[str, int], quits: Mapping[str, Quit]) -> list[dict[str, Any]]:
    """The round's standings rows (``rank_with_quits``), each with its racer's PeerId: what the
    ``round-end`` event and the race log carry, for a racer and a spectator alike."""
    peer_of = {slot: peer for peer, slot in slots.items()}
    return [dict(row, peer=peer_of[row["slot"]]) for row in rank_with_quits(world.standings(), slots, quits)]


NONDETERMINISM_ENV = "OPEN4WD_TEST_NONDETERMINISTIC_FRAME"
"""A test hook, never set in a real race: the soak's false-desync test builds a deliberately
non-deterministic node with it (``WorldAdapter``)."""


def nondeterministic_frame() -> int | None:
    """The frame named by ``NONDETERMINISM_ENV`` in this process's environment, else None."""
    text = os.environ.get(NONDETERMINISM_ENV, "")
    return int(text) if text.isdigit() else None


def chip_skills(world: World, slot: int) -> frozenset[str]:
    """The skills the chip of the car in ``slot`` offers."""
    return frozenset(s.skill for s in world.vehicles[slot].chip_slots)


class WorldAdapter:
    """``sim_core.World`` as the session's ``RaceWorld``: ``(skill, hold)`` pairs become SkillEvents.

    ``fault_frame`` (soak testing, ``--fault corrupt-state@FRAME``) corrupts this node's own car every
    time that frame is stepped, so a rollback that re-simulates it corrupts it again, as a real bug would.

    ``float_frame`` (a test hook, ``NONDETERMINISM_ENV``) is a non-deterministic build: after that frame
    the car in slot 0 moves by an amount drawn from a float of this process's own unseeded random
    generator, so every process computes a different state, as a float leaking into the step would.
    """

    def __init__(self, world: World, fault_frame: int | None = None, fault_slot: int = 0,
                 float_frame: int | None = None) -> None:
        self.world = world
        self.fault_frame = fault_frame
        self.fault_slot = fault_slot
        self.float_frame = float_frame

    @property
    def frame(self) -> int:
        """Frames stepped."""
        return self.world.frame

    @property
    def done(self) -> bool:
        """The round is over."""
        return self.world.done

    def step(self, inputs: Mapping[int, Sequence[Event]]) -> None:
        """Step one frame with each slot's ``(skill, hold)`` events (then the fault, if this is its frame)."""
        frame = self.world.frame
        self.world.step({slot: [SkillEvent(s, h) for s, h in events] for slot, events in inputs.items()})
        if frame == self.fault_frame:
            self.world.corrupt_for_testing(self.fault_slot)
        if frame == self.float_frame:
            for _ in range(1 + int(random.random() * 100_000)):  # deliberately unseeded: differs per process
                self.world.corrupt_for_testing(0)

    def save_state(self) -> bytes:
        """The world's canonical state bytes."""
        return self.world.save_state()

    def load_state(self, data: bytes) -> None:
        """Load a state of any origin, a peer's snapshot above all (validated, atomic; ``SimError`` for
        bytes it refuses)."""
        self.world.load_state(data)

    def save_own(self) -> OwnState:
        """The state for this world's own ``restore_own`` (a rollback ring's entry)."""
        return self.world.save_own()

    def restore_own(self, state: object) -> None:
        """Restore a state this world's ``save_own`` returned, for a rollback (not validated)."""
        self.world.restore_own(state)  # type: ignore[arg-type]  # ``World.restore_own`` refuses anything else

    def pack_own(self, state: object) -> bytes:
        """The canonical bytes of a state this world's ``save_own`` returned."""
        return self.world.pack_own(state)  # type: ignore[arg-type]
