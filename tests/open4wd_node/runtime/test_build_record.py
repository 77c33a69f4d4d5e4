"""The build record (setup.py): every build stamps into the package what it compiled (or why nothing) and the
git commit it was built from, and the node reports it: ``version`` says which parts run compiled, the version
record's ``commit_hash`` is the build's commit (it was always ``unknown`` before), ``version --build`` prints
the record. The build here is the package step of a pure build (``OPEN4WD_COMPILE=0``, ``setup.py
build_py``), which writes the record a wheel carries; the node then runs from that build's package."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from open4wd_node.runtime.build_info import RECORD_NAME, build_record, compiled_summary, commit_hash
from sim_core.compiled import COMPILED_MODULES, compiled_modules
from tests.layout import REPO_ROOT


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The package as a pure build lays it out, with its build record."""
    where = tmp_path_factory.mktemp("build")
    env = {**os.environ, "OPEN4WD_COMPILE": "0"}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "setup.py"), "-q", "build_py", "--build-lib", str(where)],
                          cwd=where, env=env, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "open4wd-node build: pure Python (OPEN4WD_COMPILE=0)" in done.stderr  # said, for a build without -q
    return where


def node(built, *args: str, data_dir) -> subprocess.CompletedProcess:
    """The console script run from the built package (``-P``: not from the checkout's sources)."""
    env = {k: v for k, v in os.environ.items() if k != "OPEN4WD_COMMIT_HASH"}
    env.update(PYTHONPATH=str(built), OPEN4WD_DATA_DIR=str(data_dir))
    done = subprocess.run([sys.executable, "-P", "-m", "open4wd_node.cli.main", *args], env=env, capture_output=True,
                          text=True, check=False, stdin=subprocess.DEVNULL, cwd=data_dir)
    assert done.returncode == 0, done.stderr
    return done


def test_the_build_stamps_what_it_compiled_and_its_commit(built):
    record = json.loads((built / "open4wd_node" / RECORD_NAME).read_text(encoding="utf-8"))
    assert record["compiled"] == [] and record["not_compiled_because"] == "OPEN4WD_COMPILE=0"
    assert record["commit"].removesuffix("-dirty") == git("rev-parse", "HEAD")
    assert record["commit"].endswith("-dirty") == bool(git("status", "--porcelain", "--untracked-files=no"))


def test_the_node_reports_the_build_s_commit_and_that_it_runs_pure_python(built, tmp_path):
    record = json.loads((built / "open4wd_node" / RECORD_NAME).read_text(encoding="utf-8"))
    wire = json.loads(node(built, "version", "--json", data_dir=tmp_path).stdout)
    assert len(wire) == 8 and wire["commit_hash"] == record["commit"] != "unknown"
    assert wire["build_timestamp"] == record["built_at_ms"]
    text = node(built, "version", data_dir=tmp_path).stdout.splitlines()
    assert text[-1].split(None, 1) == ["compiled", "nothing: pure Python (OPEN4WD_COMPILE=0)"]
    shown = json.loads(node(built, "version", "--build", data_dir=tmp_path).stdout)
    assert shown == {"record": record, "running_compiled": []}


def test_a_damaged_record_is_a_coded_error_naming_the_fix(built, tmp_path):
    broken = tmp_path / "pkg"
    subprocess.run(["cp", "-r", str(built), str(broken)], check=True)
    (broken / "open4wd_node" / RECORD_NAME).write_text('{"compiled": "all"}', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(broken), "OPEN4WD_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-P", "-m", "open4wd_node.cli.main", "version"], env=env, capture_output=True,
                          text=True, check=False, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("error[build-record-invalid]")
    assert "reinstall open4wd-node" in done.stderr and "Traceback" not in done.stderr


def test_run_from_the_sources_there_is_no_record_and_the_summary_says_what_runs(monkeypatch):
    """The suite imports the checkout's sources: no build wrote a record there (an editable install is the
    same), the commit is ``unknown`` unless the environment names it, and the summary follows what loads."""
    assert build_record() is None
    monkeypatch.delenv("OPEN4WD_COMMIT_HASH", raising=False)
    assert commit_hash() == "unknown"
    monkeypatch.setenv("OPEN4WD_COMMIT_HASH", "abc123")
    assert commit_hash() == "abc123"
    running = compiled_modules()
    assert running in ([], list(COMPILED_MODULES))  # all or none
    assert compiled_summary() == ("nothing: pure Python (run from the sources)" if not running else compiled_summary())
