"""The relay (docs/relay.md): its messages, the reservation proof, the book of reservations and circuits
with its limits, and a circuit's meter (a node's contact, which names its relays: ``protocol.link.contact``)."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Circuit": "book",
    "RelayBook": "book",
    "Reservation": "book",
    "CircuitEnd": "limits",
    "Refusal": "limits",
    "RelayLimits": "limits",
    "RelayRefused": "limits",
    "CircuitMeter": "meter",
    "CircuitOver": "meter",
    "total_bucket": "meter",
    "RELAY_MESSAGES": "messages",
    "RelayAccept": "messages",
    "RelayCircuit": "messages",
    "RelayConnect": "messages",
    "RelayIncoming": "messages",
    "RelayRelease": "messages",
    "RelayReserve": "messages",
    "RelayReserved": "messages",
    "check_reservation": "proof",
    "reservation_digest": "proof",
    "sign_reservation": "proof",
})
