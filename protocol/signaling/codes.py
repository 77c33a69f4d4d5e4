"""The codes of the signaling wire: what the server tells a socket (``WireCode``: error frames and close
reasons, spec/signaling.md §6), and every refusal it counts (``Refusal``), silent on the wire or not.

The spec's server drops most bad input without a word (§11), and this one keeps that wire; but each drop
has a ``Refusal`` code here, counted in ``open4wd_signal_refusals_total{code}`` and logged, so an operator
sees what was refused and why. A refusal that the wire does report maps to the ``WireCode`` it reports.
"""

from __future__ import annotations

from enum import StrEnum

from open4wd_base.errors import CodedError

CLOSE_POLICY = 1008  # every close the server starts, with the wire code as its reason
CLOSE_TOO_BIG = 1009  # a frame over the limit, empty reason (as the spec's ws library)


class WireCode(StrEnum):
    """An ``error`` frame's code or a 1008 close reason (spec/signaling.md §6)."""

    REGISTER_REJECTED = "register-rejected"
    SENDER_MISMATCH = "sender-mismatch"
    ROOM_FULL = "room-full"
    NOT_REGISTERED = "not-registered"
    TARGET_NOT_FOUND = "target-not-found"
    REGISTER_TIMEOUT = "register-timeout"
    SUPERSEDED = "superseded"
    PEER_TIMEOUT = "peer-timeout"
    LEFT = "left"
    ROOM_CLOSED = "room-closed"  # the spec defines it and never sends it; this server sends it when it drains


class Refusal(StrEnum):
    """Why the server refused (or ignored) what a socket or a request sent: the ``code`` label of
    ``open4wd_signal_refusals_total``. Comments say what the wire shows."""

    FRAME_TOO_LARGE = "frame-too-large"  # close 1009
    FRAME_NOT_JSON = "frame-not-json"  # silent: not JSON, or not a JSON object
    FRAME_UNKNOWN_TYPE = "frame-unknown-type"  # silent
    FRAME_INVALID = "frame-invalid"  # silent: a known type of the wrong shape
    MESSAGE_RATE = "message-rate"  # silent: over the socket's frames per minute
    SCOPE_INVALID = "scope-invalid"  # close register-rejected right after the upgrade
    REGISTER_AGAIN = "register-again"  # close register-rejected, no frame
    SENDER_MISMATCH = "sender-mismatch"  # error + close sender-mismatch
    PROOF_INVALID = "proof-invalid"  # error + close register-rejected: missing, stale, or not the peer's signature
    REGISTER_REPLAYED = "register-replayed"  # error + close register-rejected
    ROOM_FULL = "room-full"  # error + close room-full
    ROOMS_FULL = "rooms-full"  # error + close room-full: the server holds its most rooms
    DRAINING = "draining"  # error + close room-closed: the server is shutting down
    NOT_REGISTERED = "not-registered"  # error + close not-registered
    REGISTER_TIMEOUT = "register-timeout"  # close register-timeout
    PEER_TIMEOUT = "peer-timeout"  # close peer-timeout: no pong in time
    SLOW_CONSUMER = "slow-consumer"  # close peer-timeout: the socket does not read what it is sent
    SIGNAL_SCOPE_MISMATCH = "signal-scope-mismatch"  # silent
    SIGNAL_SIGNER_MISMATCH = "signal-signer-mismatch"  # silent: a peer relaying another's envelope
    SIGNAL_REPLAYED = "signal-replayed"  # silent
    SIGNAL_CACHE_FULL = "signal-cache-full"  # silent: the room's nonce cache is full (fail closed)
    SIGNAL_STALE = "signal-stale"  # silent: outside the ±30 s window
    SIGNAL_BAD_SIGNATURE = "signal-bad-signature"  # silent
    TARGET_NOT_FOUND = "target-not-found"  # error frame, the socket stays open
    FOREIGN_SENDER = "foreign-sender"  # silent: a leave or server frame naming another sender
    SERVER_FRAME = "server-frame"  # silent: a client sent a server's frame type
    CONNECT_RATE = "connect-rate"  # HTTP 429 on /ws
    SERVER_BUSY = "server-busy"  # HTTP 503: connection, source or cache caps
    REQUEST_INVALID = "request-invalid"  # HTTP 400: a request line or headers that do not parse
    TURN_BODY_TOO_LARGE = "turn-body-too-large"  # HTTP 413
    TURN_REQUEST_INVALID = "turn-request-invalid"  # HTTP 400
    TURN_RATE = "turn-rate"  # HTTP 429
    TURN_PROOF_INVALID = "turn-proof-invalid"  # HTTP 403 invalid-proof
    TURN_REPLAYED = "turn-replayed"  # HTTP 409 nonce-replayed


def refusal_of(error: CodedError, otherwise: Refusal = Refusal.FRAME_INVALID) -> Refusal:
    """The ``Refusal`` a coded error's code names (``otherwise`` for a code outside the set)."""
    try:
        return Refusal(error.code)
    except ValueError:
        return otherwise
