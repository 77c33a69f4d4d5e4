"""Messages of the relay (docs/relay.md): the control link of a reservation and the opening of a circuit.

Three kinds of link reach a relay, each named by its first message: a reserved node's **control link**
(``relay-reserve``, then refreshes, ``relay-incoming`` notices and ``relay-release``), a **connecting
link** (``relay-connect``: "pair me with this PeerId"), and the reserved node's **answering link**
(``relay-accept``: "this connection is my end of that circuit"). The relay answers a connect and an
accept with ``relay-circuit`` and from then on copies raw bytes between the two connections: the two
ends run their own Noise handshake through it. A refusal is the link's ``link-close`` with its code.
"""

from __future__ import annotations

from protocol.encoding.wire import Message, message
from protocol.identity.keys import PeerId

CIRCUIT_ID_BYTES = 16


@message("relay-reserve")
class RelayReserve(Message):
    """Reserve (or refresh) a slot: ``proof`` is this node's signature over ``reservation_digest`` of this link."""

    proof: bytes


@message("relay-reserved")
class RelayReserved(Message):
    """The reservation is granted for ``ttlMs``; ``circuitMs`` and ``circuitBytes`` bound each circuit to it."""

    ttlMs: int
    circuitMs: int
    circuitBytes: int


@message("relay-release")
class RelayRelease(Message):
    """The reserved node leaves: drop its reservation (the control link closes next)."""

    reason: str


@message("relay-connect")
class RelayConnect(Message):
    """The first message of a connecting link: pair this connection with reserved ``target``."""

    target: PeerId


@message("relay-incoming")
class RelayIncoming(Message):
    """To a reserved node, on its control link: ``source`` wants a circuit; answer with a new
    connection whose first message is ``relay-accept {circuit}``."""

    circuit: bytes
    source: str


@message("relay-accept")
class RelayAccept(Message):
    """The first message of a reserved node's answering connection: this is my end of ``circuit``."""

    circuit: bytes


@message("relay-circuit")
class RelayCircuit(Message):
    """The circuit to ``peer`` is open: every byte after this frame is the other end's, copied as it is."""

    peer: PeerId


RELAY_MESSAGES: dict[str, type[Message]] = {
    cls.TYPE: cls
    for cls in (RelayReserve, RelayReserved, RelayRelease, RelayConnect, RelayIncoming, RelayAccept, RelayCircuit)
}
"""Everything a link to or from a relay decodes (the link's own ping, pong and close are added by the link)."""
