"""The three profiles of a race no single link, member or thin link may spoil, as a user runs them: one real
race each (docs/soak.md): ``partition`` (one link cut mid-race, both ends still reaching the third node),
``hostile-ready`` (a member that keeps declaring Ready with a car the others refuse) and ``thin-link``
(every link capped at 32 KiB/s). Each race takes a minute or more: marked ``slow`` (``pytest -m slow``),
as the other profiles' races are."""

import json
import subprocess
import sys

import pytest

HANG_LIMIT_S = 900


@pytest.fixture(scope="module")
def three_profiles(tmp_path_factory):
    report = tmp_path_factory.mktemp("soak-nostall") / "report"
    out = subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(report.parent), "soak",
                          "--races", "3", "--profiles", "partition,hostile-ready,thin-link", "--nodes", "3", "--seed", "7",
                          "--report", str(report), "--json"],
                         capture_output=True, text=True, timeout=HANG_LIMIT_S, check=False)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return {row["profile"]: row for row in json.loads((report / "report.json").read_text())["races"]}


@pytest.mark.slow
def test_a_cut_link_is_bridged_and_the_race_agrees_in_real_time(three_profiles):
    row = three_profiles["partition"]
    assert row["class"] == "agreed", row["reason"]
    assert "cut for" in row["reason"] and set(row["outcomes"].values()) == {"finished"}
    assert row["realtime_ratio"] >= 0.9


@pytest.mark.slow
def test_a_hostile_member_is_refused_removed_and_the_others_race(three_profiles):
    row = three_profiles["hostile-ready"]
    assert row["class"] == "detected", row["reason"]
    assert "removed" in row["reason"] and set(row["outcomes"].values()) == {"finished"}


@pytest.mark.slow
def test_a_race_over_thin_links_keeps_real_time(three_profiles):
    row = three_profiles["thin-link"]
    assert row["class"] == "agreed", row["reason"]
    assert row["realtime_ratio"] >= 0.9 and all(r >= 0.9 for r in row["node_realtime_ratios"].values())
