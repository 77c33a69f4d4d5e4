"""``TickSends``: one ``race-inputs`` per peer per pump tick, however many frames the tick stepped.

A node that is behind steps up to 4 frames in one tick, and each frame's input goes to every peer in a
``race-inputs`` carrying all of this node's inputs that peer has not acknowledged. Within one tick no
message is read between the steps, so no acknowledgement can arrive: the tick's last ``race-inputs`` to a
peer carries every input the earlier ones did (and the same ack, or a newer one). Sending only that one
saves the peer decoding the copies and this node the writes, exactly when a node is short of CPU
(docs/node.md, "CPU per frame"). The one exception is kept: when the newer message no longer carries
the older one's first frame (more than ``MAX_INPUTS_PER_MESSAGE`` unacknowledged), the older goes out
first. Every other message passes straight through, in order: a held ``race-inputs`` is sent before any
other message to the same peer.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.encoding.wire import Message
from protocol.race.messages import RaceInputs


class TickSends:
    """Between ``hold`` and ``flush`` (a pump tick), holds each peer's newest ``race-inputs``; at any other
    time every message goes straight through."""

    def __init__(self, send: Callable[[str, Message], None]) -> None:
        self._send = send
        self._holding = False
        self._held: dict[str, RaceInputs] = {}
        self.coalesced = 0
        """``race-inputs`` that were not sent because a later one of the same tick carried their inputs."""

    def send(self, peer: str, message: Message) -> None:
        """Send ``message`` to ``peer``, or hold it when it is a ``race-inputs`` (module docstring)."""
        held = self._held.pop(peer, None)
        if self._holding and isinstance(message, RaceInputs):
            if held is not None:
                if _covers(message, held):
                    self.coalesced += 1
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


def _covers(newer: RaceInputs, older: RaceInputs) -> bool:
    """Whether ``newer`` carries every input ``older`` did: its frames are a contiguous run that starts
    no later than ``older``'s first frame."""
    if not older.inputs:
        return True
    return bool(newer.inputs) and newer.inputs[0].frame <= older.inputs[0].frame
