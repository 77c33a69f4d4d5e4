"""A circuit's meter: bandwidth (its own and the relay's), byte budget, duration and idle time."""

import pytest

from open4wd_base.errors import LocalError
from protocol.relay.limits import COPY_CHUNK_BYTES, CircuitEnd, RelayLimits
from protocol.relay.meter import CircuitMeter, CircuitOver, total_bucket
from tests.coded import raises_coded

KIB = 1024


def meter(now=0, **limits):
    chosen = RelayLimits(**limits)
    return CircuitMeter(chosen, total_bucket(chosen, now), now)


def test_bandwidth_per_direction_is_paced_not_dropped():
    m = meter(circuit_bytes_per_second=64 * KIB, circuit_burst_bytes=64 * KIB)
    assert m.delay_ms(True, 64 * KIB, 0) == 0  # the burst
    assert m.delay_ms(True, 32 * KIB, 0) == 500  # half a second of the rate
    assert m.delay_ms(False, 64 * KIB, 0) == 0  # the other direction has its own bucket
    assert m.delay_ms(True, 32 * KIB, 500) == 0


def test_the_total_bucket_is_shared_by_every_circuit():
    limits = RelayLimits(total_bytes_per_second=128 * KIB)
    total = total_bucket(limits, 0)
    a, b = CircuitMeter(limits, total, 0), CircuitMeter(limits, total, 0)
    assert a.delay_ms(True, 64 * KIB, 0) == 0 and b.delay_ms(True, 64 * KIB, 0) == 0
    assert a.delay_ms(False, 64 * KIB, 0) == 500 and b.delay_ms(False, 64 * KIB, 0) == 500


def test_the_byte_budget_ends_the_circuit():
    m = meter(circuit_bytes=100 * KIB)
    m.carry(100 * KIB, 5)
    with pytest.raises(CircuitOver) as over:
        m.carry(1, 6)
    assert over.value.end is CircuitEnd.BYTES


def test_duration_and_idle_end_the_circuit():
    m = meter(circuit_duration_ms=10_000, idle_timeout_ms=3_000)
    assert m.deadline_ms() == 3_000
    m.check(2_999)
    with pytest.raises(CircuitOver) as idle:
        m.check(3_000)
    assert idle.value.end is CircuitEnd.IDLE
    for t in range(2_000, 10_000, 2_000):
        m.carry(1, t)
    assert m.deadline_ms() == 10_000
    with pytest.raises(CircuitOver) as long:
        m.check(10_000)
    assert long.value.end is CircuitEnd.DURATION


def test_limits_that_could_never_pass_a_read_are_refused():
    with raises_coded(LocalError, "relay-limit-invalid", match="circuit_burst_bytes"):
        RelayLimits(circuit_burst_bytes=COPY_CHUNK_BYTES - 1)
    with raises_coded(LocalError, "relay-limit-invalid", match="max_circuits"):
        RelayLimits(max_circuits=0)
