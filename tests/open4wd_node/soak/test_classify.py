"""The classifier on made-up observations: every class, and the faults that explain what they explain."""

from dataclasses import replace

from open4wd_node.soak.classify import KILLED, NodeObservation, RaceClass, classify, realtime_ratio
from open4wd_node.soak.plan import RacePlan
from open4wd_node.soak.profiles import Faults, LinkTransport, LinkTrouble, NodeFault, NodeKill, NodeStop, Profile, \
    SpectatorFault, SpectatorFaultKind, Spectators, Tamper

HASH = "ab" * 32


def plan(profile=Profile.CLEAN, faults=None, nodes=3):
    return RacePlan(race_id=f"0000-{profile}", index=0, seed=1, profile=profile, nodes=nodes, modes=("rollback",) * nodes,
                    race_seconds=60, track="builtin:track-01", laps=1, faults=faults or Faults())


def finished(index, **changes):
    node = NodeObservation(index=index, returncode=0, outcome="finished", agreed=14, last_frame=1789, replay_ok=True,
                           replay_status="complete", final_hash=HASH)
    return replace(node, **changes)


def test_every_node_finished_and_agreed_is_agreed():
    verdict = classify(plan(), [finished(i) for i in range(3)])
    assert verdict.race_class is RaceClass.AGREED and verdict.detection_frames is None


def test_a_disagreeing_vote_with_no_fault_is_a_false_desync():
    nodes = [finished(0), finished(1, disagreements=1, disagree_frames=[240]), finished(2)]
    verdict = classify(plan(), nodes)
    assert verdict.race_class is RaceClass.FALSE_DESYNC and "node1" in verdict.reason and "240" in verdict.reason


def test_a_non_deterministic_build_that_ends_in_a_tie_is_a_false_desync_not_a_crash():
    tie = [finished(i, returncode=1, outcome="consensus-invalid", disagreements=1, disagree_frames=[240]) for i in range(3)]
    verdict = classify(plan(), tie)
    assert verdict.race_class is RaceClass.FALSE_DESYNC and "frames [240]" in verdict.reason
    # without a disagreement to explain it, a vote's end is an exit nothing explains
    assert classify(plan(), [finished(0), finished(1), finished(2, returncode=1, outcome="consensus-invalid")]).race_class \
        is RaceClass.CRASH


def test_final_hashes_that_differ_are_a_false_desync_even_when_every_vote_agreed():
    verdict = classify(plan(), [finished(0), finished(1), finished(2, final_hash="cd" * 32)])
    assert verdict.race_class is RaceClass.FALSE_DESYNC and "final state hashes" in verdict.reason


def test_a_corruption_voted_out_is_detected_with_its_frames_to_detection():
    corrupt = plan(Profile.CORRUPT, Faults(node_fault=NodeFault(1, "corrupt-state", 377)))
    votes = [480, 600, 720]
    nodes = [finished(0, disagreements=3, disagree_frames=votes),
             NodeObservation(1, returncode=1, outcome="persistent-desync", disagreements=3, disagree_frames=votes,
                             fault_fired=True, replay_ok=False, replay_error="replay-mismatch: round 1 frame 480: differs"),
             finished(2, disagreements=3, disagree_frames=votes)]
    verdict = classify(corrupt, nodes)
    assert (verdict.race_class, verdict.detection_frames) == (RaceClass.DETECTED, 720 - 377)
    # a disagreement before the corruption is not explained by it
    early = [replace(nodes[0], disagree_frames=[240, *votes]), *nodes[1:]]
    assert classify(corrupt, early).race_class is RaceClass.FALSE_DESYNC
    # the corrupted node's own log cannot replay past the corruption; a mismatch before it is a failure
    before = [nodes[0], replace(nodes[1], replay_error="replay-mismatch: round 1 frame 360: differs"), nodes[2]]
    assert classify(corrupt, before).race_class is RaceClass.REPLAY_FAILED


