"""The readable room view: members, their version check, ready state, and the room's phase."""

from __future__ import annotations

from open4wd_node.events import short
from protocol.room_member import MemberRoom


def render(member: MemberRoom) -> list[str]:
    state = member.state
    participants = [m for m in state.members if m.role == "participant"]
    spectators = [m for m in state.members if m.role == "spectator"]
    lines = [
        f"── room {state.roomId[:8]}… · {state.phase} · {len(participants)}/{state.maxPlayers} players "
        f"(start at {state.minPlayers}) · {len(spectators)} spectating"
    ]
    for m in state.members:
        if m.peerId == member.me:
            check = "this node"
        elif m.peerId not in member.compatibility:
            check = "checking versions"
        elif member.compatibility[m.peerId]:
            check = "INCOMPATIBLE: " + "/".join(member.compatibility[m.peerId])
        else:
            check = "compatible"
        host = " (host)" if m.peerId == state.hostPeerId else ""
        ready = "spectator" if m.role == "spectator" else ("READY" if m.ready else "not ready")
        lines.append(f"   {short(m.peerId)} {m.nickname:<12} {ready:<10} {check}{host}")
    return lines
