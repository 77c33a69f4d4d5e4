"""The sans-IO link rules with explicit time: exact bucket, drop, violation and keepalive behaviour."""

import dataclasses

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from open4wd_node.net.link_rules import (
    IngressGuard,
    Keepalive,
    LinkBuckets,
    LinkLimits,
    LinkPing,
    LinkPong,
    SendPacer,
    link_registry,
)
from protocol.errors import ProtocolError
from protocol.link.handshake import LinkClose, LinkIdentity, LinkNoise, LinkVersion
from protocol.versions.collection import VersionInfoMessage, VersionRequest
from protocol.encoding.wire import encode_message
from tests.coded import raises_coded

LIMITS = LinkLimits()
CHEAP = encode_message(VersionRequest(sender="z"))
COSTLY = encode_message(VersionInfoMessage(sender="z", payload={}))
EXPENSIVE = frozenset({"version-info"})


def guard(**overrides):
    return IngressGuard(dataclasses.replace(LIMITS, **overrides), 0, EXPENSIVE)


def admit_many(g, body, count, now_ms=0):
    return [g.admit(body, now_ms) for _ in range(count)]


def code_of(call, *args):
    with pytest.raises(ProtocolError) as info:
        call(*args)
    return info.value.code


def test_general_bucket_allows_its_burst_then_drops_then_refills_at_its_rate():
    g = guard()
    assert all(m == VersionRequest(sender="z") for m in admit_many(g, CHEAP, 64))
    assert admit_many(g, CHEAP, 14) == [None] * 14
    assert g.dropped == 14 and g.consecutive_drops == 14
    assert g.admit(CHEAP, 31) is None  # 32 per second: not yet one whole token
    assert g.admit(CHEAP, 32) == VersionRequest(sender="z")
    assert g.consecutive_drops == 0
    assert admit_many(g, CHEAP, 32, now_ms=1032) == [VersionRequest(sender="z")] * 32


def test_sixteen_consecutive_drops_flood_the_link():
    g = guard()
    admit_many(g, CHEAP, 64 + 15)
    assert code_of(g.admit, CHEAP, 0) == "link-flooded"


def test_expensive_types_have_their_own_smaller_bucket():
    g = guard()
    assert admit_many(g, COSTLY, 8) == [VersionInfoMessage(sender="z", payload={})] * 8
    assert g.admit(COSTLY, 0) is None
    assert g.admit(CHEAP, 0) == VersionRequest(sender="z")  # cheap types still flow
    assert g.admit(COSTLY, 249) is None
    assert g.admit(COSTLY, 250) is not None  # 4 per second
    cheap_only = IngressGuard(LIMITS, 0)  # nothing declared expensive
    assert None not in admit_many(cheap_only, COSTLY, 64)


def test_expensive_drops_count_toward_the_flood_rule():
    g = guard()
    admit_many(g, COSTLY, 8 + 15)
    assert code_of(g.admit, COSTLY, 0) == "link-flooded"


def test_byte_bucket_limits_large_messages():
    big = encode_message(VersionInfoMessage(sender="z", payload={"b": b"x" * 100_000}))
    g = IngressGuard(LIMITS, 0)
    assert [m is not None for m in admit_many(g, big, 4)] == [True, True, True, False]
    assert g.admit(big, 400) is not None  # 262,144 bytes per second refill


def test_three_violations_close_with_the_last_code_and_deliveries_do_not_reset_them():
    g = guard()
    assert g.admit(b"\xc1", 0) is None
    assert g.admit(CHEAP, 0) is not None
    assert g.admit(msgpack.packb({"type": "version-request"}), 0) is None
    assert code_of(g.admit, msgpack.packb({"type": "version-request", "sender": 1}), 0) == "mistyped-field"


def test_handshake_messages_are_not_part_of_an_open_link():
    g = guard()
    for msg in (LinkNoise(b""), LinkIdentity("2.0.0", "z", b"")):
        assert g.admit(encode_message(msg), 0) is None
    assert g.violations.last_code == "unknown-message-type"
    with raises_coded(ProtocolError, "unknown-message-type"):  # the third violation closes the link
        g.admit(encode_message(LinkVersion("2.0.0")), 0)
    table = link_registry({"version-request": VersionRequest, "link-noise": LinkNoise, "link-identity": LinkIdentity})
    assert table == {"version-request": VersionRequest, "link-ping": LinkPing, "link-pong": LinkPong, "link-close": LinkClose}


