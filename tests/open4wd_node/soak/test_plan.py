"""Race plans follow from the soak seed alone, take the profiles in turn, and survive JSON."""

import json
import random

from hypothesis import given
from hypothesis import strategies as st

from open4wd_node.runtime.errors import UserError
from open4wd_node.soak.plan import RacePlan, SoakOptions, plan_race
from open4wd_node.soak.profiles import FAULT_FRAMES, FAULT_WINDOW_S, Faults, LinkTransport, LinkTrouble, Profile, \
    draw_faults, parse_profiles
from tests.coded import raises_coded


def test_a_plan_is_a_function_of_the_soak_options_and_the_index():
    races = 2 * len(Profile)
    options = SoakOptions(races=races, nodes=(2, 8), seed=42, mode="mixed")
    plans = [plan_race(options, i) for i in range(races)]
    assert plans == [plan_race(options, i) for i in range(races)]
    assert [p.profile for p in plans] == list(Profile) * 2  # in turn: every profile gets its share
    assert len({p.seed for p in plans}) == races
    assert plan_race(SoakOptions(races=16, nodes=(2, 8), seed=43, mode="mixed"), 0).seed != plans[0].seed
    assert {len(p.modes) for p in plans} == {p.nodes for p in plans} and all(2 <= p.nodes <= 8 for p in plans)
    assert {m for p in plans for m in p.modes} == {"rollback", "lockstep"}  # mixed: both, drawn per node
    assert plans[3].race_id == "0003-stall"


@given(seed=st.integers(0, 2**64 - 1), index=st.integers(0, 100_000), low=st.integers(2, 8), span=st.integers(0, 6),
       per_tick=st.integers(1, 4))
def test_plans_survive_json_and_their_faults_stay_in_their_windows(seed, index, low, span, per_tick):
    options = SoakOptions(races=index + 1, nodes=(low, min(8, low + span)), seed=seed, frames_per_tick=per_tick)
    assert SoakOptions.from_json(json.loads(json.dumps(options.to_json()))) == options
    plan = plan_race(options, index)
    assert plan.frames_per_tick == per_tick
    assert RacePlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    faults, victim = plan.faults, plan.faults.victim
    assert victim is None or 0 <= victim < plan.nodes
    for timed in (faults.stop, faults.kill):
        if timed is not None:
            assert FAULT_WINDOW_S[0] <= timed.at_s <= FAULT_WINDOW_S[1]
    if faults.node_fault is not None:
        assert FAULT_FRAMES[0] <= faults.node_fault.frame <= FAULT_FRAMES[1]
        assert faults.node_fault.kind != "disconnect" or 2 <= faults.node_fault.seconds <= 20
    if faults.stop is not None:
        assert 1 <= faults.stop.seconds <= 10


def test_each_profile_draws_its_own_kind_of_fault():
    def draw(profile):
        return draw_faults(profile, random.Random(1), 3, 60)

    assert draw(Profile.CLEAN) == draw(Profile.CLEAN).__class__()
    assert (draw(Profile.LATENCY).links.delay_ms, draw(Profile.LATENCY).links.jitter_ms) == (50, 30)
    jitter = draw(Profile.JITTER_LOSS).links
    assert jitter.bandwidth_bytes_per_s and jitter.hiccups and all(0.1 <= h.seconds <= 0.8 for h in jitter.hiccups)
    assert draw(Profile.STALL).stop and draw(Profile.KILL).kill and draw(Profile.TAMPER).tamper
    assert draw(Profile.CORRUPT).node_fault.option()[1].startswith("corrupt-state@")
    assert draw(Profile.DISCONNECT).node_fault.option()[1].startswith("disconnect@")
    cut = draw(Profile.PARTITION).node_fault
    assert cut.option()[1] == f"cut-link@{cut.frame}:{cut.seconds}" and 3 <= cut.seconds <= 10
    assert draw(Profile.THIN_LINK).links == LinkTrouble(bandwidth_bytes_per_s=32 * 1024)
    assert draw(Profile.HOSTILE_READY).hostile.seconds > 0
    assert draw(Profile.WEBRTC) == Faults(transport=LinkTransport.WEBRTC)  # what the links run over, nothing more
    assert draw(Profile.TURN) == Faults(transport=LinkTransport.TURN)
    assert {draw(p).transport for p in Profile if p not in (Profile.WEBRTC, Profile.TURN)} == {LinkTransport.TCP}


