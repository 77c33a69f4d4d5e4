"""``TickSends``: one ``race-inputs`` per peer per pump tick, however many frames the tick stepped.

A node that is behind steps up to 4 frames in one tick, and each frame's input goes to every peer in a
``race-inputs`` carrying this node's inputs that peer has neither acknowledged nor been sent. Within one
tick no message is read between the steps, so the tick's ``race-inputs`` to a peer join into one
(``protocol.race.spans.merge_inputs``: each span continues the one before, the newest ack and wants
count). Sending only that one saves the peer decoding several and this node the writes, exactly when a
node is short of CPU (docs/node.md, "CPU per frame"). When two do not join (a span that neither continues
nor covers the one before, or more than a message's caps), the older goes out first. Every other
message passes straight through, in order: a held ``race-inputs`` is sent before any other message to
the same peer.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.encoding.wire import Message
from protocol.race.messages import RaceInputs
from protocol.race.spans import merge_inputs
from protocol.identity.keys import PeerId


class TickSends:
    """Between ``hold`` and ``flush`` (a pump tick), holds each peer's newest ``race-inputs``; at any other
    time every message goes straight through."""

    def __init__(self, send: Callable[[PeerId, Message], None]) -> None:
        self._send = send
        self._holding = False
        self._held: dict[PeerId, RaceInputs] = {}
        self.coalesced = 0
        """``race-inputs`` that were not sent because they joined a later one of the same tick."""

    def send(self, peer: PeerId, message: Message) -> None:
        """Send ``message`` to ``peer``, or hold it when it is a ``race-inputs`` (module docstring)."""
        held = self._held.pop(peer, None)
        if self._holding and isinstance(message, RaceInputs):
            if held is not None:
                merged = merge_inputs(held, message)
                if merged is not None:
                    self.coalesced += 1
                    message = merged
                else:
                    self._send(peer, held)
            self._held[peer] = message
            return
        if held is not None:
            self._send(peer, held)
        self._send(peer, message)

    def hold(self) -> None:
        """Hold ``race-inputs`` from now until ``flush`` (a pump tick began)."""
        self._holding = True

    def flush(self) -> None:
        """Send every held ``race-inputs`` and stop holding (the tick is over)."""
        self._holding = False
        held, self._held = self._held, {}
        for peer, message in held.items():
            self._send(peer, message)

