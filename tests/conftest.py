"""Fixtures shared by the whole-node tests."""

import pytest
import trio.testing

from open4wd_node.runtime.blocking import blocking_work_inline


@pytest.fixture
def fast_clock():
    """Autojump: virtual time moves only while every task waits, so the 60 Hz pumps and the room timers
    see no lag however slow the machine is (CPU work costs no virtual time). Blocking work runs inline:
    a task waiting for a worker thread counts as waiting, and the clock would jump meanwhile."""
    with blocking_work_inline():
        yield trio.testing.MockClock(autojump_threshold=0)
