"""A link's violation count asks for the close at its limit."""

from protocol.link.violations import ViolationCounter


def test_violation_counter_closes_at_three():
    counter = ViolationCounter()
    assert not counter.record("extra-field") and not counter.record("malformed-frame")
    assert counter.record("mistyped-field") and counter.exhausted and counter.last_code == "mistyped-field"
