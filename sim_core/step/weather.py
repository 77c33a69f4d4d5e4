"""Rain and snow patches: spawned and expired at the start of each frame, in the saved state (spec §7.4).

A track whose weather has patches (``PatchSpec``, rain or snow, spawn rate > 0) pre-allocates
``PATCH_POOL`` (50) patch slots after the world fields (``state.layout``: born frame, expire frame, arc,
lat); a track without keeps none. At the start of the step of frame f (0-based: the frame ``world[W_FRAME]``
counts before it), before any car moves:

1. **Expire**: a patch whose ``expire_frame`` is f frees its slot (all zeros). A patch therefore acts in
   the frames born … born + lifetime − 1.
2. **Accumulate**: frame 0 spawns (the spec's "frame 0 spawns first"); after it, each frame adds
   ``spawn_rate_per_min_x1000`` to ``weather_acc`` and a patch spawns when it reaches
   ``PATCH_SPAWN_AT`` = 3 600 000 (60 s · 60 frames · 1000), which is then taken off: exact integer
   cadence (30 /min → every 120 frames, 5 /min → every 720). The rate is at most 30 000, so at most one
   patch spawns a frame.
3. **Spawn**: into the lowest free slot (none free: no patch, nothing drawn; the rules keep at most
   lifetime·rate // PATCH_SPAWN_AT + 2 alive, so only that many slots are ever used or scanned). Up to
   ``CANDIDATES_PER_SPAWN`` (8) candidates are drawn, each consuming one ordinal (``weather_ordinal``);
   candidate n takes the weather RNG's outputs 2n and 2n + 1 and is placed uniformly over the ribbon:
   ``arc = u₀·length >> 64`` (0 ≤ arc < length), then ``lat = (u₁·(2e + 1) >> 64) − e`` with e the half width
   at that arc plus the apron (−e ≤ lat ≤ e). A candidate whose centre lies inside an active patch fails
   (the ribbon is open sky everywhere in this model, so overlap is what leaves no new wet ground); the
   first that does not becomes the patch, born f, expiring f + lifetime. Eight failures: no patch.

**The weather RNG**: SplitMix64 (``intmath.splitmix64_at``), seeded with the first 32 bits
(little-endian) of SHA-256(seed as 8 bytes LE ‖ 0 ‖ 0 ‖ track digest): the spec's
SHA-256(matchId ‖ 0 ‖ roundIndex ‖ 0 ‖ trackDigest), where this engine's round seed (``world.seed``,
which the race derives per round) stands for matchId and roundIndex together and the roundIndex slot is
empty; the track digest is ``digest_of(track)``. The seed is derived from the state's own ``seed`` field
(cached while it is unchanged), so a loaded state spawns what its own seed spawns.

**Effect** (``covers``): a patch is a disc of ``radius_um`` in the ribbon's (arc, lat) coordinates (on a
loop the arc distance wraps). A car whose contact point — its (arc, lat): the foot of its centre on the
ribbon, shared by its tires, since the route-frame car is one tangent-aligned body whose load is split
evenly over its tires — lies inside any active patch (distance ≤ radius) drives the frame on the wet
surface: ``CarModel.wet_mechanics``. Overlapping patches (one type per track) apply once.
"""

from __future__ import annotations

import hashlib
from typing import Final

from sim_core.intmath import mul, splitmix64_at
from sim_core.specs.weather import PatchSpec
from sim_core.state.layout import (
    PA_ARC, PA_BORN, PA_EXPIRE, PA_LAT, PATCH_POOL, PATCH_STRIDE, W_FRAME, W_SEED, W_WEATHER_ACC, W_WEATHER_ORDINAL,
    WORLD_HEADER, world_length,
)

PATCH_SPAWN_AT: Final = 3_600_000  # spawns ×1000 per minute, summed per frame: one spawn per 60·60·1000
CANDIDATES_PER_SPAWN: Final = 8


def weather_seed(seed: int, track_digest: bytes) -> int:
    """The round's weather seed: the first 32 bits (LE) of SHA-256(seed as 8 bytes LE ‖ 0 ‖ 0 ‖ track digest)."""
    digest = hashlib.sha256(seed.to_bytes(8, "little") + b"\x00\x00" + track_digest).digest()
    return int.from_bytes(digest[:4], "little")