@given(st.integers(0, 2**32), st.integers(2, 8))
def test_transport_and_spectator_faults_stay_in_their_bounds_and_survive_json(seed, nodes):
    turn = draw_faults(Profile.TURN, random.Random(seed), nodes, 60)
    watching = draw_faults(Profile.SPECTATORS, random.Random(seed), nodes, 60)
    assert watching.spectators is not None and 1 <= watching.spectators.count <= 2
    fault = watching.spectators.fault
    if fault is not None:
        assert 0 <= fault.spectator < watching.spectators.count and FAULT_WINDOW_S[0] <= fault.at_s <= FAULT_WINDOW_S[1]
    for faults in (turn, watching):
        assert Faults.from_json(json.loads(json.dumps(faults.to_json()))) == faults


def test_a_plan_written_before_the_transport_and_spectator_profiles_still_reads():
    old = draw_faults(Profile.KILL, random.Random(3), 3, 60).to_json()
    del old["transport"], old["spectators"]
    old["relay"] = None  # the retired relay profile's field: ignored
    assert Faults.from_json(old) == draw_faults(Profile.KILL, random.Random(3), 3, 60)


def test_a_soak_or_plan_written_before_frames_per_tick_ticks_every_frame():
    options = SoakOptions(races=3, seed=5, frames_per_tick=2)
    old_options, old_plan = options.to_json(), plan_race(options, 1).to_json()
    del old_options["frames_per_tick"], old_plan["frames_per_tick"]
    assert SoakOptions.from_json(old_options).frames_per_tick == RacePlan.from_json(old_plan).frames_per_tick == 1


def test_a_soak_races_its_nodes_with_its_frames_per_tick(tmp_path):
    from open4wd_node.demo.runner import _node_args
    from open4wd_node.soak.race import demo_options

    plan = plan_race(SoakOptions(races=3, nodes=(3, 3), seed=5, frames_per_tick=3), 2)
    options = demo_options(plan)
    assert (options.nodes, options.seed, options.frames_per_tick) == (3, plan.seed, 3)
    argv = _node_args(options, 1, tmp_path)
    assert argv[argv.index("--frames-per-tick") + 1] == "3"


def test_the_webrtc_and_turn_profiles_start_their_services_and_no_node_listens():
    from open4wd_node.soak.race import _Harness, demo_options

    for profile, turn in ((Profile.WEBRTC, False), (Profile.TURN, True)):
        plan = plan_race(SoakOptions(races=1, profiles=(profile,), seed=4), 0)
        options = demo_options(plan)
        assert (options.transport, options.turn) == ("webrtc", turn)  # the demo's services: signal, and coturn
        extra = _Harness(plan, "127.9.9").extra(1)
        assert "--listen" not in extra and "--advertise" not in extra  # reached through the service only
    clean = plan_race(SoakOptions(races=1, profiles=(Profile.CLEAN,), seed=4), 0)
    assert demo_options(clean).transport == "tcp"


def test_profiles_are_parsed_and_refused_by_name():
    assert parse_profiles("all") == tuple(Profile)
    assert Profile.TURN in parse_profiles("all") and Profile.SPECTATORS in parse_profiles("all")
    assert parse_profiles(" kill,clean,kill ") == (Profile.KILL, Profile.CLEAN)
    assert parse_profiles("webrtc,turn") == (Profile.WEBRTC, Profile.TURN)
    with raises_coded(UserError, "soak-invalid", match="webrtc, turn"):
        parse_profiles("relay")  # retired: coturn is the relay (profile turn)
    with raises_coded(UserError, "soak-invalid", match="comma list of clean, latency"):
        parse_profiles("clean,lag")
    with raises_coded(UserError, "soak-invalid", match="names no profile"):
        parse_profiles(" , ")
