"""The DataChannels a WebRTC link opens, and why (the spec names the channels, not their options).

Every channel is **negotiated** (``negotiated: true`` with a fixed id on both sides): it exists on both
sides from the offer on, so no DCEP open message crosses the wire, the first message can go as soon as
SCTP is up (one round trip sooner), and a peer cannot open channels of its own choosing: a label or id
the plan does not name is never created.

- A **room** link (a browser's link to a room's host) has one channel, ``room`` (id 0): reliable and
  ordered, as the spec's room runtime has it.
- A **node** link (what one node opens to another: the room's star, the race mesh, a spectator's feed;
  what a link is for is said by its first message, as over TCP) has two:
  - ``room`` (id 0), the same channel: reliable and ordered, for everything whose loss or reordering
    would cost a retry protocol (joins, room state, votes, keys, catch-up probes and snapshots, link
    housekeeping);
  - ``race`` (id 2): unordered and unreliable (``maxRetransmits = 0``), for per-frame inputs. Every
    input message carries every input the peer has not acknowledged, so a lost one is repaired by the
    next (60 a second), while a retransmission would arrive after the input it repeats was re-sent
    anyway, and ordering would hold fresh inputs behind a lost one (head-of-line blocking).

  Sharing id 0 with a room link keeps one shape for every link in a room's scope: a node answering an
  offer cannot tell from the SDP what the link is for (negotiated channels are not in it), and a
  browser's room link is a node link that never uses ``race``.

A lane is what the link chooses per message type (``protocol.link.lane.Lane``: ``CONTROL`` or ``INPUTS``);
a room link, which has no inputs channel, sends every body on ``room``. A body larger than one
DataChannel message is split into parts, which only a reliable channel may carry (a lost part would leave
its message unfinished): a body too large for one message goes on the reliable channel whatever its lane.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from protocol.errors import LocalError
from protocol.link.lane import Lane
from protocol.webrtc.chunks import MAX_WHOLE_BODY


class LinkKind(StrEnum):
    """The channels a link has: a browser's room link, or a node's link (room and race channels)."""

    ROOM = "room"
    NODE = "node"


@dataclass(frozen=True)
class ChannelPlan:
    """One negotiated DataChannel: its label, id, delivery options, lane, and the largest body it carries."""

    label: str
    id: int
    ordered: bool
    max_retransmits: int | None  # None: fully reliable
    lane: Lane
    max_message_bytes: int

    @property
    def reliable(self) -> bool:
        """Whether every message arrives (then it may carry parts of a large body)."""
        return self.max_retransmits is None


def channel_plan(kind: LinkKind, max_message_bytes: int) -> tuple[ChannelPlan, ...]:
    """The channels of a ``kind`` link whose reliable lane carries bodies up to ``max_message_bytes``."""
    if max_message_bytes < 1:
        raise LocalError("channel-plan-invalid", "a channel carries at least one byte")
    if kind == LinkKind.ROOM:
        return (ChannelPlan("room", 0, True, None, Lane.CONTROL, max_message_bytes),)
    return (
        ChannelPlan("room", 0, True, None, Lane.CONTROL, max_message_bytes),
        ChannelPlan("race", 2, False, 0, Lane.INPUTS, MAX_WHOLE_BODY),
    )
