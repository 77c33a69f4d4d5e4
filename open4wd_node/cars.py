"""Cars a player can bring: the three built-in archetypes, or a loadout JSON file of their own.

``--car speed|heavy|control`` picks the built-in archetype car (``builtin:<type>-01/02/03``, as the
simulation's demo round uses it) for every round; ``--car FILE.json`` reads one loadout object (used for every round) or a list with one loadout
per round. Parts in a file are ``builtin:`` refs or content ids of assets in the local store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from open4wd_node.choices import ARCHETYPES
from open4wd_node.context_errors import UserError
from sim_core.assets.demo_round import archetype_loadout

MAX_CAR_FILE_BYTES = 64 * 1024


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
        path = Path(ref)
        try:
            if path.stat().st_size > MAX_CAR_FILE_BYTES:
                raise UserError("car-invalid", f"{ref} is larger than {MAX_CAR_FILE_BYTES} bytes")
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError("car-invalid", f"--car takes {', '.join(ARCHETYPES)} or a loadout JSON file; {ref!r} is neither") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UserError("car-invalid", f"cannot read the loadout file {ref}: {exc}") from None
        per_round = isinstance(data, list)
        cars = tuple(data) if per_round else (data,)
        if not cars or not all(isinstance(car, dict) for car in cars):
            raise UserError("car-invalid", f"{ref} must hold one loadout object, or a list with one per round")
        return cls(cars, per_round, ref)

    def rotation(self, rounds: int) -> list[dict[str, Any]]:
        """One loadout per round; a per-round list must match the room's round count."""
        if not self.per_round:
            return list(self.cars) * rounds
        if len(self.cars) != rounds:
            raise UserError("car-invalid", f"{self.ref} must hold one loadout object, or a list of {rounds} (one per round)")
        return list(self.cars)

