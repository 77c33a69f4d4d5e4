"""Framing and strict message decoding for every link: ``u32 big-endian length ‖ msgpack body``.

The length is checked against the channel's limit before any body byte is buffered or decoded.
Bodies decode into typed message objects; an unknown type, a missing, mistyped or extra field is a
protocol violation with its own code (``ProtocolError``: what a peer sent). Framing a body of this
node's own that is too large, or building a message type wrongly, is a ``LocalError``. The rate limits
and the violation count that decide whether a frame is decoded at all are ``protocol.encoding.hygiene``'s.
"""

from __future__ import annotations

import struct
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar, TypeVar, dataclass_transform, get_args, get_origin, get_type_hints

import msgpack

from protocol.encoding import plans
from protocol.errors import LocalError, ProtocolError

HEADER = struct.Struct(">I")
KIB = 1024


@dataclass(frozen=True)
class Channel:
    """A kind of link traffic and the largest frame body it allows."""

    name: str
    max_frame_bytes: int


HANDSHAKE = Channel("handshake", 4 * KIB)
ROOM = Channel("room", 256 * KIB)
CONTROL = Channel("control", 256 * KIB)
RACE = Channel("race", 16 * KIB)
MAX_OPAQUE_DEPTH = 16


def encode_frame(body: bytes, channel: Channel) -> bytes:
    """``body`` (this node's own message) framed for ``channel``.

    Raises ``LocalError`` (``frame-too-large``) when the body exceeds the channel's limit: this node
    built a message it may not send, which is never the peer's fault.
    """
    if len(body) > channel.max_frame_bytes:
        raise LocalError("frame-too-large", f"{len(body)} bytes exceed the {channel.name} limit of {channel.max_frame_bytes}")
    return HEADER.pack(len(body)) + body


