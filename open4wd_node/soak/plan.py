"""What a soak is (``SoakOptions``) and what each of its races is (``RacePlan``), drawn from the soak seed.

Race ``i`` of a soak is a pure function of the soak's options and ``i``: its profile (the profiles in
turn, so every profile gets its share), its own seed, its node count, each node's netcode mode, the
frames its nodes' pumps step per tick (the soak's, for every race), and its faults
(``profiles.draw_faults`` from a generator seeded with the race seed). A plan is plain JSON, so a
report row or a kept race's ``plan.json`` is enough to run the race again (``soak repro``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from open4wd_node.runtime.choices import RACE_MODES
from open4wd_node.soak.profiles import Faults, Profile, draw_faults


DEFAULT_TRACK = "builtin:track-01"  # the shortest built-in: 1 lap takes the three archetypes 14–30 s
DEFAULT_RACE_SECONDS = 60  # the spec's least round time limit (durationLimitSec 60..1800)


@dataclass(frozen=True)
class SoakOptions:
    """A soak: how many races, of how many nodes (a range), under which profiles, in which mode and with
    how many frames per pump tick, from which seed, each race one round of ``laps`` on ``track`` with a
    ``race_seconds`` time limit."""

    races: int = 20
    nodes: tuple[int, int] = (3, 3)
    profiles: tuple[Profile, ...] = tuple(Profile)
    seed: int = 0
    race_seconds: int = DEFAULT_RACE_SECONDS
    mode: str = "rollback"
    track: str = DEFAULT_TRACK
    laps: int = 1
    frames_per_tick: int = 1  # every node's (docs/node.md "Frames per tick")

    def to_json(self) -> dict[str, Any]:
        """As plain JSON (the report directory's ``soak.json``: a resumed soak must be the same soak)."""
        return {"races": self.races, "nodes": list(self.nodes), "profiles": [str(p) for p in self.profiles],
                "seed": self.seed, "race_seconds": self.race_seconds, "mode": self.mode, "track": self.track,
                "laps": self.laps, "frames_per_tick": self.frames_per_tick}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SoakOptions:
        """The inverse of ``to_json`` (a report written before ``frames_per_tick`` existed ticked every frame)."""
        return cls(races=data["races"], nodes=(data["nodes"][0], data["nodes"][1]),
                   profiles=tuple(Profile(p) for p in data["profiles"]), seed=data["seed"],
                   race_seconds=data["race_seconds"], mode=data["mode"], track=data["track"], laps=data["laps"],
                   frames_per_tick=data.get("frames_per_tick", 1))


@dataclass(frozen=True)
class RacePlan:
    """One race of a soak: everything needed to run it, and to run it again."""

    race_id: str
    index: int
    seed: int
    profile: Profile
    nodes: int
    modes: tuple[str, ...]  # per node
    race_seconds: int
    track: str
    laps: int
    faults: Faults
    frames_per_tick: int = 1  # every node's

    def to_json(self) -> dict[str, Any]:
        """As plain JSON."""
        return {"race_id": self.race_id, "index": self.index, "seed": self.seed, "profile": str(self.profile),
                "nodes": self.nodes, "modes": list(self.modes), "race_seconds": self.race_seconds,
                "track": self.track, "laps": self.laps, "faults": self.faults.to_json(),
                "frames_per_tick": self.frames_per_tick}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RacePlan:
        """The inverse of ``to_json`` (a plan written before ``frames_per_tick`` existed ticked every frame)."""
        return cls(race_id=data["race_id"], index=data["index"], seed=data["seed"], profile=Profile(data["profile"]),
                   nodes=data["nodes"], modes=tuple(data["modes"]), race_seconds=data["race_seconds"],
                   track=data["track"], laps=data["laps"], faults=Faults.from_json(data["faults"]),
                   frames_per_tick=data.get("frames_per_tick", 1))


def plan_race(options: SoakOptions, index: int) -> RacePlan:
    """Race ``index`` of the soak (module docstring)."""
    soak_rng = random.Random(f"open4wd-soak-v1/{options.seed}/{index}")
    seed = soak_rng.getrandbits(63)
    profile = options.profiles[index % len(options.profiles)]
    rng = random.Random(seed)
    nodes = rng.randint(*options.nodes)
    if options.mode == "mixed":  # races where rollback and lockstep nodes race each other
        modes = tuple(rng.choice(RACE_MODES) for _ in range(nodes))
    else:
        modes = (options.mode,) * nodes
    faults = draw_faults(profile, rng, nodes, options.race_seconds)
    return RacePlan(race_id=f"{index:04d}-{profile}", index=index, seed=seed, profile=profile, nodes=nodes, modes=modes,
                    race_seconds=options.race_seconds, track=options.track, laps=options.laps, faults=faults,
                    frames_per_tick=options.frames_per_tick)
