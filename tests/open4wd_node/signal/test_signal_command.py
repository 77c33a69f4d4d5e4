"""``open4wd-node signal`` as a real process: it serves, reports, drains on SIGTERM and exits 143; bad
settings are refused with a code before anything starts; the shipped configs/signal.toml holds every key
at its default, and every key has its flag."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

import pytest

from open4wd_node.cli.main import build_parser
from open4wd_node.signal.config import KEYS, SignalSettings, signal_settings
from tests.node_process import drain_service

ROOT = Path(__file__).resolve().parents[3]
COMMAND = [sys.executable, "-m", "open4wd_node.cli.main"]


def signal_process(tmp_path, *args, config: str | None = None) -> subprocess.Popen:
    argv = [*COMMAND, "--data-dir", str(tmp_path / "data")]
    if config is not None:
        (tmp_path / "signal.toml").write_text(config)
        argv += ["--config", str(tmp_path / "signal.toml")]
    return subprocess.Popen([*argv, "signal", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_service_serves_drains_on_sigterm_and_exits_143(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    secret.chmod(0o600)
    process = signal_process(tmp_path, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--json",
                             "--turn-secret-file", str(secret), "--turn-url", "turn:127.0.0.1:3478",
                             config="[signal]\ndrain_grace_s = 2\n")
    try:
        started = json.loads(process.stdout.readline())
        assert started["event"] == "signal-listening" and started["turn"] == ["turn:127.0.0.1:3478"]
        with urllib.request.urlopen(f"http://{started['metrics']}/metrics", timeout=60) as answer:
            assert 'open4wd_signal_refusals_total{code="frame-invalid"} 0.0' in answer.read().decode()
        with urllib.request.urlopen(f"http://{started['address']}/healthz", timeout=60) as answer:
            assert answer.read() == b"ok\n"
    except BaseException:
        process.kill()
        raise
    drain_service(process, "signal", 2)


def test_an_empty_metrics_flag_turns_the_metrics_off(tmp_path):
    """``--metrics ""`` wins over the file's and the built-in 127.0.0.1:9465: two services on one machine (a
    demo's, a soak race's) never contend for a metrics port."""
    process = signal_process(tmp_path, "--listen", "127.0.0.1:0", "--metrics", "", "--json",
                             config="[signal]\nmetrics = \"127.0.0.1:0\"\ndrain_grace_s = 0\n")
    try:
        started = json.loads(process.stdout.readline())
        assert started["event"] == "signal-listening" and started["metrics"] is None, started
    except BaseException:
        process.kill()
        raise
    drain_service(process, "signal", 0)


@pytest.mark.parametrize(("config", "args", "status", "start"), [
    ("[signal]\nmax_peers = 65\n", [], 1, "error[config-invalid]: [signal] option 'max_peers' takes an integer in 1..64"),
    ("[signal]\nspeed = 1\n", [], 1, "error[config-invalid]: unknown [signal] option(s) speed"),
    ("[signal]\nturn_urls = [\"stun:x:1\"]\n", [], 1, "error[config-invalid]: [signal] option 'turn_urls' takes a turn:"),
    ("[signal]\nturn_urls = [\"turn:x:1\"]\n", [], 1, "error[config-invalid]: POST /turn-token needs both"),
    ("[signal]\ncors_origins = [\"https://x/path\"]\n", [], 1, "error[config-invalid]: [signal] option 'cors_origins'"),
    ("signal = 3\n", [], 1, "error[config-invalid]: signal is the signaling service's table: write [signal]"),
    (None, ["--trust-proxy", "yes"], 2, "error[usage]: --trust-proxy takes true or false"),
    (None, ["--listen", "127.0.0.1:99999"], 2, "error[usage]: --listen takes HOST:PORT"),
    (None, ["--turn-secret-file", "/nonexistent/secret", "--turn-url", "turn:x:1"], 1, "error[turn-secret-unreadable]"),
])
def test_bad_settings_are_refused_with_a_code_and_no_traceback(tmp_path, config, args, status, start):
    process = signal_process(tmp_path, "--metrics", "", *args, config=config)
    out, err = process.communicate(timeout=120)
    assert process.returncode == status, err
    assert err.startswith(start) and "Traceback" not in err, err


def test_a_secret_others_can_read_is_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    secret.chmod(0o644)
    process = signal_process(tmp_path, "--metrics", "", "--turn-secret-file", str(secret), "--turn-url", "turn:x:1")
    _, err = process.communicate(timeout=120)
    assert process.returncode == 1 and err.startswith("error[turn-secret-insecure]"), err


def test_the_shipped_signal_toml_holds_every_key_at_its_default():
    table = tomllib.loads((ROOT / "configs" / "signal.toml").read_text())["signal"]
    assert list(table) == list(KEYS)
    assert all(table[key] == spec.default for key, spec in KEYS.items())
    assert signal_settings(table) == SignalSettings()


def test_every_key_has_its_flag_and_a_flag_wins_over_the_file():
    parser = build_parser()
    command = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "signal")[1]
    flags = {flag for action in command._actions for flag in action.option_strings}
    assert {spec.flag for spec in KEYS.values()} <= flags
    settings = signal_settings({"cors_origins": ["https://a.example"], "max_peers": 8},
                               {"cors_origins": ("https://b.example",), "max_peers": 4})
    assert settings.cors_origins == ("https://b.example",) and settings.limits.max_peers == 4
