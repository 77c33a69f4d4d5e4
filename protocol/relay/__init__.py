"""The relay (docs/relay.md): its messages, the reservation proof, the book of reservations and circuits
with its limits, a circuit's meter, and how a node's contact names its relays."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Circuit": "book",
    "RelayBook": "book",
    "Reservation": "book",
    "Contact": "contact",
    "check_address": "contact",
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