def test_a_corruption_nobody_caught_is_undetected_and_one_that_never_fired_is_no_detection():
    corrupt = plan(Profile.CORRUPT, Faults(node_fault=NodeFault(0, "corrupt-state", 300)))
    missed = [finished(0, fault_fired=True, final_hash="cd" * 32), finished(1), finished(2)]
    assert classify(corrupt, missed).race_class is RaceClass.UNDETECTED
    assert classify(corrupt, [finished(i) for i in range(3)]).race_class is RaceClass.AGREED


def test_a_two_node_corruption_ends_in_a_tie_on_both():
    corrupt = plan(Profile.CORRUPT, Faults(node_fault=NodeFault(0, "corrupt-state", 200)), nodes=2)
    tie = [NodeObservation(i, returncode=1, outcome="consensus-invalid", disagreements=1, disagree_frames=[240],
                           fault_fired=i == 0, replay_ok=i == 1,
                           replay_error="replay-mismatch: round 1 frame 240: x" if i == 0 else None) for i in range(2)]
    verdict = classify(corrupt, tie)
    assert (verdict.race_class, verdict.detection_frames) == (RaceClass.DETECTED, 40)


def test_a_killed_node_is_explained_and_its_survivors_must_finish():
    kill = plan(Profile.KILL, Faults(kill=NodeKill(2, 4.0)))
    killed = NodeObservation(2, returncode=KILLED, fault_fired=True, replay_ok=True, replay_status="torn")
    assert classify(kill, [finished(0), finished(1), killed]).race_class is RaceClass.DETECTED
    void = finished(1, returncode=1, outcome="partition-void")
    verdict = classify(kill, [finished(0), void, killed])
    assert verdict.race_class is RaceClass.CRASH and "node1 exited 1" in verdict.reason
    # in a race of two, the survivor of a kill is no majority: giving up is the documented end
    two = plan(Profile.KILL, Faults(kill=NodeKill(1, 4.0)), nodes=2)
    assert classify(two, [finished(0, returncode=1, outcome="partition-void"), replace(killed, index=1)]).race_class \
        is RaceClass.DETECTED


def test_a_node_killed_by_nobody_a_traceback_or_a_failed_room_is_a_crash():
    assert classify(plan(), [finished(0), finished(1), NodeObservation(2, returncode=KILLED)]).race_class is RaceClass.CRASH
    traced = classify(plan(), [finished(0), finished(1), finished(2, traceback=True)])
    assert traced.race_class is RaceClass.CRASH and "traceback" in traced.reason
    failed = classify(plan(), [], failure="demo-failed: the host did not open its room")
    assert failed.race_class is RaceClass.CRASH and "demo-failed" in failed.reason
    # the race's services failed before any node started: the failure, not the nodes that never ran
    unstarted = [NodeObservation(i) for i in range(2)]
    services = classify(plan(Profile.WEBRTC, Faults(transport=LinkTransport.WEBRTC)), unstarted,
                        failure="demo-failed: the local signaling service did not start")
    assert services.race_class is RaceClass.CRASH and "signaling service" in services.reason


def test_a_stalled_node_may_give_up_but_the_others_may_not():
    stall = plan(Profile.STALL, Faults(stop=NodeStop(0, 3.0, 9.0)))
    gave_up = NodeObservation(0, returncode=1, outcome="catch-up-impossible", fault_fired=True, replay_ok=True)
    assert classify(stall, [gave_up, finished(1), finished(2)]).race_class is RaceClass.DETECTED
    assert classify(stall, [finished(0, fault_fired=True), finished(1), finished(2)]).race_class is RaceClass.DETECTED
    assert classify(stall, [finished(0), finished(1, returncode=1, outcome="partition-void"), finished(2)]).race_class \
        is RaceClass.CRASH


def test_hangs_come_first_then_replays():
    hung = classify(plan(), [finished(0), finished(1), NodeObservation(2, returncode=None, last_frame=400)])
    assert hung.race_class is RaceClass.HANG and "last frame 400" in hung.reason
    bad = classify(plan(), [finished(0), finished(1), finished(2, replay_ok=False, replay_error="race-log-damaged: x")])
    assert bad.race_class is RaceClass.REPLAY_FAILED and "race-log-damaged" in bad.reason


