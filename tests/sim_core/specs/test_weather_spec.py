"""``WeatherSpec`` / ``PatchSpec``: the track's weather as validated integers, filled from the manifests."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim_core.assets.demo_round import builtin_demo_track
from sim_core.errors import SimError
from sim_core.specs.weather import NORMAL_WEATHER, PatchSpec, WeatherSpec
from tests.sim_core.helpers import straight_track as code_track

RAIN = PatchSpec(spawn_rate_per_min_x1000=5_000, lifetime_frames=2_700, radius_um=500_000,
                 friction_modifier_milli=650, rolling_modifier_milli=1_500)


def test_a_code_built_track_has_normal_weather_without_wind() -> None:
    track = code_track()
    assert track.weather == NORMAL_WEATHER
    assert (track.weather.weather_type, track.weather.wind_speed_um_s, track.weather.wind_direction_mdeg,
            track.weather.patch) == ("normal", 0, 0, None)


def test_the_builtins_carry_their_manifest_weather() -> None:
    """track-03 declares rain, 15 °C, 5 patches a minute living 45 s (2700 frames), radius 0.5 m and the
    rain defaults 0.65 / 1.5; track-01 snow (0.5 / 2.0); track-02 is normal."""
    t3 = builtin_demo_track("builtin:track-03")
    assert t3.weather == WeatherSpec("rain", 0, 0, RAIN)
    assert t3.air_temperature_mc == 15_000
    t1 = builtin_demo_track("builtin:track-01")
    assert t1.weather.weather_type == "snow" and t1.weather.patch is not None
    assert (t1.weather.patch.friction_modifier_milli, t1.weather.patch.rolling_modifier_milli) == (500, 2_000)
    assert builtin_demo_track("builtin:track-02").weather == NORMAL_WEATHER


@pytest.mark.parametrize("change", [
    {"spawn_rate_per_min_x1000": 30_001}, {"spawn_rate_per_min_x1000": -1}, {"lifetime_frames": 1_799},
    {"lifetime_frames": 3_601}, {"radius_um": 199_999}, {"radius_um": 1_000_001},
    {"friction_modifier_milli": 299}, {"friction_modifier_milli": 901}, {"rolling_modifier_milli": 999},
    {"rolling_modifier_milli": 2_501}, {"radius_um": 500_000.0}, {"lifetime_frames": True},
])
def test_patch_values_outside_the_manifest_ranges_are_refused(change: dict[str, object]) -> None:
    with pytest.raises(SimError) as caught:
        replace(RAIN, **change)  # type: ignore[arg-type]
    assert caught.value.code == "track-invalid-weather"


def test_patch_range_edges_are_accepted() -> None:
    replace(RAIN, spawn_rate_per_min_x1000=0, lifetime_frames=1_800, radius_um=200_000, friction_modifier_milli=300,
            rolling_modifier_milli=1_000)
    replace(RAIN, spawn_rate_per_min_x1000=30_000, lifetime_frames=3_600, radius_um=1_000_000,
            friction_modifier_milli=900, rolling_modifier_milli=2_500)


@pytest.mark.parametrize("args", [
    {"weather_type": "hail"}, {"weather_type": "normal", "patch": RAIN}, {"weather_type": "rain"},
    {"weather_type": "snow", "patch": "rain"}, {"wind_speed_um_s": 30_000_001}, {"wind_speed_um_s": -1},
    {"wind_direction_mdeg": 360_001}, {"wind_direction_mdeg": -360_001}, {"wind_speed_um_s": 1.5},
])
def test_weather_rules(args: dict[str, object]) -> None:
    with pytest.raises(SimError) as caught:
        WeatherSpec(**args)  # type: ignore[arg-type]
    assert caught.value.code == "track-invalid-weather"


def test_a_track_refuses_a_weather_that_is_not_a_weather_spec() -> None:
    with pytest.raises(SimError) as caught:
        replace(code_track(), weather="rain")  # type: ignore[arg-type]
    assert caught.value.code == "track-invalid-weather"
    windy = replace(code_track(), weather=WeatherSpec("snow", 30_000_000, -360_000, replace(RAIN, friction_modifier_milli=500)))
    assert windy.weather.wind_speed_um_s == 30_000_000
