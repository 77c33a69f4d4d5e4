"""``open4wd-node asset builtin --export NAME FILE``: a shipped built-in as a GLB file, or a coded error."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from open4wd_node.cli.main import main
from sim_core.assets.builtins import BUILTIN_REFS, shipped_digests, stem_of


def export(tmp_path: Path, *args: str) -> int:
    return main(["--data-dir", str(tmp_path / "data"), "asset", "builtin", *args])


@pytest.mark.parametrize("ref", BUILTIN_REFS)
def test_every_builtin_exports_as_its_shipped_bytes(tmp_path, capsys, ref):
    out = tmp_path / "part.glb"
    assert export(tmp_path, "--export", ref, str(out), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert digest == shipped_digests()[stem_of(ref) + ".glb"] == report["content_id"]
    assert report == {"ref": ref, "file": str(out), "content_id": digest, "bytes": out.stat().st_size}
    assert main(["--data-dir", str(tmp_path / "data"), "asset", "validate", str(out)]) == 0  # a real, admissible GLB


def test_the_short_name_and_replacing_a_file(tmp_path, capsys):
    out = tmp_path / "tire.glb"
    out.write_bytes(b"an older file")
    assert export(tmp_path, "--export", "tire-02", str(out)) == 0
    assert capsys.readouterr().out.startswith(f"builtin:tire-02 -> {out} (")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == shipped_digests()["tire-02.glb"]


def test_unknown_names_and_unwritable_paths_are_coded_errors(tmp_path, capsys):
    assert export(tmp_path, "--export", "builtin:tire-09", str(tmp_path / "x.glb")) == 1
    err = capsys.readouterr().err
    assert err.startswith("error[unknown-builtin]: 'builtin:tire-09' is not a built-in; known: ") and "track-01" in err
    assert not (tmp_path / "x.glb").exists()
    for target in (tmp_path / "missing" / "x.glb", tmp_path):
        assert export(tmp_path, "--export", "chip-01", str(target)) == 1
        assert capsys.readouterr().err.startswith(f"error[file-unwritable]: cannot write {target}: ")
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


@pytest.mark.parametrize("args", [[], ["--json"], ["--list", "--export", "tire-01", "x.glb"], ["--export", "tire-01"]])
def test_saying_neither_or_both_is_a_usage_error(tmp_path, capsys, args):
    assert export(tmp_path, *args) == 2
    assert capsys.readouterr().err.startswith("error[usage]: ")