def test_a_flipped_byte_must_be_refused():
    tamper = plan(Profile.TAMPER, Faults(tamper=Tamper(5000)))
    nodes = [finished(0), finished(1, link_tampered=True), finished(2)]
    assert classify(tamper, nodes, flipped=1).race_class is RaceClass.DETECTED
    assert classify(tamper, [finished(i) for i in range(3)], flipped=1).race_class is RaceClass.UNDETECTED
    assert classify(tamper, [finished(i) for i in range(3)], flipped=0).race_class is RaceClass.AGREED


def watched(index, **changes):
    """A spectator that watched the match to its end: every hash check agreed, its log replays."""
    spectator = NodeObservation(index=index, returncode=0, outcome="match-end", agreed=14, last_frame=1789, replay_ok=True,
                                replay_status="complete", final_hash=HASH)
    return replace(spectator, **changes)


def linked(index, *paths, **changes):
    return finished(index, link_paths=paths, **changes)


def test_a_webrtc_or_turn_race_is_judged_as_a_clean_one_and_names_its_link_paths():
    webrtc = plan(Profile.WEBRTC, Faults(transport=LinkTransport.WEBRTC))
    verdict = classify(webrtc, [linked(i, "host") for i in range(3)])
    assert verdict.race_class is RaceClass.AGREED and "over webrtc (links: host)" in verdict.reason
    gave_up = linked(1, "host", returncode=1, outcome="partition-void")
    assert classify(webrtc, [linked(0, "host"), gave_up, linked(2, "host")]).race_class is RaceClass.CRASH
    turn = plan(Profile.TURN, Faults(transport=LinkTransport.TURN))
    verdict = classify(turn, [linked(i, "relay") for i in range(3)])
    assert verdict.race_class is RaceClass.AGREED and "over turn (links: relay)" in verdict.reason


def test_a_turn_race_with_a_link_that_did_not_go_through_coturn_is_a_crash():
    turn = plan(Profile.TURN, Faults(transport=LinkTransport.TURN))
    verdict = classify(turn, [linked(0, "relay"), linked(1, "host", "relay"), linked(2, "relay")])
    assert verdict.race_class is RaceClass.CRASH and "node1 linked over host, not through coturn" in verdict.reason
    assert classify(plan(), [linked(i, "host") for i in range(3)]).race_class is RaceClass.AGREED  # TCP: host is right


def test_spectators_that_watched_to_the_end_with_every_check_agreed_are_agreed():
    two = plan(Profile.SPECTATORS, Faults(spectators=Spectators(2)))
    verdict = classify(two, [finished(i) for i in range(3)], spectators=[watched(0), watched(1)])
    assert verdict.race_class is RaceClass.AGREED and "spectator0 match-end" in verdict.reason


def test_a_spectator_whose_state_disagrees_with_the_players_is_a_spectator_desync():
    two = plan(Profile.SPECTATORS, Faults(spectators=Spectators(2)))
    racers = [finished(i) for i in range(3)]
    checked = classify(two, racers, spectators=[watched(0), watched(1, disagreements=1, disagree_frames=[480])])
    assert checked.race_class is RaceClass.SPECTATOR_DESYNC and "spectator1" in checked.reason and "480" in checked.reason
    lost = classify(two, racers, spectators=[watched(0), watched(1, returncode=1, outcome="error", disagreements=2)])
    assert lost.race_class is RaceClass.SPECTATOR_DESYNC and "could not reproduce" in lost.reason
    final = classify(two, racers, spectators=[watched(0, final_hash="cd" * 32), watched(1)])
    assert final.race_class is RaceClass.SPECTATOR_DESYNC and "another state" in final.reason
    # the players' own disagreement comes first: the spectator only follows what they voted
    split = [finished(0), finished(1, disagreements=1, disagree_frames=[240]), finished(2)]
    assert classify(two, split, spectators=[watched(0, disagreements=1)]).race_class is RaceClass.FALSE_DESYNC


