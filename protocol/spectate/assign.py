"""Which racer is each spectator's source (spec/netcode.md §6.4): the host decides it at match start."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protocol.errors import ProtocolError
from protocol.identity.keys import PeerId


def assign_sources(racers: Sequence[PeerId], spectators: Sequence[PeerId],
                   load: Mapping[PeerId, int] | None = None) -> dict[PeerId, PeerId]:
    """Each spectator (in admission order) to the least-loaded racer, ties broken by roster order;
    ``load`` counts spectators a racer already serves. Empty without racers."""
    counts = {racer: (load or {}).get(racer, 0) for racer in racers}
    order = {racer: i for i, racer in enumerate(racers)}
    assigned: dict[PeerId, PeerId] = {}
    if not racers:
        return assigned
    for spectator in spectators:
        source = min(racers, key=lambda r: (counts[r], order[r]))
        assigned[spectator] = source
        counts[source] += 1
    return assigned


def check_sources(sources: Mapping[PeerId, PeerId], spectators: Sequence[PeerId], racers: Sequence[PeerId]) -> None:
    """A ``match-start``'s assignment must be one-to-one with the room's spectators and name only racers
    that start. Raises ``ProtocolError`` ``match-start-invalid`` otherwise."""
    if sorted(sources) != sorted(spectators):
        raise ProtocolError("match-start-invalid", "the spectator sources do not cover exactly the room's spectators")
    if any(source not in racers for source in sources.values()):
        raise ProtocolError("match-start-invalid", "a spectator source is not a racer of the match")
