"""The report directory: rows recorded as races finish, resumed after a stop, and the report pages."""

import io
import json
import re
import tarfile

import pytest

from open4wd_node.runtime.errors import UserError
from open4wd_node.soak.cluster import crashed_row, pending
from open4wd_node.soak.plan import SoakOptions, plan_race
from open4wd_node.soak.profiles import Profile
from open4wd_node.soak.report import ReportDir

OPTIONS = SoakOptions(races=4, profiles=(Profile.CLEAN, Profile.CORRUPT), seed=5)


def row(index, race_class="agreed", detection=None):
    plan = plan_race(OPTIONS, index)
    base = crashed_row(plan, RuntimeError("x"))
    return {**base, "class": race_class, "reason": f"because {index}", "detection_frames": detection, "frames": 1789,
            "worst_lag": index, "max_rollback": 2, "curves": {"node0": [[59, 0, 1], [119, 3, 2]], "node1": [[59, 1, 0]]}}


def packed(files):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_rows_are_kept_as_they_come_and_a_stopped_soak_resumes(tmp_path):
    report = ReportDir(tmp_path / "r", OPTIONS)
    report.record(row(0), None)
    kept = report.record(row(1, "detected", 343), packed({"node1/races/x.o4wlog": b"log", "plan.json": b"{}"}))
    assert kept["repro"] == f"open4wd-node soak repro 0001-corrupt --report {tmp_path / 'r'}"
    assert (tmp_path / "r/races/0001-corrupt/node1/races/x.o4wlog").read_bytes() == b"log"
    with (tmp_path / "r/results.jsonl").open("a") as results:
        results.write('{"race_id": "0002-cle')  # killed while writing: that race runs again
    again = ReportDir(tmp_path / "r", OPTIONS)
    assert [r["race_id"] for r in again.rows()] == ["0000-clean", "0001-corrupt"]
    assert [p.race_id for p in pending(OPTIONS, again)] == ["0002-clean", "0003-corrupt"]


def test_another_soak_in_the_same_directory_is_refused(tmp_path):
    ReportDir(tmp_path, OPTIONS)
    with pytest.raises(UserError, match="seed 5 there, 6 now") as refused:
        ReportDir(tmp_path, SoakOptions(races=4, profiles=(Profile.CLEAN, Profile.CORRUPT), seed=6))
    assert refused.value.code == "soak-report-mismatch"
    with pytest.raises(UserError) as missing:
        ReportDir(tmp_path / "nothing")
    assert missing.value.code == "soak-report-missing"
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError) as unwritable:
        ReportDir(tmp_path / "file" / "r", OPTIONS)
    assert unwritable.value.code == "soak-report-unwritable"


def test_the_report_pages_summarise_every_race(tmp_path):
    report = ReportDir(tmp_path, OPTIONS)
    pages = {1: {"replay_page": "replay.html", "replay_page_node": "node0"}, 3: {"replay_page_error": "no node left a race log"}}
    for index, (race_class, detection) in enumerate([("agreed", None), ("detected", 343), ("agreed", None), ("detected", 223)]):
        report.record({**row(index, race_class, detection), **pages.get(index, {})},
                      packed({"a": b"b"}) if race_class != "agreed" else None)
    summary = report.finish({"races_run": 4, "races_per_hour": 80.0, "workers": 2, "load_average": 1.5})
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["summary"] == summary and len(data["races"]) == 4 and data["soak"]["seed"] == 5
    assert summary["classes"]["agreed"] == 2 and summary["classes"]["detected"] == 2 and summary["classes"]["crash"] == 0
    assert summary["profiles"] == {"clean": {"agreed": 2}, "corrupt": {"detected": 2}}
    assert (summary["corruptions"], summary["corruptions_detected"]) == (2, 2)
    assert summary["detection_frames"] == {"median": 283.0, "worst": 343, "all": [223, 343]}
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") == 1 + 4  # the histogram, and the curves of the sampled races
    assert "0001-corrupt" in page and "open4wd-node soak repro 0003-corrupt" in page
    assert not re.search(r"""src=['"]""", page)  # self-contained: nothing to fetch beside it
    # the only links: each kept race's replay page, relative to the report (the directory moves whole)
    assert re.findall(r"""href=['"]([^'"]*)['"]""", page) == ["races/0001-corrupt/replay.html"]
    assert "no node left a race log" in page
