"""The room as a member sees it: members, their version check, ready state, and the room's phase.

``summarize`` reads the member machine into typed rows; ``render`` is their plain-text form (the view
when stdout is not a terminal), ``live_render`` draws the same rows as a table.
"""

from __future__ import annotations

from dataclasses import dataclass

from open4wd_node.events.text import short
from protocol.room.member import MemberRoom
from protocol.identity.keys import PeerId


@dataclass(frozen=True)
class MemberLine:
    """One member's row in the room view."""

    peer: str
    nickname: str
    seat: str  # READY, not ready, spectator
    check: str  # this node, checking versions, compatible, INCOMPATIBLE: fields
    host: bool


@dataclass(frozen=True)
class RoomSummary:
    """The room as the view shows it: its header's figures and one row per member."""

    room_id: str
    phase: str
    players: int
    max_players: int
    min_players: int
    spectators: int
    members: tuple[MemberLine, ...]

    @property
    def header(self) -> str:
        """The line above the member rows: room, phase, players and spectators."""
        return (f"room {self.room_id[:8]}… · {self.phase} · {self.players}/{self.max_players} players "
                f"(start at {self.min_players}) · {self.spectators} spectating")


def _check(member: MemberRoom, peer: PeerId) -> str:
    if peer == member.me:
        return "this node"
    if peer not in member.compatibility:
        return "checking versions"
    if member.compatibility[peer]:
        return "INCOMPATIBLE: " + "/".join(member.compatibility[peer])
    return "compatible"


def summarize(member: MemberRoom) -> RoomSummary | None:
    """None until the first room state arrived."""
    state = member.state
    if state is None:
        return None
    lines = tuple(
        MemberLine(m.peerId, m.nickname, "spectator" if m.role == "spectator" else ("READY" if m.ready else "not ready"),
                   _check(member, m.peerId), m.peerId == state.hostPeerId)
        for m in state.members
    )
    players = sum(1 for m in state.members if m.role == "participant")
    return RoomSummary(state.roomId, state.phase, players, state.maxPlayers, state.minPlayers,
                       len(state.members) - players, lines)


def render(summary: RoomSummary) -> list[str]:
    """The room as plain lines."""
    lines = [f"── {summary.header}"]
    for m in summary.members:
        lines.append(f"   {short(m.peer)} {m.nickname:<12} {m.seat:<10} {m.check}{' (host)' if m.host else ''}")
    return lines
