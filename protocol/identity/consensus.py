"""Quorum arithmetic shared by round anchors and match results (spec/identity.md §4.4–4.5).

Every peer must reach the same numbers from the same facts, so each rule is a pure function of its
inputs, checked against the spec's published values. Inputs that are not counts or PeerId lists are
refused with ``ProtocolError`` (``consensus-input-invalid``): rosters and frames arrive from peers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from protocol.errors import ProtocolError
from protocol.identity.keys import PeerId

SNAPSHOT_INTERVAL_FRAMES = 120
ROLLBACK_FRAME_BUFFER_DEFAULT = 8


def _count(value: object, name: str) -> int:
    if type(value) is not int or value < 0:
        raise ProtocolError("consensus-input-invalid", f"{name} must be a non-negative integer, got {value!r}")
    return value


def _peer_list(peers: object, name: str) -> list[PeerId]:
    if isinstance(peers, (str, bytes)) or not isinstance(peers, Iterable):
        raise ProtocolError("consensus-input-invalid", f"{name} must be a list of PeerIds")
    items = list(peers)
    if not all(isinstance(p, str) for p in items):
        raise ProtocolError("consensus-input-invalid", f"every entry of {name} must be a PeerId string")
    return [PeerId(p) for p in items]


def quorum(n: int) -> int:
    """Strict majority of ``n``: floor(n/2) + 1."""
    return _count(n, "n") // 2 + 1


def latest_final_frame(terminal_frame: int) -> int:
    """The newest checksum frame that no rollback can still change when the round ends at ``terminal_frame``."""
    final = max(0, _count(terminal_frame, "terminal_frame") - ROLLBACK_FRAME_BUFFER_DEFAULT)
    return final // SNAPSHOT_INTERVAL_FRAMES * SNAPSHOT_INTERVAL_FRAMES


def within_tail(frame: int, terminal_frame: int) -> bool:
    """Whether an anchor may certify ``frame``: one of the last two final checksum frames."""
    latest = latest_final_frame(terminal_frame)
    _count(frame, "frame")
    return frame % SNAPSHOT_INTERVAL_FRAMES == 0 and frame in (latest, latest - SNAPSHOT_INTERVAL_FRAMES)


def canonical_peers(peers: Iterable[PeerId]) -> list[PeerId]:
    """De-duplicated PeerIds in code-unit order (the same for every peer)."""
    return sorted(set(_peer_list(peers, "peers")))


def match_result_threshold(ranking: Sequence[str], disconnects: Sequence[Mapping[str, str]]) -> int:
    """Signatures a match result needs: a strict majority of ranking ∪ disconnected peers (raises
    ``ProtocolError`` ``consensus-input-invalid`` for malformed lists).

    The disconnect reason never changes the denominator, so a 2–2 split cannot finalise.
    """
    ranked = _peer_list(ranking, "ranking")
    if isinstance(disconnects, (str, bytes)) or not isinstance(disconnects, Iterable):
        raise ProtocolError("consensus-input-invalid", "disconnects must be a list of {peerId, reason} maps")
    gone: list[str] = []
    for entry in disconnects:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("peerId"), str):
            raise ProtocolError("consensus-input-invalid", "every disconnect needs a peerId string")
        gone.append(entry["peerId"])
    return len(set(ranked) | set(gone)) // 2 + 1
