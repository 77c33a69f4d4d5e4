"""Race logs end with why, and ``replay`` tells a complete log from an incomplete or torn one: real
races between whole nodes (loopback TCP, autojump clock), real log files cut and damaged on disk."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing

from open4wd_node.assets.store import AssetStore
from open4wd_node.cli.main import main
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.errors import UserError
from open4wd_node.drivers.bot import BotDriver
from open4wd_node.race.log import LogReader, LogStatus, encode_record
from open4wd_node.runtime.blocking import blocking_work_inline
from open4wd_node.race.replay import replay
from open4wd_node.assets.room_assets import NodeRoomAssets
from tests.open4wd_node.race.nodes import race, short_track

SHORT = short_track(8.0)


@pytest.fixture(scope="module")
def raced(tmp_path_factory):
    """One real two-node race, run once: node 0's data dir, its log and its result event."""
    tmp = tmp_path_factory.mktemp("race")
    with blocking_work_inline():  # as the fast_clock fixture (tests/conftest.py) does
        recorders, codes = trio.run(partial(race, tmp, 2, track_bytes=SHORT), clock=trio.testing.MockClock(autojump_threshold=0))
    assert codes == {0: 0, 1: 0}
    result = recorders[0].of("result")[0]
    return tmp / "n0", Path(result["log"]), result


@pytest.fixture
def log_copy(raced, tmp_path):
    """A fresh copy of the raced log to cut or damage, and the node's data dir (its store holds the track)."""
    data_dir, log, _ = raced
    copy = tmp_path / log.name
    copy.write_bytes(log.read_bytes())
    return data_dir, copy


def boundaries(path: Path) -> list[int]:
    """The byte offset where each record starts, then the end of the file."""
    offsets = [r.offset for r in LogReader(path)]
    return offsets + [path.stat().st_size]


def replay_cli(capsys, data_dir: Path, log: Path, *extra: str) -> tuple[int, dict, str]:
    status = main(["--data-dir", str(data_dir), "replay", str(log), "--json", *extra])
    out, err = capsys.readouterr()
    return status, json.loads(out), err


def test_a_finished_match_is_complete_and_counts_what_the_node_counted(raced, capsys):
    data_dir, log, result = raced
    report = replay(log, NodeRoomAssets(AssetStore.in_data_dir(data_dir), DEFAULTS))
    assert report.status is LogStatus.COMPLETE and (report.end_reason, report.outcome) == ("ended", "finished")
    # the node's agreed_hashes are its agreed checksum votes; the round's final hash is counted apart
    assert report.votes_agreed == report.votes_verified == result["agreed_hashes"] >= 1
    assert report.round_ends_verified == 1
    status, body, err = replay_cli(capsys, data_dir, log)
    assert (status, body["ok"], body["status"], body["end_reason"], err) == (0, True, "complete", "ended", "")
    assert body["votes_agreed"] == result["agreed_hashes"]


