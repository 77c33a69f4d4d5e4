"""A round's simulation, built only from the verified start package, and its adapter for the session.

Every peer (and ``replay``) builds the same ``sim_core.World`` from the same facts: the round's track
(admitted from the built-ins or the store, with the room's lap count and time limit), the cars of
the ``LockedStartPackage`` in start-slot order, and a seed derived from the match id and round.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from open4wd_node.assets.room_assets import NodeRoomAssets
from protocol.race.results import Quit, rank_with_quits
from protocol.race.signing import Event
from protocol.identity.keys import PeerId
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
    slots: Mapping[PeerId, int],
    cars: Mapping[PeerId, Any],
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


def round_standings(world: World, slots: Mapping[PeerId, int], quits: Mapping[PeerId, Quit]) -> list[dict[str, Any]]:
    """The round's standings rows (``rank_with_quits``), each with its racer's PeerId: what the
    ``round-end`` event and the race log carry, for a racer and a spectator alike."""
    peer_of = {slot: peer for peer, slot in slots.items()}
    return [dict(row, peer=peer_of[row["slot"]]) for row in rank_with_quits(world.standings(), slots, quits)]


def chip_skills(world: World, slot: int) -> frozenset[str]:
    """The skills the chip of the car in ``slot`` offers."""
    return frozenset(s.skill for s in world.vehicles[slot].chip_slots)


class WorldAdapter:
    """``sim_core.World`` as the session's ``RaceWorld``: ``(skill, hold)`` pairs become SkillEvents."""

    def __init__(self, world: World) -> None:
        self.world = world

    @property
    def frame(self) -> int:
        """Frames stepped."""
        return self.world.frame

    @property
    def done(self) -> bool:
        """The round is over."""
        return self.world.done

    def step(self, inputs: Mapping[int, Sequence[Event]]) -> None:
        """Step one frame with each slot's ``(skill, hold)`` events."""
        self.world.step({slot: [SkillEvent(s, h) for s, h in events] for slot, events in inputs.items()})

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
