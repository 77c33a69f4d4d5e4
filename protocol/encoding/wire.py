"""Framing and strict message decoding for every link: ``u32 big-endian length ‖ msgpack body``.

The length is checked against the channel's limit before any body byte is buffered or decoded. Bodies
decode into typed messages: an unknown type, a missing, mistyped or extra field is a protocol violation
with its own code (``ProtocolError``: what a peer sent). Framing a body of this node's own that is too
large, or declaring a message type twice, is a ``LocalError``.

Messages and the records nested in them are msgspec structs, and msgspec's typed msgpack decoder (in C)
is the one decoder of the wire: it checks every field of every record against its annotation while it
reads the bytes, and builds the objects as it goes, in less CPU than msgpack's own reader takes to build
plain maps from the same bytes (``benchmarks/decoder_bench.py``). What it does not check itself, that
the values of ``Any`` fields are plain data, is checked after it (``plain_data``); its refusals are
translated into this module's codes.
"""

from __future__ import annotations

import dataclasses
import re
import struct
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Union, dataclass_transform

import msgpack
import msgspec

from protocol.encoding.plain_data import NotPlain, plain_data_check
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


class _DataclassFields:
    """The ``__dataclass_fields__`` of a wire struct class: the field table of a frozen dataclass with the
    same fields and annotations, made by ``dataclasses`` itself the first time it is asked for."""

    def __init__(self) -> None:
        self._tables: dict[type, dict[str, dataclasses.Field[Any]]] = {}

    def __get__(self, instance: object, owner: type) -> dict[str, dataclasses.Field[Any]]:
        table = self._tables.get(owner)
        if table is None:
            annotations: dict[str, Any] = {}
            for base in reversed(owner.__mro__):
                annotations.update(vars(base).get("__annotations__", {}))
            names = getattr(owner, "__struct_fields__", ())
            twin = dataclasses.make_dataclass(owner.__name__, [(name, annotations[name]) for name in names], frozen=True)
            table = self._tables[owner] = {field.name: field for field in dataclasses.fields(twin)}
        return table


@dataclass_transform(frozen_default=True)  # for type checkers: every subclass is frozen, as it is at run time
class _WireStruct(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A frozen struct that the decoder holds to its fields exactly: each must be present with its
    annotated type, and no other key may be.

    It also answers to the dataclass protocol (``__dataclass_fields__``), so ``dataclasses.fields``,
    ``replace`` and ``asdict`` work on messages and records as on the frozen dataclasses every other
    typed value of the node is."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]] = _DataclassFields()  # type: ignore[assignment]


class Message(_WireStruct, tag_field="type"):
    """Base of every wire message: the body's keys are ``type`` and then its fields, in order. Subclasses
    are declared with ``@message("type-name")`` and built by keyword or position."""

    TYPE: ClassVar[str] = ""


class Record(_WireStruct):
    """Base of a record nested in messages (a race input, a room member): held to its fields exactly as
    a message is, without a ``type`` of its own."""


M = TypeVar("M", bound=Message)
REGISTRY: dict[str, type[Message]] = {}
"""Every message type by its wire ``type``, as ``@message`` registers them."""


def message(type_name: str) -> Callable[[type[M]], type[M]]:
    """Register a ``Message`` subclass as the message with wire type ``type_name``.

    The class returned is the declared one with ``type_name`` as its wire tag (a struct's tag is fixed
    when its class is made, so it is a subclass that only adds the tag): the ``type`` key it encodes
    first and that ``decode_message`` picks it by.

    Raises ``LocalError`` (``message-type-duplicate``) when the name is already taken (a bug: two
    message classes would claim the same frames).
    """

    def wrap(cls: type[M]) -> type[M]:
        if type_name in REGISTRY:
            raise LocalError("message-type-duplicate", f"message type {type_name!r} registered twice")
        namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
                     "TYPE": type_name}
        tagged = typing.cast(type[M], types.new_class(cls.__name__, (cls,), {"tag": type_name}, lambda ns: ns.update(namespace)))
        REGISTRY[type_name] = tagged
        global _reader
        _reader = None  # the decoder's union gains the type
        return tagged

    return wrap


_ENCODER = msgspec.msgpack.Encoder()


def encode_message(msg: Message) -> bytes:
    """The msgpack body of ``msg``: a map of its ``type`` and then every field in declaration order
    (nested records as maps)."""
    return _ENCODER.encode(msg)


