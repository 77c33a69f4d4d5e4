"""Cars a player can bring: the three built-in archetypes, or a loadout JSON file of their own.

``--car speed|heavy|control`` picks the built-in archetype car (``builtin:<type>-01/02/03``, as the
simulation's demo round uses it) for every round; ``--car FILE.json`` reads one loadout object (used
for every round) or a list with one loadout per round. Parts in a file are ``builtin:`` refs or content
ids of assets in the local store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from open4wd_node.runtime.choices import ARCHETYPES
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.user_files import UserFile, UserJsonFile, display_path
from sim_core.assets.demo_round import archetype_loadout

LOADOUT_MAX_BYTES = 64 * 1024  # a loadout is a few hundred bytes, a list of one per round a few KiB
LOADOUT_MAX_DEPTH = 8  # a per-round list nests 3 deep (list, loadout, tires); the rest is room to grow


def loadout_file(what: str) -> UserJsonFile:
    """The one rule for a loadout JSON file a user gives (``--car FILE``, ``asset loadout FILE``)."""
    return UserJsonFile(UserFile(what, LOADOUT_MAX_BYTES), LOADOUT_MAX_DEPTH)


@dataclass(frozen=True)
class CarChoice:
    """A ``--car`` description, read once: one car for every round, or one car per round."""

    cars: tuple[dict[str, Any], ...]
    per_round: bool
    ref: str

    @classmethod
    def parse(cls, ref: str) -> "CarChoice":
        """Refuses anything that is not a car description (the rules of the car itself come later)."""
        if ref in ARCHETYPES:
            return cls((archetype_loadout(ARCHETYPES[ref]),), False, ref)
        if not ref or not os.path.lexists(ref):  # most likely a mistyped archetype name
            raise UserError("car-invalid",
                            f"--car takes {', '.join(ARCHETYPES)} or a loadout JSON file; '{display_path(ref)}' is neither")
        data = loadout_file("the --car loadout file").read(ref)
        per_round = isinstance(data, list)
        cars = tuple(data) if per_round else (data,)
        if not cars or not all(isinstance(car, dict) for car in cars):
            raise UserError("car-invalid", f"{display_path(ref)} must hold one loadout object, or a list with one per round")
        return cls(cars, per_round, ref)

    def rotation(self, rounds: int) -> list[dict[str, Any]]:
        """One loadout per round; a per-round list must match the room's round count."""
        if not self.per_round:
            return list(self.cars) * rounds
        if len(self.cars) != rounds:
            raise UserError("car-invalid",
                            f"{display_path(self.ref)} must hold one loadout object, or a list of {rounds} (one per round)")
        return list(self.cars)

