"""Sans-IO rules of the listener's door (docs/transport.md, "The listener's door"): what a connection may
cost before it has said what it is for, and how a dialer waits for a busy listener. No trio, no sockets.

A connection is *opening* from the moment it is accepted until its first message after the handshake has
arrived (the message that says what the link is for: a join request, a race-mesh hello). While opening,
it holds one of ``ListenerLimits.openings`` places, at most ``openings_per_source`` of them for one
source address (``source_of``), and every frame it sends is read exactly and may be at most
``first_frame_bytes`` (``ExactFrame``). ``BusyBackoff`` is the dialer's schedule of attempts against a
listener that answers ``listener-busy``.
"""

from __future__ import annotations

import ipaddress
import random
from collections import Counter
from dataclasses import dataclass

from open4wd_base.errors import LocalError
from protocol.encoding.wire import HEADER, KIB
from protocol.errors import ProtocolError

LISTENER_BUSY = "listener-busy"


@dataclass(frozen=True)
class ListenerLimits:
    """What opening connections may cost a listener; the defaults are the node's."""

    openings: int = 64  # connections in the handshake or waiting for their first message, from everyone
    openings_per_source: int = 8  # of which from one source address (an IPv6 /64): a full room behind one NAT fits
    first_frame_bytes: int = 4 * KIB  # the largest frame before the first message (a join request is < 1 KiB)
    first_message_timeout_ms: int = 5_000  # from the end of the handshake (which has its own 5 s)

    def __post_init__(self) -> None:
        if not 1 <= self.openings_per_source <= self.openings:
            raise ValueError("a source's share must be at least 1 and at most the total")


LISTENER_LIMITS = ListenerLimits()  # the defaults: every node's listener


def source_of(host: str) -> str:
    """The key a source address's share is counted under: the IPv4 address (also when it arrives as an
    IPv4-mapped IPv6 address on a dual-stack socket), the /64 network of an IPv6 address (one host
    usually holds a whole /64), anything else as it is."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])  # drop an IPv6 zone
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class OpeningPlaces:
    """The places of opening connections: ``total`` in all, at most ``per_source`` for one source."""

    def __init__(self, total: int, per_source: int) -> None:
        self.total = total
        self.per_source = per_source
        self._held: Counter[str] = Counter()

    @property
    def in_use(self) -> int:
        """Places held now, by every source."""
        return self._held.total()

    def held(self, source: str) -> int:
        """Places ``source`` holds now."""
        return self._held[source]

    def take(self, source: str) -> None:
        """Give ``source`` a place, or refuse with ``ProtocolError`` ``listener-busy`` (the connection is
        then closed without a handshake): over the source's share, or every place taken."""
        if self._held[source] >= self.per_source:
            raise ProtocolError(LISTENER_BUSY, f"{source} already has {self._held[source]} links opening here, "
                                               f"its share; wait until they finish")
        if self.in_use >= self.total:
            raise ProtocolError(LISTENER_BUSY, f"{self.in_use} links are opening here, the most at once; try again shortly")
        self._held[source] += 1

    def give_back(self, source: str) -> None:
        """The connection of ``source`` has opened (or ended): its place is free again."""
        if self._held[source] <= 0:
            raise LocalError("place-not-held", f"{source} holds no place")  # every take has one give_back
        self._held[source] -= 1
        if not self._held[source]:
            del self._held[source]


class ExactFrame:
    """Reads one frame at a time without reading past it: ``wanted`` is how many bytes to ask the stream
    for next, so nothing after the frame is ever buffered; a header announcing more than ``max_bytes``
    is refused before any body byte is read."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self._length: int | None = None  # the announced body length, once the header is complete

    @property
    def buffered(self) -> bytes:
        """The bytes of the frame read so far (header and part of the body)."""
        return bytes(self._buffer)

    @property
    def wanted(self) -> int:
        """How many bytes complete the header, or else the frame (never 0)."""
        if self._length is None:
            return HEADER.size - len(self._buffer)
        return HEADER.size + self._length - len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add at most ``wanted`` bytes; the frame's body once it is complete (then the next frame starts).

        Raises ``ProtocolError`` ``frame-too-large`` when the header announces more than ``max_bytes``."""
        if len(data) > self.wanted:
            raise LocalError("frame-overread", f"{len(data)} bytes fed where {self.wanted} were wanted")
        self._buffer += data
        if self._length is None and len(self._buffer) == HEADER.size:
            (length,) = HEADER.unpack(self._buffer)
            if length > self.max_bytes:
                raise ProtocolError("frame-too-large", f"a peer announced a {length}-byte frame before its first "
                                                       f"message; the limit until then is {self.max_bytes}")
            self._length = length
        if self._length is None or len(self._buffer) < HEADER.size + self._length:
            return []
        body = bytes(self._buffer[HEADER.size:])
        self._buffer.clear()
        self._length = None
        return [body]


class BusyBackoff:
    """When a dialer tries again after ``listener-busy``: 0.25 s, doubling up to 2 s, each delay scaled by a
    random factor in [0.75, 1.25) so that many refused dialers do not come back together; no attempt starts
    later than ``window_s`` after the first."""

    FIRST_S = 0.25
    CAP_S = 2.0

    def __init__(self, window_s: float, rng: random.Random | None = None) -> None:
        self.window_s = window_s
        self.refusals = 0
        self._rng = rng or random.Random()

    def next_delay_s(self, elapsed_s: float) -> float | None:
        """After a refusal ``elapsed_s`` since the first attempt began: the wait before the next attempt,
        or None when that attempt would start outside the window (give up)."""
        self.refusals += 1
        delay = min(self.CAP_S, self.FIRST_S * 2 ** (self.refusals - 1)) * self._rng.uniform(0.75, 1.25)
        return delay if elapsed_s + delay <= self.window_s else None
