"""Start-up cost: declaring every command imports nothing heavy, and light commands stay light."""

import json
import os
import subprocess
import sys
import threading

import pytest

HEAVY = ("numpy", "trio", "structlog", "pygltflib", "cryptography", "msgpack", "sim_core.world", "sim_core.assets",
         "rich")


def imported_after(code: str, tmp_path) -> list[str]:
    """The heavy modules a fresh interpreter holds after running ``code``."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    modules = set(json.loads(out.stdout.splitlines()[-1]))
    return [name for name in HEAVY if name in modules]


def test_declaring_every_command_imports_nothing_heavy(tmp_path):
    assert imported_after("from open4wd_node.cli.main import build_parser\nbuild_parser()", tmp_path) == []


@pytest.mark.parametrize("argv", [["version"], ["version", "--json"], ["sim", "--cars", "0"], ["--help"]])
def test_light_commands_do_not_import_the_simulation(tmp_path, argv):
    code = f"from open4wd_node.cli.main import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert imported_after(code, tmp_path) == []


def test_the_simulation_is_imported_when_a_command_simulates(tmp_path):
    code = "from open4wd_node.cli.main import main\nmain(['sim', '--cars', '1', '--frames', '1'])"
    assert "numpy" in imported_after(code, tmp_path)


def test_a_host_without_signaling_holds_no_webrtc_stack_metrics_or_dask(tmp_path):
    """A TCP host with its room open (the soak's and most players' node) has imported none of the
    optional stacks: they cost every node process start-up CPU it does not use."""
    command = [sys.executable, "-X", "importtime", "-m", "open4wd_node.cli.main", "--data-dir", str(tmp_path), "host",
               "--listen", "127.0.0.1:0", "--json", "--min-players", "2", "--max-players", "2"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as host:
        stuck = threading.Timer(120, host.kill)  # a host that never opens its room ends the test, not the suite
        stuck.start()
        try:
            assert any('"room-created"' in line for line in host.stdout), "the host ended without opening its room"
        finally:
            stuck.cancel()
            host.terminate()
        imported = {line.rsplit("|", 1)[1].strip() for line in host.stderr.read().splitlines() if line.startswith("import time:")}
    assert "open4wd_node.node.match" in imported  # the probe saw the node's own imports
    optional = ("aiortc", "av", "trio_asyncio", "trio_websocket", "prometheus_client", "distributed", "dask")
    assert sorted(name for name in imported if name.split(".")[0] in optional) == []
