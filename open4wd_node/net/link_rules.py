"""Sans-IO rules of an authenticated link (spec/rooms.md §4.3, spec/identity.md §5): ingress limits and
keepalive. No trio and no clock here: every call takes ``now_ms``, so the rules are tested without sockets.

Ingress order per frame: size cap (``FrameDecoder``, before buffering) → general buckets (messages and
bytes) → the type, read without building the body → the expensive bucket for declared types → strict
decode. A bucket drop is not delivered and does not count as a violation; a decode failure is a
violation; ``ProtocolError`` from ``IngressGuard.admit`` or ``Keepalive.poll`` means close the link.
``SendPacer`` keeps the same buckets for what this side sends, so a well-behaved sender waits instead of
having its messages dropped by the peer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from protocol.errors import ProtocolError
from protocol.link.handshake import HANDSHAKE_TYPES, LinkClose
from protocol.link.token_bucket import TokenBucket
from protocol.link.violations import ViolationCounter
from protocol.encoding.wire import (
    REGISTRY,
    ROOM,
    Message,
    decode_message,
    message,
    peek_message_type,
)


@dataclass(frozen=True)
class LinkLimits:
    """Per-link limits; the defaults are the spec's room star link values."""

    general_burst: int = 64
    general_per_second: int = 32
    general_bytes_burst: int = 327_680
    general_bytes_per_second: int = 262_144
    expensive_burst: int = 8
    expensive_per_second: int = 4
    max_consecutive_drops: int = 16
    max_violations: int = 3
    ping_interval_ms: int = 3_000
    idle_timeout_ms: int = 10_000
    handshake_timeout_ms: int = 5_000
    send_timeout_ms: int = 10_000

    def __post_init__(self) -> None:
        if self.general_bytes_burst < ROOM.max_frame_bytes:
            raise ValueError("the byte burst must hold one largest frame, or such a frame could never pass")


ROOM_LIMITS = LinkLimits()  # the defaults: a room star link (a race-mesh link is repurposed to its own)


@message("link-ping")
class LinkPing(Message):
    """Keepalive probe; the peer answers with a ``LinkPong`` of the same ``nonce`` (never reaches the caller)."""

    nonce: int


@message("link-pong")
class LinkPong(Message):
    """The answer to a ``LinkPing``: its round trip is the link's ``rtt_ms``."""

    nonce: int


LINK_MESSAGES: dict[str, type[Message]] = {cls.TYPE: cls for cls in (LinkPing, LinkPong, LinkClose)}


def link_registry(registry: Mapping[str, type[Message]] | None) -> dict[str, type[Message]]:
    """What a link decodes after the handshake: the caller's messages plus the link's own, never a
    handshake frame or payload (``link-noise``, ``link-version``, ``link-identity``)."""
    table = {k: v for k, v in (REGISTRY if registry is None else registry).items() if k not in HANDSHAKE_TYPES}
    table.update(LINK_MESSAGES)
    return table


class LinkBuckets:
    """The token buckets of one direction of a link (spec/rooms.md §4.3)."""

    def __init__(self, limits: LinkLimits, now_ms: int) -> None:
        self.general = TokenBucket(limits.general_burst, limits.general_per_second, now_ms)
        self.general_bytes = TokenBucket(limits.general_bytes_burst, limits.general_bytes_per_second, now_ms)
        self.expensive = TokenBucket(limits.expensive_burst, limits.expensive_per_second, now_ms)

    def charge(self, size: int, expensive: bool, now_ms: int) -> int:
        """Charge one frame of ``size`` bytes: a message and its bytes, and an expensive token if it is one.
        0 after spending all of it; otherwise the wait until all of it fits, with nothing spent. Written
        out for the two or three buckets rather than looped over a list of charges: every message a race
        node sends or receives passes here (docs/node.md, "CPU per frame": the ``link`` part)."""
        general, general_bytes = self.general, self.general_bytes
        wait = max(general.wait_ms(now_ms, 1), general_bytes.wait_ms(now_ms, size))
        if expensive:
            wait = max(wait, self.expensive.wait_ms(now_ms, 1))
        if wait == 0:
            general.spend(1)
            general_bytes.spend(size)
            if expensive:
                self.expensive.spend(1)
        return wait