def test_a_stopped_or_killed_spectator_is_explained_and_changes_nothing_for_the_racers():
    stop = plan(Profile.SPECTATORS, Faults(spectators=Spectators(2, SpectatorFault(1, SpectatorFaultKind.STOP, 3.0, 8.0))))
    racers = [finished(i) for i in range(3)]
    back = classify(stop, racers, spectators=[watched(0), watched(1, fault_fired=True)])
    assert back.race_class is RaceClass.DETECTED and "spectator1 stop handled" in back.reason
    gone = watched(1, returncode=1, outcome="source-unavailable", fault_fired=True, final_hash=None)
    assert classify(stop, racers, spectators=[watched(0), gone]).race_class is RaceClass.DETECTED
    # the spectator nobody stopped may not lose its sources
    assert classify(stop, racers, spectators=[replace(gone, index=0, fault_fired=False), watched(1)]).race_class \
        is RaceClass.CRASH
    kill = plan(Profile.SPECTATORS, Faults(spectators=Spectators(1, SpectatorFault(0, SpectatorFaultKind.KILL, 3.0))))
    killed = NodeObservation(0, returncode=KILLED, fault_fired=True, replay_ok=True, replay_status="torn")
    assert classify(kill, racers, spectators=[killed]).race_class is RaceClass.DETECTED
    # a racer that gave up for a spectator's sake is a crash; so is a spectator's traceback, or its log not replaying
    assert classify(kill, [finished(0), finished(1, returncode=1, outcome="partition-void"), finished(2)],
                    spectators=[killed]).race_class is RaceClass.CRASH
    assert classify(kill, racers, spectators=[watched(0, traceback=True)]).race_class is RaceClass.CRASH
    bad_log = classify(kill, racers, spectators=[watched(0, replay_ok=False, replay_error="race-log-damaged: x")])
    assert bad_log.race_class is RaceClass.REPLAY_FAILED and "spectator0's log" in bad_log.reason
    hung = classify(kill, racers, spectators=[NodeObservation(0, returncode=None, last_frame=900)])
    assert hung.race_class is RaceClass.HANG and "spectator0" in hung.reason


def test_a_race_that_agreed_below_nine_tenths_of_real_time_is_slow():
    thin = plan(Profile.THIN_LINK, Faults(links=LinkTrouble(bandwidth_bytes_per_s=32 * 1024)))
    nodes = [finished(0, realtime_ratio=0.97), finished(1, realtime_ratio=0.88), finished(2, realtime_ratio=0.99)]
    verdict = classify(thin, nodes)
    assert verdict.race_class is RaceClass.SLOW and "0.88" in verdict.reason and realtime_ratio(nodes) == 0.88
    assert classify(thin, [replace(n, realtime_ratio=0.95) for n in nodes]).race_class is RaceClass.AGREED
    # a fault's race is judged by its fault: a stall costs real time by design
    stalled = plan(Profile.STALL, Faults(stop=NodeStop(1, 3.0, 5.0)))
    slow_stall = [finished(0, realtime_ratio=0.7), finished(1, fault_fired=True, realtime_ratio=0.7), finished(2)]
    assert classify(stalled, slow_stall).race_class is RaceClass.DETECTED


def test_a_cut_link_must_be_bridged_every_node_finishing_in_agreement():
    cut = plan(Profile.PARTITION, Faults(node_fault=NodeFault(1, "cut-link", 300, 7)))
    nodes = [finished(0), finished(1, fault_fired=True), finished(2)]
    verdict = classify(cut, nodes)
    assert verdict.race_class is RaceClass.AGREED and "cut for 7 s" in verdict.reason
    gave_up = [finished(0), finished(1, returncode=1, outcome="partition-void", fault_fired=True), finished(2)]
    assert classify(cut, gave_up).race_class is RaceClass.CRASH  # both ends reach the others: nobody may give up
    two = plan(Profile.PARTITION, Faults(node_fault=NodeFault(1, "cut-link", 300, 7)), nodes=2)
    alone = [finished(0, returncode=1, outcome="partition-void"), finished(1, returncode=1, outcome="partition-void",
                                                                           fault_fired=True)]
    assert classify(two, alone).race_class is RaceClass.DETECTED  # of two, the one link is every link
    assert classify(cut, [replace(n, realtime_ratio=0.8) for n in nodes]).race_class is RaceClass.SLOW
