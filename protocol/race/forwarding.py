"""Forwarded inputs: which of a peer's signed inputs this node passes on (a ``race-relay``, a snapshot's
inputs), and the digest a forwarded input is checked against.

Shared by the session, which forwards what the recovery decided to forward, and the recovery, which
checks the inputs a snapshot carries, as the peer table and the input buffers are shared: one place for
the rule instead of one layer reaching into the other.
"""

from __future__ import annotations

from collections.abc import Mapping

from protocol.actions import Misbehaviour
from protocol.race.inputs import PeerInputs, input_prev, parse_events
from protocol.race.keys import RaceKeyBook, verify_race_signature
from protocol.race.messages import InputRecord
from protocol.race.signing import Event, input_digest
from protocol.identity.keys import PeerId


def signed_records(owner: PeerId, buffer: PeerInputs, first: int) -> list[InputRecord]:
    """``owner``'s signed inputs held in ``buffer`` from frame ``first`` on, in frame order, as records."""
    signed = buffer.signed
    return [InputRecord.of(owner, signed[f]) for f in sorted(signed) if f >= first]


class InputForwarding:
    """The forwarding rules of one node's round: who this node is, the race's keys and each racer's chip."""

    __slots__ = ("_race_id", "_me", "_keys", "_skills")

    def __init__(self, race_id: str, me: PeerId, keys: RaceKeyBook, skills: Mapping[PeerId, frozenset[str]]) -> None:
        self._race_id = race_id
        self._me = me
        self._keys = keys
        self._skills = skills

    def digest(self, record: InputRecord) -> tuple[tuple[Event, ...], bytes]:
        """A forwarded input's events, checked against its owner's chip, and the digest its owner signed.
        Raises ``ProtocolError`` for events or a ``prev`` that break the input rules."""
        events = parse_events(record.events, self._skills[record.peer])
        return events, input_digest(self._race_id, record.frame, events, input_prev(record.prev))

    def forwardable(self, records: list[InputRecord]) -> tuple[list[Misbehaviour], list[InputRecord]]:
        """The records whose own signature verifies. A racer proves most inputs by the signature of a later
        one of their chain (docs/race.md, "Chained inputs"), which says nothing of the signature each came
        with, while whoever receives a forwarded input checks it alone: one that fails there is its
        owner's misbehaviour (the ``Misbehaviour`` actions) and is not forwarded. Forwarding is rare (a
        broken link, a bridge, a catch-up), so checking every record then costs little."""
        refused: list[Misbehaviour] = []
        kept: list[InputRecord] = []
        for record in records:
            key = self._keys.key(self._race_id, record.peer)
            if record.peer == self._me or (key is not None and verify_race_signature(
                    key, self.digest(record)[1], record.signature)):
                kept.append(record)
            else:
                refused.append(Misbehaviour(record.peer, "race-input-bad-signature"))
        return refused, kept
