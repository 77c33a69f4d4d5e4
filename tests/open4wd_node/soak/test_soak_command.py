"""``open4wd-node soak`` as a user runs it: real node processes, real sockets, real Dask clusters.

Each race is 1 lap of the shortest built-in track (about 1,800 frames: the spec allows no shorter round
limit, docs/soak.md); the limits below are generous, only a hang reaches them. The races take minutes:
they are marked ``slow`` and run with ``pytest -m slow``; the default run keeps the refusals, and the
plans, classifier and report are tested without processes beside this file.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from open4wd_node.faults.plan import NONDETERMINISM_ENV

HANG_LIMIT_S = 900
FOUR = ["--races", "4", "--profiles", "clean,stall,corrupt,kill", "--seed", "11"]
EXPECTED = {"0000-clean": "agreed", "0001-stall": "detected", "0002-corrupt": "detected", "0003-kill": "detected"}


def cli(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", *argv], capture_output=True, text=True,
                          env=env or dict(os.environ), timeout=HANG_LIMIT_S, stdin=subprocess.DEVNULL)


def check_four(report: Path) -> dict:
    data = json.loads((report / "report.json").read_text())
    classes = {row["race_id"]: row["class"] for row in data["races"]}
    assert classes == EXPECTED, [(r["race_id"], r["class"], r["reason"]) for r in data["races"]]
    rows = {row["race_id"]: row for row in data["races"]}
    clean, corrupt, kill = rows["0000-clean"], rows["0002-corrupt"], rows["0003-kill"]
    assert clean["agreed_hashes"] >= 5 and set(clean["outcomes"].values()) == {"finished"}
    assert clean["curves"]["node0"] and "kept" not in clean  # an agreed race keeps nothing
    fault = corrupt["plan"]["faults"]["node_fault"]
    assert corrupt["outcomes"][f"node{fault['node']}"] == "persistent-desync"
    assert 0 < corrupt["detection_frames"] <= 3 * 120 + 120  # three votes after the corruption, at most
    victim = kill["plan"]["faults"]["kill"]["node"]
    assert kill["outcomes"][f"node{victim}"] == "exit -9"
    assert sorted(kill["outcomes"].values()).count("finished") == 2
    for race in ("0001-stall", "0002-corrupt", "0003-kill"):
        kept = Path(rows[race]["kept"])
        assert (kept / "plan.json").exists() and sorted(kept.glob("node*/races/*.o4wlog"))
        assert rows[race]["repro"] == f"open4wd-node soak repro {race} --report {report}"
    assert sorted((report / "races" / "0002-corrupt").glob("node*/races/*.states/*.state"))
    summary = data["summary"]
    assert summary["classes"]["agreed"] == 1 and summary["classes"]["detected"] == 3
    assert summary["corruptions_detected"] == summary["corruptions"] == 1
    assert summary["detection_frames"]["worst"] == corrupt["detection_frames"]
    page = (report / "report.html").read_text()
    assert "0002-corrupt" in page and "<svg" in page
    return data


@pytest.fixture(scope="module")
def local_soak(tmp_path_factory):
    """One soak of four races on the embedded LocalCluster (two races at once), as a user runs it."""
    report = tmp_path_factory.mktemp("soak") / "report"
    out = cli("--data-dir", str(report.parent), "soak", *FOUR, "--workers", "2", "--report", str(report), "--json")
    return report, out


@pytest.mark.slow
def test_a_soak_on_the_local_cluster_classifies_each_race_and_writes_its_report(local_soak):
    report, out = local_soak
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    assert summary["report"] == str(report) and summary["races"] == 4
    assert summary["session"]["races_run"] == 4 and summary["session"]["workers"] == 2
    check_four(report)


@pytest.mark.slow
def test_a_finished_soak_run_again_runs_nothing_and_another_soak_there_is_refused(local_soak):
    report, _ = local_soak
    again = cli("--data-dir", str(report.parent), "soak", *FOUR, "--report", str(report), "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["session"]["races_run"] == 0
    other = cli("--data-dir", str(report.parent), "soak", *FOUR[:-1], "12", "--report", str(report))
    assert other.returncode == 1 and "error[soak-report-mismatch]" in other.stderr and "seed 11 there, 12 now" in other.stderr


@pytest.mark.slow
def test_repro_reruns_a_race_to_the_same_class(local_soak):
    report, _ = local_soak
    out = cli("soak", "repro", "0002-corrupt", "--report", str(report), "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    again = json.loads(out.stdout)
    assert (again["class"], again["was"], again["same"]) == ("detected", "detected", True)
    assert again["detection_frames"] > 0 and Path(again["kept"]).is_relative_to(report / "races" / "0002-corrupt")
    unknown = cli("soak", "repro", "0009-clean", "--report", str(report))
    assert unknown.returncode == 1 and "error[soak-race-unknown]" in unknown.stderr


def wait_for(path: Path, what: str) -> None:
    deadline = time.monotonic() + 120
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


@pytest.mark.slow
def test_the_same_soak_on_a_dask_scheduler_and_worker(tmp_path):
    """``dask scheduler`` and ``dask worker`` started here on loopback, as an operator would on a cluster."""
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                                  str(scheduler_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None
    try:
        wait_for(scheduler_file, "the scheduler's address")
        address = json.loads(scheduler_file.read_text())["address"]
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "2",
                                   "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = tmp_path / "report"
        out = cli("--data-dir", str(tmp_path), "soak", *FOUR, "--scheduler", address, "--report", str(report), "--json")
        assert out.returncode == 0, out.stderr[-3000:]
        summary = json.loads(out.stdout)
        assert summary["session"]["scheduler"] == address and summary["session"]["workers"] is None
        check_four(report)
    finally:
        for process in (worker, scheduler):
            if process is not None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@pytest.mark.slow
def test_a_non_deterministic_build_is_caught_as_a_false_desync(tmp_path):
    env = {**os.environ, NONDETERMINISM_ENV: "200"}
    report = tmp_path / "report"
    out = cli("--data-dir", str(tmp_path), "soak", "--races", "1", "--profiles", "clean", "--workers", "1",
              "--report", str(report), env=env)
    assert out.returncode == 1, out.stderr[-3000:]
    row = json.loads((report / "report.json").read_text())["races"][0]
    assert row["class"] == "false-desync", row["reason"]
    assert "disagreeing vote" in row["reason"] and row["repro"].startswith("open4wd-node soak repro 0000-clean")
    assert "0000-clean: false-desync: node" in out.stdout  # told as it came
    assert "1 races: 1 false-desync" in out.stdout


@pytest.fixture(scope="module")
def turn_and_spectators_soak(tmp_path_factory):
    """One race of each of two profiles that start processes beside the nodes (seed 24): three nodes
    relay-only through the race's own coturn; two spectators, one stopped 7 s."""
    report = tmp_path_factory.mktemp("soak-ts") / "report"
    out = cli("--data-dir", str(report.parent), "soak", "--races", "2", "--profiles", "turn,spectators", "--seed", "24",
              "--workers", "2", "--report", str(report), "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return {row["race_id"]: row for row in json.loads((report / "report.json").read_text())["races"]}


@pytest.mark.slow
def test_three_relay_only_nodes_race_through_the_races_coturn(turn_and_spectators_soak):
    row = turn_and_spectators_soak["0000-turn"]
    assert row["plan"]["faults"]["transport"] == "turn"
    assert row["class"] == "agreed", row["reason"]
    assert set(row["outcomes"].values()) == {"finished"}
    assert row["link_paths"] == {f"node{i}": ["relay"] for i in range(3)}


@pytest.mark.slow
def test_spectators_follow_the_race_and_their_logs_replay(turn_and_spectators_soak):
    row = turn_and_spectators_soak["0001-spectators"]
    assert row["plan"]["faults"]["spectators"]["fault"] == {"spectator": 1, "kind": "stop", "at_s": 7.58, "seconds": 7.08}
    assert row["class"] == "detected", row["reason"]
    assert set(row["outcomes"].values()) == {"finished"}
    watched = row["spectators"]
    assert watched["spectator0"]["outcome"] == "match-end" and watched["spectator0"]["checked_hashes"] >= 5
    assert watched["spectator1"]["outcome"] in ("match-end", "source-unavailable")
    assert watched["spectator0"]["replay"] == "complete" and all(s["mismatches"] == 0 for s in watched.values())
    assert "SIGSTOP spectator1" in " | ".join(row["faults_applied"])


def test_refusals_come_before_any_race(tmp_path):
    bad_nodes = cli("--data-dir", str(tmp_path), "soak", "--nodes", "3-2")
    assert bad_nodes.returncode == 2 and "error[usage]: --nodes takes K or A-B" in bad_nodes.stderr
    unknown = cli("--data-dir", str(tmp_path), "soak", "--profiles", "clean,relay")
    assert unknown.returncode == 1 and "error[soak-invalid]" in unknown.stderr and "spectators" in unknown.stderr
    short = cli("--data-dir", str(tmp_path), "soak", "--race-seconds", "20")
    assert short.returncode == 2 and "--race-seconds takes an integer in 60..1800" in short.stderr
    scheduler = cli("--data-dir", str(tmp_path), "soak", "--scheduler", "10.0.0.1")
    assert scheduler.returncode == 2 and "--scheduler takes tcp://HOST:PORT" in scheduler.stderr
    assert not (tmp_path / "soak").exists()
    nobody = cli("--data-dir", str(tmp_path), "soak", "--scheduler", "tcp://127.0.0.1:1", "--races", "1")
    assert nobody.returncode == 1 and "error[soak-scheduler-unreachable]" in nobody.stderr


def test_without_dask_the_soak_names_the_install_line(tmp_path, monkeypatch, capsys):
    from open4wd_node.cli.main import main

    monkeypatch.setitem(sys.modules, "distributed", None)  # as an install without the soak extra
    assert main(["--data-dir", str(tmp_path), "soak", "--races", "1", "--json"]) == 1
    error = json.loads(capsys.readouterr().out)
    assert error["code"] == "soak-needs-dask" and "pip install 'open4wd-node[soak]'" in error["message"]
    assert not (tmp_path / "soak").exists()


def test_one_short_real_soak_race_end_to_end(tmp_path):
    """The default run's one real soak: one clean 2-node race on one local Dask worker, classified and
    reported as the long soaks are (their many races and profiles run with ``-m slow``)."""
    report = tmp_path / "report"
    done = cli("--data-dir", str(tmp_path), "soak", "--races", "1", "--nodes", "2", "--profiles", "clean",
               "--workers", "1", "--seed", "3", "--report", str(report), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["classes"]["agreed"] == 1 and summary["races"] == 1
    (row,) = json.loads((report / "report.json").read_text())["races"]
    assert row["class"] == "agreed" and row["agreed_hashes"] >= 5
    assert set(row["outcomes"].values()) == {"finished"} and "kept" not in row
    assert "<svg" in (report / "report.html").read_text()


def test_one_short_soak_race_over_webrtc_and_one_through_coturn(tmp_path):
    """The default run's real soak of the WebRTC profiles, at the cost of the clean one above per race: one
    2-node race of ``webrtc`` (through the race's own signaling service, no node listening) and one of
    ``turn`` (every link relayed by the race's own coturn), on two local Dask workers; each row says how
    every node's links went."""
    from tests.services import require_binary

    require_binary("turnserver", "coturn")
    report = tmp_path / "report"
    done = cli("--data-dir", str(tmp_path), "soak", "--races", "2", "--nodes", "2", "--profiles", "webrtc,turn",
               "--workers", "2", "--seed", "3", "--report", str(report), "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = {row["race_id"]: row for row in json.loads((report / "report.json").read_text())["races"]}
    # agreed, or slow on a machine too loaded to keep real time: pace is the benchmarks' business, not a test's
    assert {row["class"] for row in rows.values()} <= {"agreed", "slow"}, {race: row["reason"] for race, row in rows.items()}
    assert sorted(rows) == ["0000-webrtc", "0001-turn"]
    assert rows["0000-webrtc"]["link_paths"] == {"node0": ["host"], "node1": ["host"]}
    assert rows["0001-turn"]["link_paths"] == {"node0": ["relay"], "node1": ["relay"]}
    assert all(set(row["outcomes"].values()) == {"finished"} and row["agreed_hashes"] >= 5 for row in rows.values())
