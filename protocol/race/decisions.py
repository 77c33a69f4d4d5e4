"""What ``Recovery`` decides and the session carries out: the typed requests of the recovery layer.

The race core is layered one way, as GGRS's ``P2PSession`` polls its sub-layers: ``RaceSession`` calls
``Recovery`` and applies what comes back; ``Recovery`` never calls the session. A recovery call returns
``RecoveryStep`` values in order: the ``RaceAction``s it produced (sends, events, closed links), which
pass through unchanged, and the ``RecoveryDecision``s below, which ask the session to change what only
the session owns (its input admission and signature checks, its frontier, its frame-keyed history, its
end). The session applies the steps in order and stops at once when the session has ended, as a call
into the session would have.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

from protocol.race.actions import RaceAction, SessionEndReason
from protocol.race.messages import InputRecord, RaceInput
from protocol.race.signing import Event
from protocol.identity.keys import PeerId

CheckedInputs: TypeAlias = dict[tuple[PeerId, int], tuple[RaceInput, tuple[Event, ...], bytes]]
"""Verified forwarded inputs of a snapshot by (peer, frame): the signed message, its parsed events and
its digest."""


@dataclass(frozen=True, slots=True)
class AdmitRelayed:
    """Admit ``owner``'s signed input that another peer forwarded (inside the input window): verified as
    the session admits it, a ``PeerError`` for a bad one refuses the whole relay. Once admitted, the
    session tells the recovery (``Recovery.relayed_admitted``): it counts as hearing from ``owner``."""

    owner: PeerId
    entry: RaceInput


@dataclass(frozen=True, slots=True)
class RecomputeFrontier:
    """Peer statuses or ``active_from`` changed: recompute the newest frame that every required real
    input is in for."""


@dataclass(frozen=True, slots=True)
class RelayHeldInputs:
    """Forward ``owner``'s signed inputs this node holds (of the newest ``STATE_BUFFER_FRAMES`` final
    frames and every later one) to ``targets`` as one ``race-relay``, its pending inputs verified first;
    an input whose own signature fails is the owner's misbehaviour and is not forwarded. The pending
    inputs are verified even when there is no target, so that every survivor settles the same."""

    owner: PeerId
    targets: tuple[PeerId, ...]


@dataclass(frozen=True, slots=True)
class SendSnapshot:
    """Answer ``peer``'s sync request with the pinned pre-step ``state`` of ``frame``: ``bases`` (each
    peer's newest signed input before the frame) and every signed input from ``frame`` on of the peers in
    ``inactive`` (not active here: nobody re-sends theirs), their pending inputs verified first, each input
    forwarded only if its own signature holds; ``signature`` is this node's over the snapshot's digest."""

    peer: PeerId
    request_id: int
    frame: int
    state: bytes
    bases: tuple[InputRecord, ...]
    inactive: tuple[PeerId, ...]
    signature: bytes


@dataclass(frozen=True, slots=True)
class RestartAt:
    """A peer's snapshot of ``frame`` replaced the world (the sync layer restarted there): forget every
    frame-keyed fact of the old history, then hold the snapshot's verified ``inputs`` (those before
    ``frame`` as prediction bases)."""

    frame: int
    inputs: CheckedInputs


@dataclass(frozen=True, slots=True)
class EndSession:
    """End the session (once) with ``reason``: the ``SessionEnded`` action."""

    reason: SessionEndReason
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)


RecoveryDecision: TypeAlias = AdmitRelayed | RecomputeFrontier | RelayHeldInputs | SendSnapshot | RestartAt | EndSession
RecoveryStep: TypeAlias = RaceAction | RecoveryDecision
"""What a ``Recovery`` call returns, in order: actions for the shell and decisions for the session."""