class FrameDecoder:
    """Incremental, sans-IO frame splitter: feed bytes as they arrive, get whole frame bodies back."""

    def __init__(self, channel: Channel) -> None:
        """A splitter that refuses frames larger than ``channel`` allows."""
        self.channel = channel
        self._buffer = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data`` from the peer; return the frame bodies it completed, in order.

        Raises ``ProtocolError`` (``frame-too-large``) as soon as a header announces a frame over the
        channel's limit, before its body is buffered.
        """
        self._buffer += data
        bodies = []
        while len(self._buffer) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buffer)
            if length > self.channel.max_frame_bytes:
                raise ProtocolError(
                    "frame-too-large",
                    f"a peer announced a {length}-byte frame; the {self.channel.name} limit is {self.channel.max_frame_bytes}",
                )
            if len(self._buffer) < HEADER.size + length:
                break
            bodies.append(bytes(self._buffer[HEADER.size : HEADER.size + length]))
            del self._buffer[: HEADER.size + length]
        return bodies


# ---- typed messages -------------------------------------------------------------------------------

class Message:
    """Base of every wire message; subclasses are frozen dataclasses registered with ``@message``."""

    TYPE: ClassVar[str] = ""


M = TypeVar("M", bound=Message)
REGISTRY: dict[str, type[Message]] = {}
_HINTS: dict[type, dict[str, Any]] = {}


@dataclass_transform(frozen_default=True)
def message(type_name: str) -> Callable[[type[M]], type[M]]:
    """Register a class as the frozen dataclass message with wire type ``type_name``.

    Raises ``LocalError`` (``message-type-duplicate``) when the name is already taken (a bug: two
    message classes would claim the same frames).
    """

    def wrap(cls: type[M]) -> type[M]:
        cls = dataclass(frozen=True)(cls)
        if type_name in REGISTRY:
            raise LocalError("message-type-duplicate", f"message type {type_name!r} registered twice")
        cls.TYPE = type_name
        REGISTRY[type_name] = cls
        return cls

    return wrap


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


_PLAIN_FIELDS: dict[type, tuple[str, ...] | None] = {}
"""Per type met while encoding: its dataclass field names, or None (not a dataclass instance)."""


def _to_plain(value: Any) -> Any:
    kind = type(value)
    if kind in _PLAIN_FIELDS:
        names = _PLAIN_FIELDS[kind]
    elif isinstance(value, type):  # a class, not a message value: never cached
        names = None
    else:
        names = _PLAIN_FIELDS[kind] = tuple(f.name for f in fields(value)) if is_dataclass(value) else None
    if names is not None:
        return {name: _to_plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    return value


def encode_message(msg: Message) -> bytes:
    """The msgpack body of ``msg``: a map of its ``type`` and every field (nested dataclasses as maps)."""
    body = plans.encoder(type(msg), msg.TYPE, _to_plain)(msg)
    packed: bytes = msgpack.packb(body, use_bin_type=True)
    return packed


def _reject_ext(code: int, data: bytes) -> Any:
    raise ProtocolError("mistyped-field", f"msgpack extension type {code} is not allowed")


def _unpack(body: bytes) -> Any:
    try:
        return msgpack.unpackb(
            body, raw=False, strict_map_key=True, use_list=True, ext_hook=_reject_ext, timestamp=0
        )
    except ProtocolError:
        raise
    except (ValueError, TypeError, msgpack.exceptions.UnpackException) as exc:
        raise ProtocolError("malformed-frame", f"the frame body is not valid msgpack ({type(exc).__name__})") from None


def _check_opaque(value: Any, path: str, depth: int = 0) -> Any:
    """Values of ``Any`` fields: plain data only, bounded depth (no extension types)."""
    if depth > MAX_OPAQUE_DEPTH:
        raise ProtocolError("mistyped-field", f"{path} nests deeper than {MAX_OPAQUE_DEPTH} levels")
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, list):
        return [_check_opaque(v, f"{path}[]", depth + 1) for v in value]
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise ProtocolError("mistyped-field", f"{path} has a non-text map key")
        return {k: _check_opaque(v, f"{path}.{k}", depth + 1) for k, v in value.items()}
    raise ProtocolError("mistyped-field", f"{path} holds an unsupported {type(value).__name__}")


Converter = Callable[[Any, str], Any]
"""Checks one decoded value against a type hint and returns it typed; ``path`` names it in errors."""
_CONVERTERS: dict[Any, Converter] = {}
_PLANS: dict[type, tuple[tuple[str, ...], frozenset[str], tuple[Converter, ...]]] = {}


def _converter(hint: Any) -> Converter:
    """The converter of ``hint``, built once per hint: a message's shape is read from its type hints
    the first time one arrives, not for every value of every message (docs/node.md, "CPU per frame")."""
    converter = _CONVERTERS.get(hint)
    if converter is None:
        converter = _CONVERTERS[hint] = _make_converter(hint)
    return converter


def _make_converter(hint: Any) -> Converter:
    if hint is Any:
        return _check_opaque
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        nullable = any(option is type(None) for option in get_args(hint))
        options = tuple(_converter(o) for o in get_args(hint) if o is not type(None))

        def union(value: Any, path: str) -> Any:
            if nullable and value is None:
                return None
            errors = []
            for option in options:
                try:
                    return option(value, path)
                except ProtocolError as exc:
                    errors.append(exc)
            raise errors[0] if errors else ProtocolError("mistyped-field", f"{path} must not be null")

        return union
    if origin in (list, tuple):
        (item_hint, *_) = get_args(hint)
        item = _converter(item_hint)
        as_tuple = origin is tuple

        def sequence(value: Any, path: str) -> Any:
            if not isinstance(value, list):
                raise ProtocolError("mistyped-field", f"{path} must be a list")
            items = [item(v, f"{path}[{i}]") for i, v in enumerate(value)]
            return tuple(items) if as_tuple else items

        return sequence
    if origin is dict:
        key_hint, item_hint = get_args(hint)
        key_of, item_of = _converter(key_hint), _converter(item_hint)

        def mapping(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise ProtocolError("mistyped-field", f"{path} must be a map")
            return {key_of(k, f"{path} key"): item_of(v, f"{path}.{k}") for k, v in value.items()}

        return mapping
    if isinstance(hint, type) and is_dataclass(hint):
        return lambda value, path: _build(hint, value, path)
    ok: Callable[[Any], bool]
    if hint is bool:
        ok = lambda value: isinstance(value, bool)  # noqa: E731
    elif hint is int:
        ok = lambda value: type(value) is int  # noqa: E731
    elif hint is float:
        ok = lambda value: type(value) in (int, float)  # noqa: E731
    else:
        ok = lambda value: type(value) is hint  # noqa: E731
    name = getattr(hint, "__name__", hint)

    def scalar(value: Any, path: str) -> Any:
        if not ok(value):
            raise ProtocolError("mistyped-field", f"{path} must be {name}, got {type(value).__name__}")
        return value

    return scalar


def _plan(cls: type) -> tuple[tuple[str, ...], frozenset[str], tuple[Converter, ...]]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = _hints(cls)
        names = tuple(f.name for f in fields(cls))
        plan = _PLANS[cls] = (names, frozenset(names), tuple(_converter(hints[n]) for n in names))
    return plan


def _build(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise ProtocolError("mistyped-field", f"{path} must be a map")
    if not all(isinstance(key, str) for key in data):  # msgpack allows bytes keys; mixed with text they do not sort
        raise ProtocolError("mistyped-field", f"{path} has a field name that is not text")
    names, name_set, converters = _plan(cls)
    if data.keys() != name_set:
        extra = sorted(set(data) - name_set)
        if extra:
            raise ProtocolError("extra-field", f"{path} has unexpected field(s) {', '.join(map(str, extra))}")
        missing = [n for n in names if n not in data]
        raise ProtocolError("missing-field", f"{path} lacks field(s) {', '.join(missing)}")
    return cls(**{n: convert(data[n], f"{path}.{n}") for n, convert in zip(names, converters, strict=True)})


_TYPE_KEY = msgpack.packb("type")


def peek_message_type(body: bytes) -> str:
    """The ``type`` of a frame body, skipping the other values unbuilt, so rate limits can pick a bucket
    before the body is decoded. Only a hint: ``decode_message`` still checks everything.

    Raises ``ProtocolError`` (``malformed-frame``, ``unknown-message-type``).
    """
    # the layout this project's encoder writes (a small map whose first key is "type", a short text
    # value) read from its bytes; any other body through msgpack's own reader
    if len(body) > 6 and 0x80 < body[0] <= 0x8F and body[1:6] == _TYPE_KEY and 0xA0 <= body[6] <= 0xBF:
        end = 7 + (body[6] & 0x1F)
        if len(body) >= end:
            try:
                return body[7:end].decode()
            except UnicodeDecodeError:
                pass
    return _peek_with_msgpack(body)


def _peek_with_msgpack(body: bytes) -> str:
    """``peek_message_type`` of any body, through msgpack's reader."""
    unpacker = msgpack.Unpacker(raw=False, ext_hook=_reject_ext, timestamp=0)
    unpacker.feed(body)
    try:
        for _ in range(unpacker.read_map_header()):
            if unpacker.unpack() == "type":
                kind = unpacker.unpack()
                if isinstance(kind, str):
                    return kind
                break
            unpacker.skip()
    except ProtocolError:
        raise
    except (ValueError, TypeError, msgpack.exceptions.UnpackException) as exc:
        raise ProtocolError("malformed-frame", f"the frame body is not a msgpack map ({type(exc).__name__})") from None
    raise ProtocolError("unknown-message-type", "the frame body has no text 'type' field")


def decode_message(body: bytes, registry: dict[str, type[Message]] | None = None) -> Message:
    """Strictly decode one frame body (from a peer) into its registered message type (from ``registry``,
    else every registered type).

    Raises ``ProtocolError``: ``malformed-frame``, ``unknown-message-type``, ``missing-field``,
    ``extra-field`` or ``mistyped-field``.
    """
    data = _unpack(body)
    if not isinstance(data, dict):
        raise ProtocolError("malformed-frame", "a frame body must be a msgpack map")
    kind = data.pop("type", None)
    table = REGISTRY if registry is None else registry
    if not isinstance(kind, str) or kind not in table:
        raise ProtocolError("unknown-message-type", f"unknown message type {kind!r}"[:200])
    cls = table[kind]
    try:  # the compiled plan of the well-formed case; on any doubt the reference below names the error
        built: Message = plans.decoder(cls, MAX_OPAQUE_DEPTH)(data)
    except plans.Unplanned:
        built = _build(cls, data, kind)
    return built
