"""``WeatherSpec``: a track's weather as exact integers (spec assets §5.3, simcore §7.4).

The asset pipeline reads the manifest's ``weather`` block (``sim_core.assets.track``) and
``sim_core.assets.convert`` turns it into a ``WeatherSpec``; a track built in code gets ``NORMAL_WEATHER``
(no wind, no patches). The air temperature stays ``TrackSpec.air_temperature_mc`` (the sole T_air).
The ranges are the manifest's (``sim_core.assets.constants``: ``PATCH_*``) in the spec's integer units, so
a code-built spec cannot hold what no track manifest can. Validation raises ``SimError``
``track-invalid-weather``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NoReturn, get_args

from sim_core.errors import SimError

WeatherType = Literal["normal", "rain", "snow"]
WEATHER_TYPES: tuple[WeatherType, ...] = get_args(WeatherType)
"""A ``Literal``, not an enum: it is a field of ``TrackSpec``, whose ``repr`` is the topology digest."""

WIND_SPEED_MAX_UM_S = 30_000_000
"""WIND_SPEED_MPS_MAX: 30 m/s."""
WIND_DIRECTION_LIMIT_MDEG = 360_000
"""The manifest takes −360…360°, direction the wind blows to (0 = +X, 90 = −Z)."""
SPAWN_RATE_RANGE_X1000 = (0, 30_000)
LIFETIME_RANGE_FRAMES = (1_800, 3_600)
RADIUS_RANGE_UM = (200_000, 1_000_000)
FRICTION_MODIFIER_RANGE_MILLI = (300, 900)
ROLLING_MODIFIER_RANGE_MILLI = (1_000, 2_500)


def _fail(message: str) -> NoReturn:
    raise SimError("track-invalid-weather", message)


def _check_int(value: object, bounds: tuple[int, int], what: str) -> None:
    low, high = bounds
    if type(value) is not int or not low <= value <= high:
        _fail(f"{what} must be an int in {low}..{high}")


@dataclass(frozen=True, slots=True)
class PatchSpec:
    """How a rain or snow track's patches spawn and what they do (all integers):

    - ``spawn_rate_per_min_x1000``: patches per minute ×1000 (0…30 /min; 0 = none ever spawn);
    - ``lifetime_frames``: how long a patch lives (30…60 s as 60 Hz frames, ``lifetime_ms·60 // 1000``);
    - ``radius_um``: the patch's radius on the ribbon (0.2…1 m);
    - ``friction_modifier_milli`` (0.3…0.9) and ``rolling_modifier_milli`` (1.0…2.5): what the surface's
      friction and rolling resistance are multiplied by, ‰, for a tire inside the patch.
    """

    spawn_rate_per_min_x1000: int
    lifetime_frames: int
    radius_um: int
    friction_modifier_milli: int
    rolling_modifier_milli: int

    def __post_init__(self) -> None:
        _check_int(self.spawn_rate_per_min_x1000, SPAWN_RATE_RANGE_X1000, "weather.patch.spawn_rate_per_min_x1000")
        _check_int(self.lifetime_frames, LIFETIME_RANGE_FRAMES, "weather.patch.lifetime_frames")
        _check_int(self.radius_um, RADIUS_RANGE_UM, "weather.patch.radius_um")
        _check_int(self.friction_modifier_milli, FRICTION_MODIFIER_RANGE_MILLI, "weather.patch.friction_modifier_milli")
        _check_int(self.rolling_modifier_milli, ROLLING_MODIFIER_RANGE_MILLI, "weather.patch.rolling_modifier_milli")


@dataclass(frozen=True, slots=True)
class WeatherSpec:
    """A track's weather: ``weather_type`` (normal, rain or snow), the wind (``wind_speed_um_s`` 0…30 m/s
    toward ``wind_direction_mdeg``, horizontal, counter-clockwise about +Y seen from above, 0 = +X,
    90° = −Z) and, for rain and snow only, the ``patch`` rules (``PatchSpec``; ``None`` for normal).
    """

    weather_type: WeatherType = "normal"
    wind_speed_um_s: int = 0
    wind_direction_mdeg: int = 0
    patch: PatchSpec | None = None

    def __post_init__(self) -> None:
        if self.weather_type not in WEATHER_TYPES:
            _fail(f"weather_type must be one of {', '.join(WEATHER_TYPES)}")
        _check_int(self.wind_speed_um_s, (0, WIND_SPEED_MAX_UM_S), "weather.wind_speed_um_s")
        _check_int(self.wind_direction_mdeg, (-WIND_DIRECTION_LIMIT_MDEG, WIND_DIRECTION_LIMIT_MDEG),
                   "weather.wind_direction_mdeg")
        if self.weather_type == "normal":
            if self.patch is not None:
                _fail("normal weather has no patches: give patch=None, or weather_type rain or snow")
        elif not isinstance(self.patch, PatchSpec):
            _fail(f"{self.weather_type} weather needs its patch rules (a PatchSpec)")


NORMAL_WEATHER = WeatherSpec()
"""No wind, no patches: the weather of a track that declares none."""
