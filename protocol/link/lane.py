"""The lanes a link's carrier moves bodies on.

Every carrier has a reliable ordered lane. A race link also sends the race's per-frame inputs, and each
input message repeats every input the peer has not acknowledged: a lost one is repaired by the next (60
a second), while a retransmission would arrive after the input it repeats was re-sent anyway, and
ordering would hold fresh inputs behind a lost one. So inputs may travel on a lane that is neither
ordered nor reliable where the carrier has one (a WebRTC DataChannel with ``maxRetransmits = 0``), and on
the reliable lane where it has not (a TCP stream).
"""

from __future__ import annotations

from enum import StrEnum


class Lane(StrEnum):
    """Which of a carrier's lanes a body travels on."""

    CONTROL = "control"
    """Reliable and ordered: every message but the race's inputs."""
    INPUTS = "inputs"
    """The race's per-frame inputs: unordered and unreliable where the carrier has such a lane."""