def test_a_log_cut_at_a_record_boundary_is_incomplete(log_copy, capsys):
    data_dir, log = log_copy
    offsets = boundaries(log)
    log.write_bytes(log.read_bytes()[:offsets[len(offsets) // 2]])  # half the race, no result, no end record
    status, body, err = replay_cli(capsys, data_dir, log)
    assert status == 1 and body["ok"] is False and body["status"] == "incomplete" and body["end_reason"] is None
    assert body["error"]["code"] == "replay-incomplete" and body["round_ends_verified"] == 0
    assert err.startswith("error[replay-incomplete]:") and f"frame {body['last_frame']}" in err
    assert body["last_frame"] > 0 and body["frames"] == body["last_frame"] + 1
    status, body, err = replay_cli(capsys, data_dir, log, "--allow-incomplete")
    assert (status, body["ok"], body["status"], err) == (0, True, "incomplete", "")


def test_a_log_missing_only_its_end_record_is_incomplete(log_copy, capsys):
    data_dir, log = log_copy
    log.write_bytes(log.read_bytes()[:boundaries(log)[-2]])
    status, body, _ = replay_cli(capsys, data_dir, log)
    assert (status, body["status"], body["error"]["code"]) == (1, "incomplete", "replay-incomplete")
    assert body["round_ends_verified"] == 1  # everything but the end record is there, and verified


@pytest.mark.parametrize("into", [3, 40])
def test_a_log_cut_inside_a_record_is_torn_and_verified_up_to_it(log_copy, capsys, into):
    data_dir, log = log_copy
    offsets = boundaries(log)
    middle = offsets[len(offsets) // 2]
    whole = replay(log, NodeRoomAssets(AssetStore.in_data_dir(data_dir), DEFAULTS))
    log.write_bytes(log.read_bytes()[:middle + into])
    report = replay(log, NodeRoomAssets(AssetStore.in_data_dir(data_dir), DEFAULTS))
    assert report.status is LogStatus.TORN and 0 < report.frames < whole.frames
    status, body, err = replay_cli(capsys, data_dir, log)
    assert (status, body["status"], body["error"]["code"]) == (1, "torn", "replay-torn")
    assert err.startswith("error[replay-torn]:") and f"round 1 frame {report.last_frame}" in err
    assert replay_cli(capsys, data_dir, log, "--allow-incomplete")[0] == 0


def test_a_flipped_byte_is_damage_with_the_last_good_frame(log_copy, capsys):
    data_dir, log = log_copy
    offsets = boundaries(log)
    data = bytearray(log.read_bytes())
    data[offsets[len(offsets) // 2] + 20] ^= 0x01  # inside a record's body: its checksum fails
    log.write_bytes(bytes(data))
    with pytest.raises(UserError) as info:
        replay(log, NodeRoomAssets(AssetStore.in_data_dir(data_dir), DEFAULTS))
    assert info.value.code == "race-log-damaged" and "good up to round 1 frame" in info.value.message
    assert main(["--data-dir", str(data_dir), "replay", str(log)]) == 1
    assert capsys.readouterr().err.startswith("error[race-log-damaged]:")


def test_an_end_record_then_more_is_damage(log_copy):
    data_dir, log = log_copy
    log.write_bytes(log.read_bytes() + encode_record({"kind": "frame", "round": 0, "frame": 10**6, "inputs": []}))
    with pytest.raises(UserError) as info:
        replay(log, NodeRoomAssets(AssetStore.in_data_dir(data_dir), DEFAULTS))
    assert info.value.code == "race-log-damaged" and "follows the end record" in info.value.message


def last_record(recorder) -> dict:
    path = Path(recorder.of("log")[0]["path"])
    reader = LogReader(path)
    records = [r.record for r in reader]
    assert reader.status is LogStatus.COMPLETE and records[-1] is reader.end
    return records[-1]


async def test_an_exception_ends_the_log_with_error_and_the_cancelled_peer_with_cancelled(tmp_path, fast_clock, monkeypatch):
    decide = BotDriver.decide

    def failing(self, world, slot, frame):
        if self.seed == 1 and frame == 30:
            raise RuntimeError("the driver broke")
        return decide(self, world, slot, frame)

    monkeypatch.setattr(BotDriver, "decide", failing)
    out: dict = {}
    with pytest.raises(BaseExceptionGroup) as info:
        await race(tmp_path, 2, track_bytes=SHORT, recorders_out=out)
    assert info.group_contains(RuntimeError, match="the driver broke")
    broken, peer = last_record(out["recorders"][1]), last_record(out["recorders"][0])
    assert broken["reason"] == "error" and "RuntimeError: the driver broke" in broken["detail"]
    assert broken["outcome"] is None
    assert peer["reason"] == "cancelled"  # stopped by its own program (the failed sibling), no signal


async def test_a_match_stopped_by_its_caller_ends_cancelled(tmp_path, fast_clock):
    recorders, codes = await race(tmp_path, 2, track_bytes=short_track(200.0), limit_s=20)
    assert codes == {}  # neither node got to the end of its match
    assert [last_record(r)["reason"] for r in recorders] == ["cancelled", "cancelled"]
