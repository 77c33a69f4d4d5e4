"""``open4wd-node relay`` as a real process: it serves, reports, drains on SIGTERM and exits 143; bad
settings are refused with a code before anything starts; the shipped configs/relay.toml is the defaults."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

import pytest

from open4wd_node.relay.config import LIMIT_KEYS, RelaySettings, default_of, relay_settings
from tests.node_process import drain_service

ROOT = Path(__file__).resolve().parents[3]
COMMAND = [sys.executable, "-m", "open4wd_node.cli.main"]


def relay(tmp_path, *args, config: str | None = None) -> subprocess.Popen:
    argv = [*COMMAND, "--data-dir", str(tmp_path / "data")]
    if config is not None:
        (tmp_path / "relay.toml").write_text(config)
        argv += ["--config", str(tmp_path / "relay.toml")]
    return subprocess.Popen([*argv, "relay", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_relay_serves_metrics_drains_on_sigterm_and_exits_143(tmp_path):
    process = relay(tmp_path, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--json",
                    config="[relay]\ndrain_grace_s = 5\n")
    try:
        started = json.loads(process.stdout.readline())
        assert started["event"] == "relay-listening" and started["peer"].startswith("z")
        with urllib.request.urlopen(f"http://{started['metrics']}/metrics", timeout=60) as answer:
            body = answer.read().decode()
        assert "open4wd_relay_reservations 0.0" in body and 'open4wd_relay_refusals_total{code="relay-full"} 0.0' in body
        with urllib.request.urlopen(f"http://{started['metrics']}/healthz", timeout=60) as answer:
            assert answer.read() == b"ok\n"
    except BaseException:
        process.kill()
        raise
    drain_service(process, "relay", 5)


@pytest.mark.parametrize(("config", "args", "status", "start"), [
    ("[relay]\nmax_circuits = 0\n", [], 1, "error[config-invalid]: [relay] option 'max_circuits' takes an integer"),
    ("[relay]\nspeed = 1\n", [], 1, "error[config-invalid]: unknown [relay] option(s) speed"),
    ("[relay]\ndeny = [\"alice\"]\n", [], 1, "error[config-invalid]: [relay] option 'deny' takes PeerIds"),
    ("[relay]\nopenings = 4\nopenings_per_source = 8\n", [], 1, "error[config-invalid]: [relay]"),
    ("relay = 3\n", [], 1, "error[config-invalid]: relay is the relay's table: write [relay]"),
    (None, ["--metrics", "nohost"], 2, "error[usage]: --metrics takes HOST:PORT"),
    (None, ["--listen", "127.0.0.1:99999"], 2, "error[usage]: --listen takes HOST:PORT"),
])
def test_bad_settings_are_refused_with_a_code_and_no_traceback(tmp_path, config, args, status, start):
    process = relay(tmp_path, *args, config=config)
    out, err = process.communicate(timeout=120)
    assert process.returncode == status, err
    assert err.startswith(start) and "Traceback" not in err, err


def test_a_busy_port_is_a_coded_error(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = relay(tmp_path, "--listen", f"127.0.0.1:{taken.getsockname()[1]}", "--metrics", "")
        out, err = process.communicate(timeout=120)
    assert process.returncode == 1 and err.startswith("error[listen-failed]: cannot listen on 127.0.0.1:"), err


def test_the_shipped_relay_toml_holds_every_key_at_its_default():
    table = tomllib.loads((ROOT / "configs" / "relay.toml").read_text())["relay"]
    assert set(table) == {"listen", "metrics", "drain_grace_s", "openings", "openings_per_source", "allow", "deny",
                          *LIMIT_KEYS}
    assert all(table[key] == default_of(key) for key in table), {k: (v, default_of(k)) for k, v in table.items()}
    assert relay_settings(table) == RelaySettings()


def test_a_node_reachable_only_through_relays_needs_one(tmp_path):
    out = subprocess.run([*COMMAND, "--data-dir", str(tmp_path), "host", "--reachability", "relay", "--json"],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 1 and out.stderr.startswith("error[relay-missing]: --reachability relay needs"), out.stderr
