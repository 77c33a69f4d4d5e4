"""The sync-test harness and the ``sim`` / ``synctest`` commands."""

import json

from open4wd_node.cli.main import main
from sim_core import World
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest

from tests.sim_core.helpers import code_round


def test_synctest_passes_with_random_inputs():
    world = code_round(8, seed=3)
    inputs = RandomInputs([m.chip_skills for m in world.models], 3)
    result = run_synctest(world, 240, 7, inputs.next_frame)
    assert result.ok and result.frames == 240 and result.resimulated_frames == (240 - 7 + 1) * 7


def test_synctest_catches_an_injected_fault_and_names_the_field():
    world = code_round(2, seed=1)
    inputs = RandomInputs([m.chip_skills for m in world.models], 1)
    result = run_synctest(world, 100, 4, inputs.next_frame, fault_frame=50)
    assert not result.ok and result.mismatch_frame == 50
    assert result.differing_fields[0][0] == "car[0].lat_um"
    assert result.differing_fields[0][2] == result.differing_fields[0][1] - 1


def test_sim_command_json(tmp_path, capsys):
    status = main(["--data-dir", str(tmp_path), "sim", "--cars", "3", "--frames", "120", "--seed", "5", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["frames"] == 120 and len(bytes.fromhex(report["state_hash"])) == 32
    assert [row["points"] for row in report["standings"]] == [3, 2, 1] and report["step_us_median"] > 0
    world = World.demo(cars=3, seed=5)
    inputs = RandomInputs([m.chip_skills for m in world.models], 5)
    for _ in range(120):
        world.step(inputs.next_frame())
    assert report["state_hash"] == world.state_hash().hex()


def test_sim_command_text_without_inputs(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "sim", "--cars", "2", "--frames", "30", "--inputs", "none"]) == 0
    out = capsys.readouterr().out
    assert "state hash" in out and "step median" in out


def test_synctest_command(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "synctest", "--cars", "2", "--frames", "60",
                 "--check-distance", "7"]) == 0
    assert "synctest ok: 60 frames" in capsys.readouterr().out


def test_synctest_command_on_track03_with_every_modelled_feature(tmp_path, capsys):
    """track-03's rain and oil slick and the heavy cars' magnets held at random, 8 cars for 240 frames (the
    whole race, the magnet plate included, is the documented ``--frames 3600`` run: docs/sim.md)."""
    assert main(["--data-dir", str(tmp_path), "synctest", "--frames", "240", "--track", "builtin:track-03"]) == 0
    assert "synctest ok: 240 frames" in capsys.readouterr().out


def test_synctest_command_refuses_a_track_that_is_not_built_in(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "synctest", "--track", "builtin:track-09"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_synctest_command_rejects_a_bad_distance(tmp_path, capsys):
    assert main(["--data-dir", str(tmp_path), "synctest", "--check-distance", "0"]) == 2
    assert "error[usage]: --check-distance takes an integer in 1..12, got 0" in capsys.readouterr().err


def test_synctest_command_reports_a_mismatch(tmp_path, capsys, monkeypatch):
    import sim_core.harness.synctest as harness

    monkeypatch.setattr(harness, "run_synctest",
                        lambda world, frames, distance, inputs: run_synctest(world, frames, distance, inputs,
                                                                             fault_frame=20))
    assert main(["--data-dir", str(tmp_path), "synctest", "--cars", "2", "--frames", "60"]) == 1
    out = capsys.readouterr().out
    assert "synctest FAILED at frame 20" in out and "car[0].lat_um" in out
