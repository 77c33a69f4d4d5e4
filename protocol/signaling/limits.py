"""The numbers of the Open4WD signaling wire (spec/signaling.md §4, §8, §9): what every frame, proof and
reply may hold, and the server's timers. A client and a server built from the same constants accept the
same frames; the server's configurable ones (rates, room size, timers) are ``HubLimits``.
"""

from __future__ import annotations

from dataclasses import dataclass

from open4wd_base.errors import LocalError

MAX_FRAME_BYTES = 256 * 1024  # one WebSocket frame, UTF-8; more closes the socket with 1009
MAX_SDP_BYTES = 128 * 1024  # an SDP offer or answer, UTF-8
MAX_CANDIDATE_CHARS = 4096  # an ICE candidate line, UTF-16 code units (as JavaScript counts a string)
MAX_ICE_FIELD_CHARS = 256  # sdpMid, usernameFragment
MAX_ID_CHARS = 256  # sender, peerId, a proof's nonce, an error code
MAX_SIGNATURE_HEX_CHARS = 4096  # what the register parser takes before the signature is checked
MAX_ERROR_MESSAGE_CHARS = 4096  # an error frame's optional message
MAX_PEERS = 64  # registered peers in one room (room-state never lists more)
NONCE_HEX_CHARS = 32  # 16 random bytes, lowercase hex
SIGNATURE_HEX_CHARS = 128  # 64 bytes, lowercase hex
TIMESTAMP_TOLERANCE_MS = 30_000  # register, signal and TURN proofs, inclusive, in either direction
SIGNAL_NONCE_CAPACITY = 65_536  # a room's cache of delivered signal nonces; full = every signal dropped
TURN_TTL_S = 300  # the life of a TURN REST credential
TURN_BODY_MAX_BYTES = 4096  # a /turn-token request body
TURN_REPLY_MAX_BYTES = 32 * 1024  # what a client reads of a /turn-token reply
TURN_NONCE_CAPACITY = 65_536  # the server's cache of used /turn-token nonces (fail closed when full)
RATE_WINDOW_MS = 60_000  # every rate limit counts in fixed windows of this length
SERVER_SENDER = "server"  # the ``sender`` of every frame the server makes


@dataclass(frozen=True)
class HubLimits:
    """The server's limits and timers; the defaults are the spec's server's (``configs/signal.toml``)."""

    max_peers: int = MAX_PEERS
    message_rate_per_min: int = 1200  # frames per socket per window, counted before register; excess dropped
    connect_rate_per_min: int = 60  # WebSocket upgrades per source per window (HTTP 429 beyond)
    turn_rate_per_min: int = 60  # /turn-token requests per source per window (HTTP 429 beyond)
    register_deadline_ms: int = 10_000  # a socket must register this soon after its upgrade
    peer_timeout_ms: int = 90_000  # a registered socket without a pong this long is reaped
    max_connections: int = 10_000  # open WebSockets on the whole server
    max_rooms: int = 10_000  # rooms held at once (a room lingers until its replay caches are empty)
    max_sources: int = 100_000  # sources whose rate windows are held at once

    def __post_init__(self) -> None:
        for name in ("message_rate_per_min", "connect_rate_per_min", "turn_rate_per_min", "register_deadline_ms",
                     "peer_timeout_ms", "max_connections", "max_rooms", "max_sources"):
            if getattr(self, name) <= 0:
                raise LocalError("signal-limit-invalid", f"{name} must be positive, got {getattr(self, name)}")
        if not 1 <= self.max_peers <= MAX_PEERS:
            raise LocalError("signal-limit-invalid", f"max_peers must be 1..{MAX_PEERS} (clients refuse a longer "
                                                     f"room-state), got {self.max_peers}")

    @property
    def ping_interval_ms(self) -> int:
        """How often the server pings a socket: a third of the peer timeout, at least 1 s (as the spec's server)."""
        return max(1000, round(self.peer_timeout_ms / 3))