class Weather:
    """One round's patch rules and where patches may fall (built once by ``World``); ``slots`` is the
    pool's size in the state: ``PATCH_POOL``, or 0 when the track has no patches (then nothing here runs)."""

    def __init__(self, patch: PatchSpec | None, loop: bool, length_um: int, half_widths: list[int], apron_um: int,
                 track_digest: bytes) -> None:
        self.rate = 0 if patch is None else patch.spawn_rate_per_min_x1000
        self.slots = PATCH_POOL if self.rate > 0 else 0
        self.lifetime = 0 if patch is None else patch.lifetime_frames
        self.radius = 0 if patch is None else patch.radius_um
        self.radius_sq = self.radius * self.radius
        self.loop = loop
        self.length_um = length_um
        self.half_length = length_um // 2
        self.count = len(half_widths) - 1  # M intervals over the length, M + 1 samples
        self.half_widths = half_widths
        self.apron_um = apron_um
        self.end = world_length(self.slots)  # the world list's length
        # How many patches the rules can keep alive at once: in any ``lifetime`` frames the accumulator
        # gains lifetime·rate and pays PATCH_SPAWN_AT per spawn from less than one spawn's worth, so at most
        # lifetime·rate // PATCH_SPAWN_AT + 1 spawns, + 1 for frame 0's. Lowest-free allocation then never
        # uses a slot beyond them (3 + 2 = 5 for track-03's 5 /min living 45 s; 32 at 30 /min for 60 s), so
        # the frame scans only those and a state with a patch beyond them is not one this round can reach.
        live = self.lifetime * self.rate // PATCH_SPAWN_AT + 2 if self.slots else 0
        self.live_end = WORLD_HEADER + (live if live < self.slots else self.slots) * PATCH_STRIDE
        self._digest = track_digest
        self._seed_of = -1  # the world seed the cached weather seed was derived from
        self._seed = 0

    def seed(self, world_seed: int) -> int:
        """The weather seed of ``world_seed`` (``weather_seed``), derived once per seed value."""
        if world_seed != self._seed_of:
            self._seed, self._seed_of = weather_seed(world_seed, self._digest), world_seed
        return self._seed

    def edge(self, arc: int) -> int:
        """How far from the centreline a patch's centre may lie at ``arc`` (0 ≤ arc ≤ length): the half
        width of the sample there plus the apron."""
        i = arc * self.count // self.length_um
        return self.half_widths[i if i < self.count else self.count] + self.apron_um

    def update(self, world: list[int]) -> None:
        """Expire, accumulate and spawn at the start of the step of frame ``world[W_FRAME]`` (only for a
        pool with slots)."""
        frame = world[W_FRAME]
        end = self.live_end
        if frame and frame in world[WORLD_HEADER + PA_EXPIRE : end : PATCH_STRIDE]:
            for at in range(WORLD_HEADER, end, PATCH_STRIDE):
                if world[at + PA_EXPIRE] == frame:
                    world[at] = world[at + PA_EXPIRE] = world[at + PA_ARC] = world[at + PA_LAT] = 0
        if frame:
            acc = world[W_WEATHER_ACC] + self.rate
            if acc < PATCH_SPAWN_AT:
                world[W_WEATHER_ACC] = acc
                return
            world[W_WEATHER_ACC] = acc - PATCH_SPAWN_AT
        self._spawn(world, frame)

    def _spawn(self, world: list[int], frame: int) -> None:
        free = -1
        for at in range(WORLD_HEADER, self.live_end, PATCH_STRIDE):
            if world[at + PA_EXPIRE] == 0:
                free = at
                break
        if free < 0:
            return  # every slot taken: this spawn is lost, nothing drawn (the rules never get here)
        seed = self.seed(world[W_SEED])
        ordinal = world[W_WEATHER_ORDINAL]
        for _ in range(CANDIDATES_PER_SPAWN):
            u_arc = splitmix64_at(seed, 2 * ordinal)
            u_lat = splitmix64_at(seed, 2 * ordinal + 1)
            ordinal += 1
            arc = u_arc * self.length_um >> 64
            edge = self.edge(arc)
            lat = (u_lat * (2 * edge + 1) >> 64) - edge
            if not self.covers(self.active(world), arc, lat):
                world[free + PA_BORN] = frame
                world[free + PA_EXPIRE] = frame + self.lifetime
                world[free + PA_ARC] = arc
                world[free + PA_LAT] = lat
                break
        world[W_WEATHER_ORDINAL] = ordinal

    def active(self, world: list[int]) -> list[tuple[int, int]]:
        """The active patches' centres (arc, lat), in slot order. Read slot by slot: the compiled step
        indexes a list in C, where slices and a ``zip`` with ``strict`` are generic calls."""
        return [(world[at + PA_ARC], world[at + PA_LAT]) for at in range(WORLD_HEADER, self.live_end, PATCH_STRIDE)
                if world[at + PA_EXPIRE]]

    def covers(self, patches: list[tuple[int, int]], arc: int, lat: int) -> bool:
        """Whether the ribbon point (arc, lat) lies inside one of ``patches`` (distance ≤ radius, the arc
        distance wrapped on a loop; ``arc`` is a car's unwrapped arc or a patch's)."""
        radius = self.radius
        if self.loop:
            arc %= self.length_um
        for patch_arc, patch_lat in patches:
            ds = arc - patch_arc
            if self.loop:
                if ds > self.half_length:
                    ds -= self.length_um
                elif ds < -self.half_length:
                    ds += self.length_um
            if -radius <= ds <= radius:
                dl = lat - patch_lat
                if mul(ds, ds) + mul(dl, dl) <= self.radius_sq:
                    return True
        return False

    def valid_pool(self, world: list[int]) -> bool:
        """Whether a decoded state's weather fields are ones this round can reach (``StateLimits``): the
        accumulator below a spawn, a drawn ordinal, each slot the rules can fill free (all zeros) or a
        patch born before the state's frame, living ``lifetime`` frames not yet over, centred on the
        ribbon, and the slots beyond those free."""
        frame = world[W_FRAME]
        if not (0 <= world[W_WEATHER_ACC] < PATCH_SPAWN_AT and world[W_WEATHER_ORDINAL] >= 0):
            return False
        if not self.slots:
            return world[W_WEATHER_ACC] == 0 and world[W_WEATHER_ORDINAL] == 0
        if any(world[self.live_end : self.end]):
            return False
        for at in range(WORLD_HEADER, self.live_end, PATCH_STRIDE):
            born, expire, arc, lat = world[at : at + PATCH_STRIDE]
            if expire == 0:
                if born or arc or lat:
                    return False
            elif not (0 <= born < frame <= expire == born + self.lifetime and 0 <= arc < self.length_um
                      and -self.edge(arc) <= lat <= self.edge(arc)):
                return False
        return True