# ---- decoding -------------------------------------------------------------------------------------


class _Unregistered(Message, tag=""):
    """Never registered: it keeps the decoder's union at two types or more, where msgspec requires the
    ``type`` key (a union of one type is that type, which would accept a body without it)."""


def _reject_ext(code: int, data: bytes | memoryview) -> Any:
    raise ProtocolError("mistyped-field", f"msgpack extension type {code} is not allowed")


class _Reader:
    """msgspec's decoder of every registered type (one tagged union) and each type's check of its
    ``Any`` values (None: it has none), made together the first time a body is decoded after a
    registration."""

    def __init__(self) -> None:
        kinds = (_Unregistered, *REGISTRY.values())
        self.decode = msgspec.msgpack.Decoder(Union[kinds], ext_hook=_reject_ext).decode  # noqa: UP007 - of a tuple
        self.checks = {kind: plain_data_check(kind) for kind in kinds}


_reader: _Reader | None = None


def decode_message(body: bytes, registry: dict[str, type[Message]] | None = None) -> Message:
    """Strictly decode one frame body (from a peer) into its registered message type (from ``registry``,
    else every registered type).

    Raises ``ProtocolError``: ``malformed-frame``, ``unknown-message-type``, ``missing-field``,
    ``extra-field`` or ``mistyped-field``.
    """
    global _reader
    reader = _reader or (_reader := _Reader())
    table = REGISTRY if registry is None else registry
    try:
        decoded: Message = reader.decode(body)
    except msgspec.ValidationError as exc:
        raise _refusal(body, table, str(exc)) from None
    except msgspec.DecodeError as exc:
        raise ProtocolError("malformed-frame", f"the frame body is not valid msgpack ({exc})") from None
    except RecursionError:  # msgspec's C reader counts its depth against the interpreter's limit
        raise ProtocolError("malformed-frame", "the frame body nests deeper than the decoder reads") from None
    kind = type(decoded)
    if table.get(kind.TYPE) is not kind:
        raise ProtocolError("unknown-message-type", f"unknown message type {kind.TYPE!r}"[:200])
    check = reader.checks[kind]
    if check is not None:
        try:
            check(decoded)
        except NotPlain as exc:
            raise ProtocolError("mistyped-field", f"{kind.TYPE}{''.join(reversed(exc.path))} {exc.reason}") from None
    return decoded


_WHERE = re.compile(r"^(?P<what>.*?)(?: - at `(?P<where>.*)`)?$", re.DOTALL)
_FIELD = re.compile(r"^Object (?P<how>missing required|contains unknown) field `(?P<name>.*)`$", re.DOTALL)
_EXPECTED = re.compile(r"^Expected `(?P<expected>[^`]*)`, got `(?P<got>[^`]*)`$", re.DOTALL)
_WORDS = {"object": "a map", "array": "a list", "null": "nil", "None": "nil"}


def _refusal(body: bytes, table: dict[str, type[Message]], text: str) -> ProtocolError:
    """The coded error of msgspec's refusal ``text`` (``<what> - at `$.path```) of ``body``: a type this
    ``table`` does not hold comes first, as the type is what a reader looks at first."""
    try:
        kind = peek_message_type(body)
    except ProtocolError as exc:  # not a map, or no text type in it
        return exc
    if kind not in table:
        return ProtocolError("unknown-message-type", f"unknown message type {kind!r}"[:200])
    parts = _WHERE.match(text)
    assert parts is not None  # the pattern matches every text
    what, where = parts["what"], parts["where"] or "$"
    if where.startswith("key` in `"):
        return ProtocolError("mistyped-field", f"{kind}{where[len('key` in `$'):]} has a field name that is not text")
    path = f"{kind}{where[1:]}"
    field = _FIELD.match(what)
    if field is not None and field["how"] == "missing required":
        return ProtocolError("missing-field", f"{path} lacks field {field['name']}")
    if field is not None:
        return ProtocolError("extra-field", f"{path} has unexpected field {field['name']}")
    expected = _EXPECTED.match(what)
    if expected is not None:
        wanted, got = (" | ".join(_WORDS.get(w, w) for w in expected[key].split(" | ")) for key in ("expected", "got"))
        return ProtocolError("mistyped-field", f"{path} must be {wanted}, got {got}")
    return ProtocolError("mistyped-field", f"{path}: {what}")


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
