"""A short run of every fuzzer (fixed seeds, bounded by executions, not by time): every committed seed
is a real input its door reads deep, and neither the seeds nor their mutations let anything but a
``CodedError`` escape. The long campaigns are fuzz/README.md's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.doors import MODULES, target
from fuzz.harness import InputTimedOut, Target, check, frames, join_frames, run_mutator
from tests.coded import raises_coded

REPO = Path(__file__).resolve().parents[2]
SMOKE_EXECUTIONS = 120  # per target: a few seconds for all of them together


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_door_survives_its_seeds_and_their_mutations(name: str) -> None:
    chosen = target(name)
    assert chosen.seeds(), f"{name} has no committed seed corpus in {chosen.corpus_dir}"
    report = run_mutator(chosen, SMOKE_EXECUTIONS, seed=18)
    assert report.executions == SMOKE_EXECUTIONS
    assert not report.findings, [f.describe() for f in report.findings[:5]]


@pytest.mark.parametrize("name", ["link-handshake", "glb-reader", "glb-admission", "glb-bake", "room-host",
                                  "room-member", "race-session", "race-log", "state-file", "loadout", "config-toml",
                                  "invitation", "spectate-source", "spectate-viewer",
                                  "signal-server", "signal-client", "webrtc-chunks", "webrtc-sdp"])
def test_seeds_are_inputs_the_door_accepts(name: str) -> None:
    """A seed that its door refuses at once would make the fuzzer mutate the refusal, not the door: each
    of these seeds goes through without a coded refusal (the doors left out keep a refused seed on
    purpose: a tampered frame, the fuzzer's findings)."""
    chosen = target(name)
    for seed in chosen.seeds():
        chosen.one_input(seed)  # a CodedError here fails the test


def test_a_door_that_raises_anything_else_is_a_finding_and_a_hang_times_out() -> None:
    def buggy(data: bytes) -> None:
        raise ZeroDivisionError("a bug")

    def hangs(data: bytes) -> None:
        while True:
            pass

    finding = check(Target("buggy", buggy, "raises"), b"x")
    assert finding is not None and isinstance(finding.error, ZeroDivisionError)
    finding = check(Target("hangs", hangs, "never ends"), b"x", time_limit_s=0.2)
    assert finding is not None and isinstance(finding.error, InputTimedOut)


def test_frames_round_trip_and_take_any_bytes() -> None:
    parts = [b"", b"abc", bytes(300)]
    assert list(frames(join_frames(parts))) == parts
    assert list(frames(b"\x00")) == [b"\x00"] and list(frames(b"\x00\x09ab")) == [b"ab"]


def test_the_viewer_seeds_verify_the_players_hashes_on_the_real_round() -> None:
    """The spectator stream seed is a real race's: a viewer fed it re-simulates the round and every hash
    check at a vote frame agrees with the players' signed votes."""
    from fuzz.doors import race, spectate
    from open4wd_node.race.world import WorldAdapter
    from protocol.encoding.wire import decode_message
    from protocol.spectate.actions import HashChecked
    from protocol.spectate.viewer import SpectateViewer

    seed = max(target("spectate-viewer").seeds(), key=len)  # the whole stream
    adapter = WorldAdapter(race.round_start(race.shared_world()))
    viewer = SpectateViewer(race.MATCH_ID, [spectate.view_round()], lambda index: adapter, [race.PEER.peer_id])
    viewer.start(0)
    checks = []
    for part in frames(seed):
        # a vote that arrives after its frame was shown is checked at once, otherwise when the frame is
        checks += [a for a in viewer.receive(race.PEER.peer_id, decode_message(part[1:]), 0) if isinstance(a, HashChecked)]
        while True:
            stepped, actions = viewer.advance(0)
            checks += [a for a in actions if isinstance(a, HashChecked)]
            if not stepped:
                break
    assert len(checks) >= 2 and all(check.agreed for check in checks)


def test_the_sealed_door_rewinds_its_kept_link_to_a_new_one() -> None:
    """``link-sealed`` keeps one handshake's result and rewinds its counters per input: what it gives is
    the link a new handshake gives (the same keys seal and open the same first frames), whatever the
    input before it did."""
    from fuzz.doors import link

    target("link-sealed").one_input(max(target("link-sealed").seeds(), key=len))  # moves the counters
    kept_dialer, kept_listener = link.fresh_pair()
    new_dialer, new_listener = link.open_pair()
    for body in (b"first", b"second"):
        assert kept_dialer.send.seal(body) == new_dialer.send.seal(body)
        assert new_dialer.receive.open(kept_listener.send.seal(body)) == body


def test_the_room_doors_only_skip_assembling_their_own_car_again() -> None:
    """The room doors' members start out remembering that their own car passed (each member's first
    check assembles it; every input would do it again). The memory is that car's only: another car in
    a ReadySet is still assembled, and a car that fails is still refused."""
    from fuzz.doors import room
    from protocol.errors import ProtocolError
    from sim_core.assets.demo_round import archetype_loadout

    seat = room.with_own_car_passed(room.new_member(room.HOST_ID))
    assert seat.passed_rotations == {repr([archetype_loadout(1)])}
    seat._check_rotation(room.HOST_ID.peer_id, [archetype_loadout(2)])  # assembled, and passes
    broken = dict(archetype_loadout(1), motor="builtin:motor-99")
    with raises_coded(ProtocolError, "loadout-unknown-builtin"):
        seat._check_rotation(room.HOST_ID.peer_id, [broken])
    assert repr([broken]) not in seat.passed_rotations


def test_a_door_builds_its_fixtures_before_the_per_input_limit_counts() -> None:
    """The first input of a door also builds its fixtures (seconds on a loaded machine): it runs under the
    warm-up limit, and every input after it, that one included, under the per-input limit."""
    import time

    built: list[bool] = []

    def slow_to_build(data: bytes) -> None:
        if not built:
            time.sleep(0.5)  # the fixture: longer than the per-input limit below
            built.append(True)

    report = run_mutator(Target("warm", slow_to_build, "builds a fixture first"), 5, seed=1, time_limit_s=0.25)
    assert report.executions == 5 and not report.findings


def test_every_spectate_source_input_meets_the_same_source() -> None:
    """``spectate-source`` unpickles its source per input: a copy as the source stood, whatever the input
    before it did to its own."""
    import pickle

    from fuzz.doors import spectate

    from protocol.spectate.messages import ModeSelect, SpectateMode

    first = spectate.source_at_vote()
    before = pickle.dumps(first)
    first.receive(spectate.SPECTATOR, ModeSelect(SpectateMode.REPLAY.value, spectate.race.MATCH_ID, 1), 0)
    target("spectate-source").one_input(max(target("spectate-source").seeds(), key=len))
    assert pickle.dumps(spectate.source_at_vote()) == before != pickle.dumps(first)


def test_a_door_process_leaves_no_scratch_directory_behind(tmp_path: Path) -> None:
    """The files and room doors write real files; a process that ran them removes its scratch directories
    when it exits (a test run or a campaign left two in the temporary directory per process before)."""
    script = ("import sys\nfrom fuzz.doors import target\nfrom fuzz.harness import scratch_dir\n"
              "target('config-toml').one_input(b'log_format = \"json\"\\n')\n"
              "target('room-host').one_input(b'')\n"
              "print(scratch_dir('files'), scratch_dir('room'), sep='\\n')\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    made = [Path(line) for line in done.stdout.splitlines()]
    assert len(made) == 2 and all(path.parent == tmp_path for path in made), done.stdout
    assert list(tmp_path.iterdir()) == []
