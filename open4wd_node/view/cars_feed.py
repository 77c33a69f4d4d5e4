"""``--json --cars-events``: JSON events plus a ``cars`` event, every car's place on the route, at most 4
times a second while a round is raced.

For a program that draws the race from a node's events: the demo draws its track picture from one node's
``cars`` events, and a game UI can do the same. Like the live view, it reads the round the runner hands
over (``RoundWatch``) from its own task between two frames, so the frame pump pays nothing per frame; a
round whose frame has not moved since the last event is not sent again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

import trio

from open4wd_node.events.sink import EventSink
from open4wd_node.view.live_console import REFRESH_S
from open4wd_node.view.race_picture import car_places, standing_ranks
from open4wd_node.events.round_watch import RoundWatch
from open4wd_node.events.vocabulary import CarPlaces


def cars_event(watch: RoundWatch) -> CarPlaces:
    """The ``cars`` event for the round now: round, frame, and per car its slot, PeerId, route position
    (``arc_um``, ``lat_um``, ``h_um``: the simulation's integers), laps done and rank."""
    world = watch.world
    peer_of = {slot: peer for peer, slot in watch.slots.items()}
    ranks = standing_ranks(world)
    return CarPlaces(round=watch.round_index, frame=world.frame, cars=[
        {"slot": p.slot, "peer": peer_of.get(p.slot), "arc_um": p.arc_um, "lat_um": p.lat_um, "h_um": p.h_um,
         "laps": p.laps, "rank": ranks[p.slot]}
        for p in car_places(world)])


class CarsFeed(EventSink):
    """JSON events, and a ``cars`` event every ``REFRESH_S`` while a round is watched and its frame moved."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(as_json=True, stream=stream)
        self._watch: RoundWatch | None = None
        self._sent: tuple[int, int] | None = None  # (round, frame) of the last cars event

    def watch_round(self, watch: RoundWatch) -> None:
        """From now on the ``cars`` events are of this round."""
        self._watch = watch

    @asynccontextmanager
    async def showing(self) -> AsyncIterator[None]:
        """The ``cars`` events come from their own task while the body runs."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._feed)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()

    async def _feed(self) -> None:
        while True:
            await trio.sleep(REFRESH_S)  # the rate bound, as the live view's (the pump tells nobody)
            watch = self._watch
            if watch is not None and (watch.round_index, watch.world.frame) != self._sent:
                self._sent = (watch.round_index, watch.world.frame)
                self.emit(cars_event(watch))
