"""The integer token bucket: its refill formula with explicit time, and a clock that runs back refills nothing."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import LocalError
from protocol.link.token_bucket import TokenBucket


def test_token_bucket_with_explicit_time():
    bucket = TokenBucket(burst=64, per_second=32, now_ms=0)
    assert sum(bucket.take(0) for _ in range(100)) == 64
    assert not bucket.take(30)
    assert bucket.take(32)  # 32 ms at 32/s refills 1.024 tokens
    assert sum(bucket.take(1032) for _ in range(100)) == 32
    assert sum(bucket.take(100_000) for _ in range(100)) == 64  # never above the burst
    assert not bucket.take(50_000)  # a clock going backwards refills nothing
    with pytest.raises(LocalError) as info:
        TokenBucket(0, 1, 0)
    assert info.value.code == "token-bucket-invalid"


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.integers(1, 1000),
       st.lists(st.tuples(st.integers(-50, 500), st.integers(0, 70), st.booleans()), max_size=40))
def test_token_bucket_matches_its_formula_with_time_going_back_too(burst, rate, steps):
    """The refill's formula: tokens + elapsed · rate, capped at the burst, elapsed never negative
    (a reading earlier than the last changes nothing)."""
    bucket = TokenBucket(burst, rate, 0)
    tokens, last, now = burst * 1000, 0, 0
    for delta, cost, take in steps:
        now += delta
        tokens = min(burst * 1000, tokens + max(0, now - last) * rate)
        last = max(last, now)
        expected = 0 if cost * 1000 <= tokens else -(-(cost * 1000 - tokens) // rate)
        if take:
            assert bucket.take(now, cost) == (expected == 0)
            tokens -= cost * 1000 if expected == 0 else 0
        else:
            assert bucket.wait_ms(now, cost) == expected
