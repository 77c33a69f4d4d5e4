"""Shows each pre-race notice once, recomputed locally whenever the cars or tracks of the room change."""

from __future__ import annotations

from open4wd_node.events.sink import EventSink
from open4wd_node.assets.room_assets import NodeRoomAssets
from protocol.room.member import MemberRoom
from open4wd_node.events.vocabulary import NoticeShown


class NoticeBoard:
    """Emits each pre-race ``notice`` event once per room (module docstring)."""

    def __init__(self, assets: NodeRoomAssets, events: EventSink) -> None:
        self.assets = assets
        self.events = events
        self._seen_inputs: tuple[str, str] | None = None  # (config digest, cars) the notices were computed for
        self._shown: set[tuple[str, str]] = set()

    def refresh(self, member: MemberRoom) -> None:
        """After every room change: recompute the notices when the config or the cars changed, and
        emit those not shown yet."""
        state, config = member.state, member.config
        if state is None or config is None:  # both come with the first room state
            return
        rotations = [m.carRotation for m in state.members if m.role == "participant" and m.carRotation]
        key = (state.configDigest, repr(rotations))
        if key == self._seen_inputs:
            return
        self._seen_inputs = key
        for kind, text in self.assets.notices(config, rotations):
            if (kind, text) not in self._shown:
                self._shown.add((kind, text))
                self.events.emit(NoticeShown(kind=kind, text=text))
