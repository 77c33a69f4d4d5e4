"""Messages of the race mesh itself: which match a link is for, and the per-round start barrier."""

from __future__ import annotations

from protocol.encoding.wire import Message, message


@message("mesh-hello")
class MeshHello(Message):
    """The first message on a race-mesh link (the dialer is the peer with the smaller PeerId)."""

    matchId: str


@message("mesh-ready")
class MeshReady(Message):
    """This node has built round ``round`` and is ready to step frame 0."""

    round: int