def test_a_type_hidden_after_other_keys_is_still_charged_as_expensive():
    g = guard()
    hidden = msgpack.packb({"payload": {}, "sender": "z", "type": "version-info"}, use_bin_type=True)
    assert admit_many(g, hidden, 9)[-1] is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=120), max_size=6))
def test_arbitrary_frames_only_raise_coded_errors(bodies):
    g = guard()
    for body in bodies:
        try:
            g.admit(body, 0)
        except ProtocolError as exc:
            assert exc.code in {"malformed-frame", "unknown-message-type", "missing-field", "extra-field", "mistyped-field"}
            return


def test_keepalive_pings_on_schedule_and_measures_the_round_trip():
    k = Keepalive(LIMITS, 1_000)
    assert k.deadline_ms == 4_000
    assert k.poll(3_999) is None
    assert k.poll(4_000) == LinkPing(nonce=1)
    assert k.deadline_ms == 7_000
    k.pong(LinkPong(nonce=7), 4_010)  # unsolicited: ignored
    assert k.rtt_ms is None
    k.pong(LinkPong(nonce=1), 4_042)
    assert k.rtt_ms == 42
    k.pong(LinkPong(nonce=1), 4_500)  # a duplicate does not move it
    assert k.rtt_ms == 42


def test_keepalive_declares_silence_after_the_idle_timeout():
    k = Keepalive(LIMITS, 0)
    k.heard(5_000)
    assert k.deadline_ms == 3_000  # pings keep their own schedule
    for now in (3_000, 6_000, 9_000, 12_000):
        assert isinstance(k.poll(now), LinkPing)
    assert k.deadline_ms == 15_000
    assert code_of(k.poll, 15_000) == "link-timeout"
    short = Keepalive(dataclasses.replace(LIMITS, idle_timeout_ms=500), 0)
    assert short.deadline_ms == 500
    assert code_of(short.poll, 500) == "link-timeout"


def test_the_pacer_spends_the_peers_budget_and_says_how_long_to_wait():
    p = SendPacer(LIMITS, 0, EXPENSIVE)
    assert [p.delay_ms("version-request", 10, 0) for _ in range(64)] == [0] * 64
    assert p.delay_ms("version-request", 10, 0) == 32  # one token at 32 per second
    assert p.delay_ms("version-request", 10, 31) == 1  # waiting spends nothing
    assert p.delay_ms("version-request", 10, 32) == 0
    q = SendPacer(LIMITS, 0, EXPENSIVE)
    assert [q.delay_ms("version-info", 10, 0) for _ in range(9)] == [0] * 8 + [250]
    assert q.delay_ms("version-request", 10, 0) == 0  # the expensive wait did not charge the general bucket
    r = SendPacer(LIMITS, 0)
    assert r.delay_ms("version-info", 200_000, 0) == 0
    assert r.delay_ms("version-info", 200_000, 0) == -(-(200_000 * 1000 - 127_680 * 1000) // 262_144)


def test_what_the_pacer_lets_through_the_guard_admits():
    pacer, g = SendPacer(LIMITS, 0, EXPENSIVE), guard()
    now = 0
    for i in range(300):
        body = COSTLY if i % 3 == 0 else CHEAP
        kind = "version-info" if body is COSTLY else "version-request"
        while (wait := pacer.delay_ms(kind, len(body), now)) > 0:
            now += wait
        assert g.admit(body, now) is not None
    assert g.dropped == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400_000), st.booleans(), st.integers(0, 300)), max_size=60))
def test_a_frames_charge_is_all_or_nothing_over_its_buckets(frames):
    """``LinkBuckets.charge`` against the rule written plainly: the wait is the longest of the buckets'
    waits, and only a frame that fits all of them spends from each."""
    buckets = LinkBuckets(LIMITS, 0)
    reference = LinkBuckets(LIMITS, 0)
    now = 0
    for size, expensive, elapsed in frames:
        now += elapsed
        charges = [(reference.general, 1), (reference.general_bytes, size)]
        if expensive:
            charges.append((reference.expensive, 1))
        wait = max(bucket.wait_ms(now, cost) for bucket, cost in charges)
        if wait == 0:
            for bucket, cost in charges:
                bucket.take(now, cost)
        assert buckets.charge(size, expensive, now) == wait
        for name in ("general", "general_bytes", "expensive"):
            ours, theirs = getattr(buckets, name), getattr(reference, name)
            assert ours.wait_ms(now) == theirs.wait_ms(now) and ours._tokens == theirs._tokens


def test_limits_must_let_the_largest_frame_through():
    with pytest.raises(ValueError):
        LinkLimits(general_bytes_burst=100_000)
