import os
import signal
import subprocess
import sys

import pytest

from open4wd_node.runtime.errors import UserError
from open4wd_node.race.log import MAGIC, EndReason, LogReader, LogStatus, RaceLogWriter, encode_record, end_record


def write(path, records):
    with RaceLogWriter(path) as log:
        for r in records:
            log.append(r)
            log.flush()


def test_round_trip(tmp_path):
    path = tmp_path / "m" / "race.log"
    records = [{"kind": "header", "v": 1}, {"kind": "input", "frame": 3, "sig": b"\x01" * 64}]
    write(path, records)
    reader = LogReader(path)
    assert [r.record for r in reader] == records and not reader.truncated


def test_never_overwrites(tmp_path):
    path = tmp_path / "race.log"
    write(path, [{"kind": "a"}])
    with pytest.raises(UserError) as info:
        RaceLogWriter(path)
    assert info.value.code == "race-log-exists"


@pytest.mark.parametrize("cut", range(1, 30))
def test_torn_tail_is_truncation_not_damage(tmp_path, cut):
    path = tmp_path / "race.log"
    write(path, [{"kind": "a", "n": 1}, {"kind": "b", "n": 2}])
    data = path.read_bytes()
    path.write_bytes(data[:-cut])
    reader = LogReader(path)
    kinds = [r.record["kind"] for r in reader]
    whole_second = len(encode_record({"kind": "b", "n": 2}))
    assert kinds == (["a"] if cut <= whole_second else [])
    assert reader.truncated == (cut != whole_second)


RACE = [{"kind": "header", "v": 1}, {"kind": "frame", "frame": 0}, {"kind": "frame", "frame": 1}]


def read_all(path):
    reader = LogReader(path)
    return [r.record for r in reader], reader


def test_a_closed_log_is_complete_and_keeps_its_end_record(tmp_path):
    path = tmp_path / "race.log"
    end = end_record(EndReason.ENDED, outcome="finished")
    write(path, [*RACE, end])
    records, reader = read_all(path)
    assert records == [*RACE, end] and reader.status is LogStatus.COMPLETE
    assert reader.end == {"kind": "end", "reason": "ended", "outcome": "finished", "detail": ""}


@pytest.mark.parametrize("kept", range(len(RACE) + 1))
def test_a_log_cut_at_a_record_boundary_is_incomplete(tmp_path, kept):
    """Whole records but no end record: the writer stopped between two records without closing the log."""
    path = tmp_path / "race.log"
    write(path, [*RACE, end_record(EndReason.TERMINATED)])
    boundary = len(MAGIC) + sum(len(encode_record(r)) for r in RACE[:kept])
    path.write_bytes(path.read_bytes()[:boundary])
    records, reader = read_all(path)
    assert records == RACE[:kept] and reader.status is LogStatus.INCOMPLETE and reader.end is None


@pytest.mark.parametrize("into", [1, 5, 12, 13])
def test_a_log_cut_inside_a_record_is_torn(tmp_path, into):
    """Cut ``into`` bytes into the end record (inside its 12-byte head, or inside its body)."""
    path = tmp_path / "race.log"
    write(path, [*RACE, end_record(EndReason.INTERRUPTED)])
    boundary = len(MAGIC) + sum(len(encode_record(r)) for r in RACE)
    path.write_bytes(path.read_bytes()[:boundary + into])
    records, reader = read_all(path)
    assert records == RACE and reader.status is LogStatus.TORN and reader.end is None


def test_nothing_may_follow_the_end_record(tmp_path):
    path = tmp_path / "race.log"
    write(path, [RACE[0], end_record(EndReason.ERROR, detail="RuntimeError: boom"), RACE[1]])
    with pytest.raises(UserError) as info:
        read_all(path)
    assert info.value.code == "race-log-damaged" and "record 2" in info.value.message and "follows the end" in info.value.message


def test_reading_twice_gives_the_same_verdict(tmp_path):
    path = tmp_path / "race.log"
    write(path, [*RACE, end_record(EndReason.CANCELLED)])
    reader = LogReader(path)
    assert list(reader) == list(reader) and reader.status is LogStatus.COMPLETE


def test_flipped_byte_is_damage(tmp_path):
    path = tmp_path / "race.log"
    write(path, [{"kind": "a", "n": 1}, {"kind": "b", "n": 2}])
    data = bytearray(path.read_bytes())
    data[len(MAGIC) + 14] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(UserError) as info:
        list(LogReader(path))
    assert info.value.code == "race-log-damaged" and "record 0" in info.value.message


def test_not_a_log(tmp_path):
    path = tmp_path / "x"
    path.write_bytes(b"hello")
    with pytest.raises(UserError) as info:
        list(LogReader(path))
    assert info.value.code == "race-log-damaged"


def test_readable_after_kill_9(tmp_path):
    path = tmp_path / "race.log"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from open4wd_node.race.log import RaceLogWriter\n"
        "log = RaceLogWriter(Path(sys.argv[1]))\n"
        "for i in range(100000):\n"
        "    log.append({'kind': 'input', 'frame': i, 'pad': b'x' * 100})\n"
        "    if i % 10 == 9: log.flush()\n"
        "    if i == 500: print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    frames = [r.record["frame"] for r in LogReader(path)]
    assert frames == list(range(len(frames))) and len(frames) >= 500
