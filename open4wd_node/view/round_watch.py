"""``RoundWatch``: the round being raced, as the match runner hands it to the live view.

Kept apart from the view's model so that the event sink (``events``), the view (``live_model``) and the
runner all name it without importing each other; the frame pump is seen only through ``PumpLag``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from protocol.race.session import RaceSession
    from sim_core.world import World


class PumpLag(Protocol):
    """What the view reads of the frame pump: frames due but not stepped."""

    lag: int


@dataclass(frozen=True)
class RoundWatch:
    """A round being raced, as the runner built it (read-only for the view)."""

    round_index: int
    rounds: int
    slots: Mapping[str, int]  # PeerId -> start slot
    world: World
    session: RaceSession
    pump: PumpLag
    earlier_rollbacks: int  # rollbacks of this match's earlier rounds
