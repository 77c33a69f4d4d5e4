"""A bug triggered by one peer's race message ends that mesh link with ``internal-error``; the link is
dialled again and the race runs to its end on every node (whole nodes over loopback TCP, autojump clock)."""

from __future__ import annotations

import pytest
import structlog

from open4wd_node.net.containment import INTERNAL_ERROR
from open4wd_node.net.link import LINK_COUNTERS
from open4wd_node.race.runner import MatchRunner
from protocol.identity.keys import Identity
from protocol.race.messages import INPUT_TYPES
from tests.open4wd_node.race.nodes import race, short_track

NODE_0, NODE_1 = (Identity(bytes([i + 1]) * 32).peer_id for i in range(2))


# nth=1: the link ends before any input of node 1 reached node 0, while the bots press skills at GO: both
# ends of the link once made the other's predictions final while node 2 confirmed its real inputs (three
# histories, a tie at frame 120). A broken link is now waited for first (docs/race.md, "A broken link").
@pytest.mark.parametrize("nth", [1, 50])
async def test_a_raising_race_handler_costs_one_link_not_the_race(tmp_path, fast_clock, monkeypatch, nth):
    on_message = MatchRunner._on_message
    inputs_seen: list[str] = []

    def buggy(self, peer, message):  # node 0 fails once, on the nth input message from node 1
        if self.me == NODE_0 and peer == NODE_1 and message.TYPE in INPUT_TYPES:
            inputs_seen.append(message.TYPE)
            if len(inputs_seen) == nth:
                raise IndexError(f"injected while handling {message.TYPE}")
        on_message(self, peer, message)

    monkeypatch.setattr(MatchRunner, "_on_message", buggy)
    closes_before = LINK_COUNTERS.closes[INTERNAL_ERROR]
    with structlog.testing.capture_logs() as logs:
        recorders, codes = await race(tmp_path, 3, track_bytes=short_track(20.0))
    assert len(inputs_seen) > nth and LINK_COUNTERS.closes[INTERNAL_ERROR] == closes_before + 1
    errors = [e for e in logs if e["log_level"] == "error"]
    assert [(e["event"], e["peer"]) for e in errors] == [(INTERNAL_ERROR, NODE_1)]
    assert isinstance(errors[0]["exc_info"], IndexError)
    results = [rec.of("result")[0] for rec in recorders]
    assert [(r["outcome"], r["detail"]) for r in results] == [("finished", "")] * 3
    assert codes == {0: 0, 1: 0, 2: 0} and len({str(r["standings"]) for r in results}) == 1