class SendPacer:
    """Spends the peer's budget before sending, so our own messages are never dropped by its buckets."""

    def __init__(self, limits: LinkLimits, now_ms: int, expensive: frozenset[str] = frozenset()) -> None:
        self.expensive = frozenset(expensive)
        self.buckets = LinkBuckets(limits, now_ms)

    def delay_ms(self, kind: str, size: int, now_ms: int) -> int:
        """0 after charging the frame; otherwise how long to wait before asking again."""
        return self.buckets.charge(size, kind in self.expensive, now_ms)


class IngressGuard:
    """Rate limits, violation counting and strict decoding of one link's incoming frames."""

    def __init__(
        self,
        limits: LinkLimits,
        now_ms: int,
        expensive: frozenset[str] = frozenset(),
        registry: Mapping[str, type[Message]] | None = None,
    ) -> None:
        self.limits = limits
        self.expensive = frozenset(expensive)
        self.registry = link_registry(registry)
        self.buckets = LinkBuckets(limits, now_ms)
        self.violations = ViolationCounter(limits.max_violations)
        self.consecutive_drops = 0
        self.dropped = 0
        self.last_drop: tuple[str, str] | None = None
        """(bucket, message type) of the newest bucket drop: ``messages``, ``bytes`` or ``expensive``."""

    def admit(self, body: bytes, now_ms: int) -> Message | None:
        """The decoded message, or None when a bucket dropped it or it was a (tolerated) violation."""
        if self.buckets.charge(len(body), False, now_ms):
            self._drop("bytes" if self.buckets.general.wait_ms(now_ms) == 0 else "messages", body)
            return None
        try:
            expensive = peek_message_type(body) in self.expensive
        except ProtocolError as exc:
            self._violation(exc)
            return None
        if expensive and not self.buckets.expensive.take(now_ms):
            self._drop("expensive", body)
            return None
        self.consecutive_drops = 0
        try:
            return decode_message(body, self.registry)
        except ProtocolError as exc:
            self._violation(exc)
            return None

    def _violation(self, exc: ProtocolError) -> None:
        """Count one violation; ``ProtocolError`` (close the link) once there are too many."""
        self.consecutive_drops = 0
        if self.violations.record(exc.code):
            raise ProtocolError(exc.code, f"{self.violations.count} protocol violations; the last: {exc.message}")

    def _drop(self, bucket: str, body: bytes) -> None:
        try:
            kind = peek_message_type(body)
        except ProtocolError:
            kind = "?"
        self.last_drop = (bucket, kind)
        self.dropped += 1
        self.consecutive_drops += 1
        if self.consecutive_drops >= self.limits.max_consecutive_drops:
            raise ProtocolError(
                "link-flooded", f"{self.consecutive_drops} messages in a row exceeded the link's rate limits"
            )


class Keepalive:
    """Pings every ``ping_interval_ms``, measures the round trip, and declares a silent peer gone.

    Silence is counted from the last frame heard, but never from before the current read began: a
    reader that was busy elsewhere has not observed silence.
    """

    def __init__(self, limits: LinkLimits, now_ms: int) -> None:
        self.interval_ms = limits.ping_interval_ms
        self.idle_timeout_ms = limits.idle_timeout_ms
        self.rtt_ms: int | None = None
        self._heard_ms = now_ms
        self._next_ping_ms = now_ms + self.interval_ms
        self._counter = 0
        self._outstanding: tuple[int, int] | None = None  # (nonce, sent at)

    @property
    def deadline_ms(self) -> int:
        """When ``poll`` has something to do next."""
        return min(self._next_ping_ms, self._heard_ms + self.idle_timeout_ms)

    def heard(self, now_ms: int) -> None:
        """A frame arrived, or a read began: silence restarts from here."""
        self._heard_ms = max(self._heard_ms, now_ms)

    def poll(self, now_ms: int) -> LinkPing | None:
        """A ping to send when one is due; raises ``link-timeout`` after the idle timeout."""
        if now_ms - self._heard_ms >= self.idle_timeout_ms:
            raise ProtocolError("link-timeout", f"the peer sent nothing for {self.idle_timeout_ms} ms")
        if now_ms < self._next_ping_ms:
            return None
        self._counter += 1
        self._outstanding = (self._counter, now_ms)
        self._next_ping_ms = now_ms + self.interval_ms
        return LinkPing(nonce=self._counter)

    def pong(self, msg: LinkPong, now_ms: int) -> None:
        """A pong for the outstanding ping sets ``rtt_ms``; stale or unsolicited pongs are ignored."""
        if self._outstanding is not None and msg.nonce == self._outstanding[0]:
            self.rtt_ms = now_ms - self._outstanding[1]
            self._outstanding = None
