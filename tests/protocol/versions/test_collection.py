"""Version collection driven with explicit time: timeouts, retry, missing peers, impersonation."""

import pytest

from protocol.errors import LocalError, ProtocolError
from protocol.versions.collection import (
    ArmTimer,
    Broadcast,
    CollectionFinished,
    Unicast,
    VersionCollector,
    VersionInfoMessage,
    VersionRequest,
    answer_version_request,
)
from protocol.versions.record import node_version_info

ME, BOB, CAROL = "zMe00001", "zBob0002", "zCarol03"
INFO = node_version_info("sim_core/1", 1, 0, "x")


def answer(sender: str, **changes) -> VersionInfoMessage:
    return VersionInfoMessage(sender=sender, payload={**INFO.to_wire(), **changes})


def collector() -> VersionCollector:
    return VersionCollector(ME, INFO, [ME, BOB, CAROL])


def test_start_broadcasts_and_arms_a_3_second_timer():
    c = collector()
    assert c.start(1000) == [Broadcast(VersionRequest(sender=ME)), ArmTimer(4000)]
    with pytest.raises(LocalError) as info:  # starting twice is this node's misuse, not a peer's fault
        c.start(1000)
    assert info.value.code == "collector-misuse"


def test_all_answers_finish_early():
    c = collector()
    c.start(0)
    assert c.receive(BOB, answer(BOB), 10) == []
    (done,) = c.receive(CAROL, answer(CAROL), 20)
    assert isinstance(done, CollectionFinished) and done.missing == []
    assert set(done.collected) == {ME, BOB, CAROL}
    c.verdict()
    assert c.timer_fired(3000) == []


def test_one_retry_then_fail_closed_naming_the_missing_peer():
    c = collector()
    c.start(0)
    c.receive(BOB, answer(BOB), 100)
    assert c.timer_fired(2999) == []
    assert c.timer_fired(3000) == [Unicast(CAROL, VersionRequest(sender=ME)), ArmTimer(6000)]  # only the missing
    assert c.attempts == 2
    (done,) = c.timer_fired(6000)
    assert done.missing == [CAROL]
    with pytest.raises(ProtocolError) as info:
        c.verdict()
    assert info.value.code == "version-collection-failed"
    assert info.value.message == "version collection failed, missing: ol03"


def test_answer_during_the_retry_completes():
    c = collector()
    c.start(0)
    c.receive(BOB, answer(BOB), 1)
    c.timer_fired(3000)
    (done,) = c.receive(CAROL, answer(CAROL), 4500)
    assert done.missing == [] and c.finished


def test_impersonated_and_foreign_answers_are_dropped():
    c = collector()
    c.start(0)
    assert c.receive(BOB, answer(CAROL), 1) == []  # Bob claims to be Carol
    assert c.receive("zStranger", answer("zStranger"), 1) == []
    assert c.receive(ME, answer(ME), 1) == []
    assert c.missing == [BOB, CAROL]


def test_first_answer_wins():
    c = collector()
    c.start(0)
    c.receive(BOB, answer(BOB, economy_config_version=7), 1)
    c.receive(BOB, answer(BOB), 2)
    assert c.collected[BOB].economy_config_version == 7


def test_malformed_record_counts_as_missing_until_a_valid_one_arrives():
    c = collector()
    c.start(0)
    c.receive(BOB, answer(BOB, client_version="one"), 1)
    assert c.rejected == {BOB: "version-info-invalid"} and BOB in c.missing
    c.receive(BOB, answer(BOB), 2)
    assert BOB not in c.missing and not c.rejected


def test_incompatible_peer_fails_the_verdict():
    c = collector()
    c.start(0)
    c.receive(BOB, answer(BOB, protocol_version="9.0.0"), 1)
    c.receive(CAROL, answer(CAROL), 2)
    with pytest.raises(ProtocolError) as info:
        c.verdict()
    assert info.value.code == "version-incompatible" and info.value.message == "0002: protocol"


def test_a_newcomer_alone_is_asked_and_the_records_held_are_kept():
    c = VersionCollector(ME, INFO, [ME, BOB])
    c.start(0)
    c.receive(BOB, answer(BOB), 5)
    assert c.finished
    assert c.update_members([ME, BOB, CAROL], 100) == [Unicast(CAROL, VersionRequest(sender=ME)), ArmTimer(3100)]
    (done,) = c.receive(CAROL, answer(CAROL), 105)
    assert done.collected == {ME: INFO, BOB: INFO, CAROL: INFO} and done.missing == []


def test_overlapping_joins_ask_each_peer_once():
    c = VersionCollector(ME, INFO, [ME, BOB])
    assert c.start(0) == [Broadcast(VersionRequest(sender=ME)), ArmTimer(3000)]
    assert c.update_members([ME, BOB, CAROL], 10) == [Unicast(CAROL, VersionRequest(sender=ME)), ArmTimer(3010)]
    assert c.update_members([ME, BOB, CAROL], 20) == []  # Bob and Carol were asked: nothing to send
    c.receive(BOB, answer(BOB), 30)
    (done,) = c.receive(CAROL, answer(CAROL), 40)
    assert done.missing == []


def test_a_leaver_is_forgotten_and_may_complete_the_collection():
    c = collector()
    c.start(0)
    c.receive(BOB, answer(BOB), 5)
    (done,) = c.update_members([ME, BOB], 10)  # Carol left before answering
    assert done.missing == [] and set(done.collected) == {ME, BOB}


def test_a_failed_collection_asks_its_missing_peers_again_when_the_room_changes():
    c = collector()
    c.start(0)
    c.receive(BOB, answer(BOB), 5)
    c.timer_fired(3000)
    (failed,) = c.timer_fired(6000)
    assert failed.missing == [CAROL]
    dave = "zDave004"
    asks = c.update_members([ME, BOB, CAROL, dave], 7000)
    assert asks == [Unicast(CAROL, VersionRequest(sender=ME)), Unicast(dave, VersionRequest(sender=ME)), ArmTimer(10000)]


def test_alone_finishes_at_once():
    c = VersionCollector(ME, INFO, [ME])
    (done,) = c.start(0)
    assert done.collected == {ME: INFO}


def test_server_answers_only_honest_requests():
    assert answer_version_request(VersionRequest(sender=BOB), BOB, ME, INFO) == VersionInfoMessage(ME, INFO.to_wire())
    assert answer_version_request(VersionRequest(sender=CAROL), BOB, ME, INFO) is None
    assert answer_version_request(VersionRequest(sender=ME), ME, ME, INFO) is None
