"""Sans-IO framing of one DataChannel: whole messages, the parts of a large message, and a closing reason.

aiortc and the browsers refuse a DataChannel message over 262,144 bytes (``MAX_DATACHANNEL_MESSAGE``),
while a link may carry larger bodies (a race's catch-up snapshot). Every DataChannel message therefore
opens with a kind byte:

    0x00 WHOLE  ‖ body                                               a body of at most 262,143 bytes
    0x01 PART   ‖ u32be message id ‖ u32be total size ‖ u16be index ‖ u16be count ‖ bytes
    0x02 CLOSE  ‖ UTF-8 "code" ‖ 0x0a ‖ UTF-8 message                   why the sender closes (the last message)
    0x03 PROBE  ‖ u32be nonce                                           answered at once with
    0x04 ECHO   ‖ u32be nonce                                           (the carrier's round-trip time)

A body larger than a WHOLE message is split into ``count`` PARTs of ``PART_BYTES`` (the last shorter),
sent in order on a reliable lane only; the receiver's ``Reassembler`` accepts parts in any order and
keeps every bound before it buffers a byte: the largest body its channel may carry, the messages it
holds unfinished at once, and a deadline (time passed in) for a message whose parts stop coming. Any
breach is a ``PeerError`` whose code says which (``chunk-*``): the carrier closes that link, and only
that link.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum

from protocol.errors import LocalError, PeerError

MAX_DATACHANNEL_MESSAGE = 262_144
"""The largest DataChannel message aiortc and the browsers accept (their ``max-message-size``)."""
PART_HEADER = struct.Struct(">BIIHH")
PROBE = struct.Struct(">BI")
MAX_WHOLE_BODY = MAX_DATACHANNEL_MESSAGE - 1
PART_BYTES = MAX_DATACHANNEL_MESSAGE - PART_HEADER.size
MAX_CLOSE_TEXT = 200
CLOSE_CODE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class Kind(IntEnum):
    """The kind byte that opens every DataChannel message of a link."""

    WHOLE = 0
    PART = 1
    CLOSE = 2
    PROBE = 3
    ECHO = 4


@dataclass(frozen=True)
class ChunkLimits:
    """What a receiver holds for one channel: the largest reassembled body, how many unfinished messages
    at once, and how long a started message may stay unfinished."""

    max_message_bytes: int
    max_in_flight: int = 2
    deadline_ms: int = 10_000
    part_bytes: int = PART_BYTES  # the link's constant; the fuzz door uses small parts to reach every state

    def __post_init__(self) -> None:
        if min(self.max_message_bytes, self.max_in_flight, self.deadline_ms) < 1 or not 0 < self.part_bytes <= PART_BYTES:
            raise LocalError("chunk-limits-invalid", "chunk limits must be positive and parts fit a DataChannel message")


def frame_whole(body: bytes) -> bytes:
    """One DataChannel message carrying ``body`` whole (``LocalError`` when it needs parts)."""
    if len(body) > MAX_WHOLE_BODY:
        raise LocalError("chunk-needs-parts", f"a body of {len(body)} bytes does not fit one DataChannel message")
    return b"\x00" + body


def frame_parts(body: bytes, message_id: int, part_bytes: int = PART_BYTES) -> Iterator[bytes]:
    """The DataChannel messages that carry ``body`` as parts of message ``message_id`` (u32), each part
    ``part_bytes`` long but the last."""
    count = max(1, -(-len(body) // part_bytes))
    if not body:
        raise LocalError("chunk-empty", "an empty body goes whole, never in parts")
    if count > 0xFFFF:
        raise LocalError("chunk-too-large", f"a body of {len(body)} bytes needs more than 65535 parts")
    for index in range(count):
        piece = body[index * part_bytes : (index + 1) * part_bytes]
        yield PART_HEADER.pack(Kind.PART, message_id & 0xFFFFFFFF, len(body), index, count) + piece


def frame_body(body: bytes, message_id: int) -> list[bytes]:
    """What carries ``body``: one WHOLE message when it fits, else its PARTs (for reliable lanes only)."""
    return [frame_whole(body)] if len(body) <= MAX_WHOLE_BODY else list(frame_parts(body, message_id))


def frame_close(code: str, message: str) -> bytes:
    """The CLOSE message that tells the peer why this side closes (text cut to ``MAX_CLOSE_TEXT``)."""
    return b"\x02" + code.encode()[:64] + b"\n" + message[:MAX_CLOSE_TEXT].encode()


def frame_probe(kind: Kind, nonce: int) -> bytes:
    """A PROBE or its ECHO carrying ``nonce``."""
    return PROBE.pack(kind, nonce & 0xFFFFFFFF)


def read_close(data: bytes) -> tuple[str, str]:
    """(code, message) of a CLOSE message, made safe to show: a kebab-case code of at most 64 characters
    (else ``link-closed``) and printable text of at most ``MAX_CLOSE_TEXT`` characters."""
    raw_code, _, raw_text = data[1:].partition(b"\n")
    code = raw_code.decode("utf-8", "replace")
    code = code if len(code) <= 64 and CLOSE_CODE.fullmatch(code) else "link-closed"
    text = raw_text.decode("utf-8", "replace")[:MAX_CLOSE_TEXT]
    return code, "".join(c if c.isprintable() else "?" for c in text)


def read_probe(data: bytes) -> int:
    """The nonce of a PROBE or ECHO; ``PeerError`` ``chunk-malformed`` for any other length."""
    if len(data) != PROBE.size:
        raise PeerError("chunk-malformed", f"a probe has {PROBE.size} bytes, not {len(data)}")
    return int(PROBE.unpack(data)[1])


@dataclass
class _Unfinished:
    total: int
    count: int
    deadline_ms: int
    parts: dict[int, bytes] = field(default_factory=dict)
    size: int = 0


class Reassembler:
    """Joins the PARTs of one channel's large messages, within ``ChunkLimits``; nothing but what those
    limits allow is ever buffered: at most ``max_in_flight`` messages, each at most
    ``max_message_bytes``."""

    def __init__(self, limits: ChunkLimits) -> None:
        self.limits = limits
        self._unfinished: dict[int, _Unfinished] = {}

    @property
    def buffered(self) -> int:
        """Bytes held in unfinished messages."""
        return sum(message.size for message in self._unfinished.values())

    @property
    def in_flight(self) -> int:
        """Messages started and not finished."""
        return len(self._unfinished)

    @property
    def deadline_ms(self) -> int | None:
        """When the oldest unfinished message expires (``expire`` then refuses it), or None."""
        return min((m.deadline_ms for m in self._unfinished.values()), default=None)

    def expire(self, now_ms: int) -> None:
        """Timer event: ``PeerError`` ``chunk-unfinished`` when a message is still unfinished at its deadline."""
        for message_id, message in self._unfinished.items():
            if now_ms >= message.deadline_ms:
                raise PeerError("chunk-unfinished", f"message {message_id} got {len(message.parts)} of its "
                                                    f"{message.count} parts within {self.limits.deadline_ms} ms")

    def feed(self, data: bytes, now_ms: int) -> bytes | None:
        """One PART message: the whole body once its last part arrived, else None. Raises ``PeerError``
        (``chunk-malformed``, ``chunk-too-large``, ``chunk-too-many-in-flight``, ``chunk-inconsistent``,
        ``chunk-duplicate``, ``chunk-unfinished``) for a part that breaks a bound; nothing of it is kept."""
        self.expire(now_ms)
        if len(data) <= PART_HEADER.size or data[0] != Kind.PART:
            raise PeerError("chunk-malformed", "a part has a header and at least one byte")
        _, message_id, total, index, count = PART_HEADER.unpack_from(data)
        piece = data[PART_HEADER.size :]
        if total > self.limits.max_message_bytes:
            raise PeerError("chunk-too-large", f"a message of {total} bytes exceeds this channel's "
                                               f"{self.limits.max_message_bytes}")
        size = self.limits.part_bytes
        if count != max(1, -(-total // size)) or index >= count:
            raise PeerError("chunk-malformed", f"part {index} of {count} cannot belong to a message of {total} bytes")
        expected = size if index < count - 1 else total - size * (count - 1)
        if len(piece) != expected:
            raise PeerError("chunk-malformed", f"part {index} of {count} carries {len(piece)} bytes, not {expected}")
        message = self._unfinished.get(message_id)
        if message is None:
            if len(self._unfinished) >= self.limits.max_in_flight:
                raise PeerError("chunk-too-many-in-flight", f"more than {self.limits.max_in_flight} large messages "
                                                            "are unfinished at once")
            message = self._unfinished[message_id] = _Unfinished(total, count, now_ms + self.limits.deadline_ms)
        elif (message.total, message.count) != (total, count):
            raise PeerError("chunk-inconsistent", f"the parts of message {message_id} disagree on its size")
        if index in message.parts:
            raise PeerError("chunk-duplicate", f"part {index} of message {message_id} came twice")
        message.parts[index] = piece
        message.size += len(piece)
        if len(message.parts) < count:
            return None
        del self._unfinished[message_id]
        return b"".join(message.parts[i] for i in range(count))


@dataclass(frozen=True)
class Body:
    """A whole body for the link above."""

    data: bytes


@dataclass(frozen=True)
class Closing:
    """The peer closes the link, and why."""

    code: str
    message: str


@dataclass(frozen=True)
class Probed:
    """The peer asks for an ECHO of ``nonce``."""

    nonce: int


@dataclass(frozen=True)
class Echoed:
    """The peer's ECHO of this side's PROBE ``nonce``."""

    nonce: int


ChannelEvent = Body | Closing | Probed | Echoed


class ChannelReader:
    """Reads one channel's DataChannel messages into events: every kind byte, the parts of large bodies
    through a ``Reassembler`` on a reliable channel (``limits``), whole messages only on a lossy one
    (``limits`` None: a PART there is refused with ``chunk-on-lossy-lane``)."""

    def __init__(self, limits: ChunkLimits | None) -> None:
        self.reassembler = None if limits is None else Reassembler(limits)

    def read(self, data: bytes, now_ms: int) -> ChannelEvent | None:
        """The event ``data`` makes (None: a part of a body not yet whole). ``PeerError`` (``chunk-*``) for a
        message that breaks a rule."""
        if not data:
            raise PeerError("chunk-malformed", "a link's DataChannel messages are never empty")
        kind = data[0]
        if kind == Kind.WHOLE:
            return Body(data[1:])
        if kind == Kind.PART:
            if self.reassembler is None:
                raise PeerError("chunk-on-lossy-lane", "a lossy channel carries whole messages only")
            body = self.reassembler.feed(data, now_ms)
            return None if body is None else Body(body)
        if kind == Kind.CLOSE:
            return Closing(*read_close(data))
        if kind == Kind.PROBE:
            return Probed(read_probe(data))
        if kind == Kind.ECHO:
            return Echoed(read_probe(data))
        raise PeerError("chunk-malformed", f"unknown DataChannel message kind {kind}")

    @property
    def deadline_ms(self) -> int | None:
        """When an unfinished body expires (``expire`` refuses it), or None."""
        return None if self.reassembler is None else self.reassembler.deadline_ms

    def expire(self, now_ms: int) -> None:
        """Timer event: ``PeerError`` ``chunk-unfinished`` for a body still unfinished at its deadline."""
        if self.reassembler is not None:
            self.reassembler.expire(now_ms)
