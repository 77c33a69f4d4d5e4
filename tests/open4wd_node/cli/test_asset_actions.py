"""The ``open4wd-node asset`` command: exit codes, findings, JSON, bake, inspect, import, built-ins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from open4wd_node.assets.store import AssetStore
from open4wd_node.cli.main import main
from sim_core.assets.builtins import builtin_bytes
from tests.sim_core.assets.crafting import set_root, edit, source


def run(tmp_path: Path, *args: str) -> int:
    return main(["--data-dir", str(tmp_path / "data"), "asset", *args])


def test_validate_accepts_builtins_and_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chip.glb"
    path.write_bytes(builtin_bytes("builtin:chip-02"))
    assert run(tmp_path, "validate", "builtin:track-02", str(path)) == 0
    out = capsys.readouterr().out
    assert "builtin:track-02: accepted (track" in out and "chip.glb: accepted (chip" in out


def test_validate_lists_coded_findings_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.glb"
    broken.write_bytes(builtin_bytes("builtin:motor-01")[:300])
    assert run(tmp_path, "validate", str(broken), str(tmp_path / "missing.glb")) == 1
    out = capsys.readouterr().out
    assert "error[glb-truncated]:" in out and "error[file-unreadable]:" in out and "Traceback" not in out


def test_validate_json_is_one_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unbaked = tmp_path / "src.glb"
    unbaked.write_bytes(source("chip-01"))
    assert run(tmp_path, "validate", "--json", "builtin:roller-01", str(unbaked)) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["accepted"] is False
    assert [f["accepted"] for f in report["files"]] == [True, False]
    assert report["files"][1]["findings"][0]["code"] == "manifest-missing"
    assert run(tmp_path, "validate", "--unbaked", "--json", str(unbaked)) == 0
    assert json.loads(capsys.readouterr().out)["files"][0]["type"] == "chip"


def test_bake_then_validate_and_inspect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = tmp_path / "motor-src.glb", tmp_path / "motor.glb"
    src.write_bytes(source("motor-02"))
    assert run(tmp_path, "bake", str(src), str(out)) == 0
    assert out.read_bytes() == builtin_bytes("builtin:motor-02")  # the shipped built-in is exactly this bake
    capsys.readouterr()
    assert run(tmp_path, "inspect", str(out)) == 0
    text = capsys.readouterr().out
    assert "input_mw:" in text and "300042" in text
    assert run(tmp_path, "inspect", "--json", str(out)) == 0
    assert json.loads(capsys.readouterr().out)["manifest"]["motor"]["torque_ratio_pct"] == 70


def test_bake_refusal_prints_every_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "bad.glb"
    src.write_bytes(edit(source("chip-01"), set_root(material="asphalt", skill_slots="x")))
    assert run(tmp_path, "bake", str(src), str(tmp_path / "out.glb")) == 1
    err = capsys.readouterr().err
    assert "error[material-not-allowed]" in err and "error[chip-allocation-invalid]" in err
    assert not (tmp_path / "out.glb").exists()


def test_deprecated_material_option_blocks_new_bakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "chip.glb"
    src.write_bytes(source("chip-01"))
    code = main(["--data-dir", str(tmp_path), "--deprecated-material", "glass_fiber",
                 "asset", "bake", str(src), str(tmp_path / "o.glb")])
    assert code == 1 and "deprecated" in capsys.readouterr().err
    assert main(["--data-dir", str(tmp_path), "--deprecated-material", "glass_fiber",
                 "asset", "validate", "builtin:chip-01"]) == 0


def test_builtin_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(tmp_path, "builtin", "--list", "--json") == 0
    rows = json.loads(capsys.readouterr().out)["builtins"]
    assert len(rows) == 27 and rows[0] == {**rows[0], "ref": "builtin:chassis-01", "variant": "speed"}
    assert run(tmp_path, "builtin") == 2  # neither --list nor --export: a usage error


def test_import_into_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tire.glb"
    path.write_bytes(builtin_bytes("builtin:tire-03"))
    assert run(tmp_path, "import", str(path)) == 0
    store = AssetStore.in_data_dir(tmp_path / "data")
    [cid] = list(store.ids())
    assert store.get(cid) == path.read_bytes()
    capsys.readouterr()
    assert run(tmp_path, "validate", cid) == 0  # a stored content id is a valid FILE
    unbaked = tmp_path / "src.glb"
    unbaked.write_bytes(source("tire-03"))
    assert run(tmp_path, "import", str(unbaked)) == 1
    assert list(store.ids()) == [cid]


def test_loadout_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sim_core.assets.demo_round import archetype_loadout

    good, bad = tmp_path / "speed.json", tmp_path / "bad.json"
    good.write_text(json.dumps(archetype_loadout(1)))
    bad.write_text(json.dumps({**archetype_loadout(1), "chip": None}))
    assert run(tmp_path, "loadout", "--json", str(good)) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["figures"]["drive_power_mw"] == 125_379 and report["figures"]["parts"] == 12
    assert run(tmp_path, "loadout", str(bad)) == 1
    assert "error[loadout-weapon-requires-chip]" in capsys.readouterr().out
    (tmp_path / "junk.json").write_text("{")
    assert run(tmp_path, "loadout", str(tmp_path / "junk.json")) == 1
