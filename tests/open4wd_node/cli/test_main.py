"""The console script as a user runs it: real processes, real files."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from open4wd_node.cli.main import main
from sim_core import ENGINE_ID
from tests.layout import REPO_ROOT

ROOT = REPO_ROOT
ABANDON = "abandon " * 11 + "about"


def run_cli(*args: str, data_dir: Path, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(data_dir)}
    return subprocess.run(
        [sys.executable, "-m", "open4wd_node.cli.main", *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
    )


def test_version_json_is_the_spec_object(tmp_path):
    out = run_cli("--economy-config-version", "7", "version", "--json", data_dir=tmp_path)
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert list(record) == [
        "client_version", "rapier_version", "protocol_version", "derive_logic_version",
        "builtin_assets_version", "economy_config_version", "build_timestamp", "commit_hash",
    ]
    assert record["economy_config_version"] == 7 and record["rapier_version"] == ENGINE_ID


def test_version_text_says_which_parts_run_compiled(tmp_path, capsys):
    """The text record ends with what runs compiled (setup.py): nothing here, where the suite imports the
    sources; ``tests/open4wd_node/runtime/test_build_record.py`` runs a built package."""
    from open4wd_node.runtime.build_info import compiled_summary
    from sim_core import step_is_compiled

    assert main(["--data-dir", str(tmp_path), "version"]) == 0
    last = capsys.readouterr().out.splitlines()[-1].split(None, 1)
    assert last == ["compiled", compiled_summary()]
    assert step_is_compiled() or last[1] == "nothing: pure Python (run from the sources)"


def test_identity_lifecycle(tmp_path):
    first = run_cli("identity", "show", "--json", data_dir=tmp_path)
    shown = json.loads(first.stdout)
    assert shown["created"] and shown["peer_id"].startswith("z6Mk")
    key = tmp_path / "identity.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    again = json.loads(run_cli("identity", "show", "--json", data_dir=tmp_path).stdout)
    assert again == {**shown, "created": False}

    refused = run_cli("identity", "import", data_dir=tmp_path, stdin=ABANDON)
    assert refused.returncode == 1 and "error[identity-exists]" in refused.stderr
    imported = run_cli("identity", "import", "--force", "--json", data_dir=tmp_path, stdin=ABANDON)
    restored = json.loads(imported.stdout)["peer_id"]
    assert restored != shown["peer_id"]
    assert run_cli("identity", "show", data_dir=tmp_path).stdout.strip() == restored

    fresh = json.loads(run_cli("identity", "new", "--force", "--json", data_dir=tmp_path).stdout)
    assert len(fresh["mnemonic"].split()) == 24
    other = tmp_path / "other"
    again_from_words = run_cli("identity", "import", "--json", data_dir=other, stdin=fresh["mnemonic"])
    assert json.loads(again_from_words.stdout)["peer_id"] == fresh["peer_id"]


def test_bad_mnemonic_is_a_coded_error_not_a_traceback(tmp_path):
    out = run_cli("identity", "import", data_dir=tmp_path, stdin="correct horse battery staple")
    assert out.returncode == 1 and out.stderr.startswith("error[mnemonic-invalid]") and "Traceback" not in out.stderr


def test_two_nodes_side_by_side(tmp_path):
    a = run_cli("identity", "show", data_dir=tmp_path / "a").stdout
    b = run_cli("identity", "show", data_dir=tmp_path / "b").stdout
    assert a != b


def test_data_dir_option_wins_over_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPEN4WD_DATA_DIR", str(tmp_path / "env"))
    assert main(["--data-dir", str(tmp_path / "opt"), "identity", "show"]) == 0
    assert (tmp_path / "opt" / "identity.key").exists() and not (tmp_path / "env").exists()


def test_ci_runs_the_readme_test_command():
    """.ci/run runs the README's test command, step by step: the install, then (ruff and mypy, seconds,
    before the suite's minutes) the suite, each step exactly as the README writes it."""
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(quick) == 2
    install, suite = quick[1].rsplit(" && ", 1)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert install in lines and suite in lines
    static = [lines.index(".venv/bin/ruff check ."), lines.index(".venv/bin/mypy")]
    assert lines.index(install) < min(static) and max(static) < lines.index(suite)


def test_a_bug_beside_a_coded_error_is_not_swallowed(tmp_path, capsys, monkeypatch):
    """A nursery's group of a coded error and a bug: the coded error is reported, and the bug still
    propagates with its traceback (never an exit 1 that hides it)."""
    from open4wd_node.cli import main as cli_main
    from open4wd_node.runtime.errors import UserError

    def failing(argv):
        raise ExceptionGroup("nursery", [UserError("config-invalid", "a bad value"), ZeroDivisionError("a bug")])

    monkeypatch.setattr(cli_main, "_run", failing)
    with pytest.raises(ExceptionGroup) as raised:
        main(["--data-dir", str(tmp_path), "version"])
    assert [type(e) for e in raised.value.exceptions] == [ZeroDivisionError]
    assert "error[config-invalid]: a bad value" in capsys.readouterr().err


def test_a_group_of_coded_errors_reports_each(tmp_path, capsys, monkeypatch):
    from open4wd_node.cli import main as cli_main
    from open4wd_node.runtime.errors import UsageError, UserError

    def failing(argv):
        raise ExceptionGroup("outer", [ExceptionGroup("inner", [UsageError("bad flag")]), UserError("x-y", "second")])

    monkeypatch.setattr(cli_main, "_run", failing)
    assert main(["--data-dir", str(tmp_path), "version"]) == 2
    err = capsys.readouterr().err
    assert "error[usage]: bad flag" in err and "error[x-y]: second" in err
