"""Every registered message type through the wire's one decoder, against a plain model of the wire's rules.

The model (``conforms``) reads the rules off the annotations in the simplest way: a body is valid when it
is a map whose ``type`` names a registered message and whose other keys are exactly that message's
fields, each holding exactly its annotated type (``bool`` is not an ``int``, text is not bytes), records
nested as maps held to their fields the same way (or, for a record declared ``array_like``, as a list of
its fields in order), tuples as lists of exactly their items, and ``Any`` values plain data (nil, bool,
int, float, text, bytes, lists and text-keyed maps of them, at most 16 levels). The decoder must accept exactly the
valid bodies, give back exactly what they hold, and answer every other body with a coded
``ProtocolError``, never another exception."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import types
import typing
from dataclasses import asdict, fields, replace
from typing import Any

import msgpack
import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import protocol
from protocol.encoding.plain_data import MAX_OPAQUE_DEPTH
from protocol.encoding.wire import REGISTRY, Message, decode_message, encode_message
from protocol.errors import PeerError, ProtocolError

for _module in pkgutil.walk_packages(protocol.__path__, "protocol."):  # every message class registers itself
    importlib.import_module(_module.name)
importlib.import_module("open4wd_node.net.link_rules")  # the link's own keepalive messages
MESSAGE_TYPES = sorted(name for name, cls in REGISTRY.items() if cls.__module__.startswith(("protocol.", "open4wd_node.")))
WIRE_CODES = {"malformed-frame", "unknown-message-type", "missing-field", "extra-field", "mistyped-field"}
SCALARS = (type(None), bool, int, float, str, bytes)


# ---- the model ------------------------------------------------------------------------------------

def plain(value: Any, depth: int = 0) -> bool:
    if type(value) in SCALARS:
        return True
    if depth >= MAX_OPAQUE_DEPTH:
        return False
    if type(value) is list:
        return all(plain(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(type(key) is str and plain(item, depth + 1) for key, item in value.items())
    return False


def wire_type(hint: Any) -> Any:
    """``hint`` as the wire sees it: a ``NewType`` (``PeerId``) is its underlying type."""
    while isinstance(hint, typing.NewType):
        hint = hint.__supertype__
    return hint


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as msgpack reads it: maps, lists, scalars) is a valid wire value of ``hint``."""
    hint = wire_type(hint)
    if hint is Any:
        return plain(value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(value is None if option is type(None) else conforms(value, option) for option in args)
    if origin is list:
        return type(value) is list and all(conforms(item, args[0]) for item in value)
    if origin is tuple:
        return type(value) is list and len(value) == len(args) and all(map(conforms, value, args))
    if origin is dict:
        return type(value) is dict and all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        declared = {field.name: field.type for field in msgspec.structs.fields(hint)}
        if hint.__struct_config__.array_like:
            return type(value) is list and len(value) == len(declared) and all(map(conforms, value, declared.values()))
        return (type(value) is dict and set(value) == set(declared)
                and all(conforms(value[name], kind) for name, kind in declared.items()))
    return type(value) is hint


def valid_body(data: Any) -> bool:
    return (type(data) is dict and type(data.get("type")) is str and data["type"] in REGISTRY
            and conforms({k: v for k, v in data.items() if k != "type"}, REGISTRY[data["type"]]))


def to_plain(value: Any) -> Any:
    """A decoded value as msgpack reads its bytes: records as maps of their fields, in order."""
    if isinstance(value, msgspec.Struct):
        items = {field.name: to_plain(getattr(value, field.name)) for field in msgspec.structs.fields(value)}
        return list(items.values()) if value.__struct_config__.array_like else items
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: to_plain(item) for key, item in value.items()}
    return value


def wire_map(msg: Message) -> dict[str, Any]:
    return {"type": msg.TYPE, **to_plain(msg)}


def same(a: Any, b: Any) -> bool:
    """``a == b``, except that a NaN equals a NaN: bytes changed at random can spell one, and both sides
    then hold it."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def read(body: bytes) -> Any:
    """``body`` as msgpack reads it, extensions and timestamps kept as objects the model refuses."""
    return msgpack.unpackb(body, raw=False, strict_map_key=False, timestamp=0)


# ---- values ---------------------------------------------------------------------------------------

INTS = st.integers(-(2**63), 2**64 - 1)
plain_data = st.recursive(
    st.none() | st.booleans() | INTS | st.floats(allow_nan=False) | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
"""What an ``Any`` field holds when it is valid."""


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


wild_data = st.recursive(
    plain_data | st.builds(msgpack.ExtType, st.integers(0, 127), st.binary(max_size=4))
    | st.builds(msgpack.Timestamp, st.integers(0, 2**34 - 1))
    | st.sampled_from([nested(MAX_OPAQUE_DEPTH), nested(MAX_OPAQUE_DEPTH + 1)]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4) | st.binary(max_size=2) | INTS, inner,
                                                                max_size=3),
    max_leaves=8,
)
"""Anything msgpack can carry: plain data, extensions, timestamps, non-text keys, nesting at and past the limit."""


def strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Valid values of ``hint`` as a message holds them."""
    hint = wire_type(hint)
    if hint is Any:
        return plain_data
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(st.none() if option is type(None) else strategy(option) for option in args))
    if origin is list:
        return st.lists(strategy(args[0]), max_size=3)
    if origin is tuple:
        return st.tuples(*(strategy(a) for a in args))
    if origin is dict:
        return st.dictionaries(strategy(args[0]), strategy(args[1]), max_size=3)
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return st.builds(hint, **{field.name: strategy(field.type) for field in msgspec.structs.fields(hint)})
    return {bool: st.booleans(), int: INTS, str: st.text(max_size=8), bytes: st.binary(max_size=8)}[hint]


def mutations(valid: dict[str, Any]) -> st.SearchStrategy[Any]:
    """``valid`` (a body's map) with one change, at its top level or inside one of its values."""
    key = st.sampled_from(sorted(valid))

    def inside(value: Any, path: tuple[Any, ...]) -> Any:  # (indexes…, replacement): one item replaced, deep down
        *indexes, replacement = path
        if indexes and type(value) is list and value:
            index = indexes[0] % len(value)
            return [inside(v, path[1:]) if i == index else v for i, v in enumerate(value)]
        if indexes and type(value) is dict and value:
            name = sorted(value, key=repr)[indexes[0] % len(value)]
            return {k: inside(v, path[1:]) if k == name else v for k, v in value.items()}
        return replacement

    path = st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), wild_data)
    return st.one_of(
        key.map(lambda k: {n: v for n, v in valid.items() if n != k}),  # a field (or the type) dropped
        st.tuples(st.text(max_size=6) | st.binary(max_size=3) | INTS, wild_data).map(lambda kv: {**valid, kv[0]: kv[1]}),
        st.tuples(key, wild_data).map(lambda kv: {**valid, kv[0]: kv[1]}),  # a field replaced by anything
        st.tuples(key, path).map(lambda kp: {**valid, kp[0]: inside(valid[kp[0]], kp[1])}),  # deep inside
        st.sampled_from(MESSAGE_TYPES).map(lambda name: {**valid, "type": name}),  # another type's name
        wild_data,  # not a message at all
    )


# ---- the properties -------------------------------------------------------------------------------

@pytest.mark.parametrize("type_name", MESSAGE_TYPES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_message_type_round_trips_in_the_wire_s_own_bytes(type_name: str, data: st.DataObject) -> None:
    """A message encodes as the map of its type and then its fields in declaration order, exactly the
    bytes msgpack writes for that map, and decodes back to an equal message of the same class."""
    msg = data.draw(strategy(REGISTRY[type_name]))
    body = encode_message(msg)
    assert body == msgpack.packb(wire_map(msg), use_bin_type=True)
    assert valid_body(read(body))
    decoded = decode_message(body)
    assert type(decoded) is REGISTRY[type_name] and decoded == msg and wire_map(decoded) == wire_map(msg)


@pytest.mark.parametrize("type_name", MESSAGE_TYPES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_mutated_body_decodes_as_the_model_says_or_gets_a_coded_refusal(type_name: str, data: st.DataObject) -> None:
    """A change to a valid body is accepted exactly when the model finds the result valid, and then it
    decodes to the message that holds exactly what the body holds; otherwise the decoder refuses it
    with one of its codes."""
    valid = read(encode_message(data.draw(strategy(REGISTRY[type_name]))))
    mutated = data.draw(mutations(valid))
    try:
        body = msgpack.packb(mutated, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):  # e.g. an int key beside a bytes key that msgpack orders
        assume(False)
        raise
    try:
        decoded = decode_message(body)
    except ProtocolError as exc:
        assert exc.code in WIRE_CODES and isinstance(exc, PeerError)
        assert not valid_body(read(body)), f"refused a valid body: {exc}"
        return
    assert valid_body(read(body)), f"accepted an invalid body as {decoded!r}"
    assert wire_map(decoded) == read(body)


@pytest.mark.parametrize("type_name", MESSAGE_TYPES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cut=st.integers(0, 400), noise=st.binary(max_size=12), drop=st.integers(0, 12))
def test_bytes_changed_anywhere_give_a_valid_message_or_a_coded_refusal(type_name: str, data: st.DataObject, cut: int,
                                                                         noise: bytes, drop: int) -> None:
    """Bytes inserted, cut or overwritten anywhere in a valid body never raise anything but a coded
    ``ProtocolError``; what is accepted is a registered message the model finds valid."""
    body = encode_message(data.draw(strategy(REGISTRY[type_name])))
    mutated = body[:cut] + noise + body[cut + drop:]
    try:
        decoded = decode_message(mutated)
    except ProtocolError as exc:
        assert exc.code in WIRE_CODES
        return
    assert type(decoded) is REGISTRY[decoded.TYPE] and valid_body(read(mutated)) and same(wire_map(decoded), read(mutated))


# ---- what else a message is -----------------------------------------------------------------------

def test_messages_keep_the_dataclass_protocol_equality_hashing_and_pickling() -> None:
    from protocol.race.messages import InputRecord, InputSpan, RaceChecksum, RaceInput, RaceInputs, RaceRelay, Want

    one = RaceInput(481, [["boost", False]], bytes(32), bytes(64))
    span = InputSpan("", 481, bytes(32), [(1, 1)], bytes(64))
    msg = RaceInputs(ack=480, spans=[span], want=[Want("zPeer", 7)])
    assert [f.name for f in fields(msg)] == ["ack", "spans", "want"] and [f.name for f in fields(RaceInput)][-1] == "signature"
    assert replace(msg, ack=481) == RaceInputs(481, [span], [Want("zPeer", 7)]) and replace(msg, ack=481) != msg
    assert asdict(msg) == {"ack": 480, "spans": [{"owner": "", "frame": 481, "prev": bytes(32), "runs": [(1, 1)],
                                                  "signatures": bytes(64)}], "want": [{"peer": "zPeer", "ack": 7}]}
    assert RaceRelay([InputRecord.of("zPeer", one)]).inputs[0].signed() == one
    checksum = RaceChecksum(120, bytes(32), bytes(64))
    assert hash(checksum) == hash(RaceChecksum(frame=120, hash=bytes(32), signature=bytes(64)))
    assert pickle.loads(pickle.dumps(msg)) == msg and type(pickle.loads(pickle.dumps(msg))) is RaceInputs
    with pytest.raises(AttributeError):
        checksum.frame = 121  # type: ignore[misc]


def test_enums_and_tuples_encode_as_msgpack_writes_their_values() -> None:
    from protocol.race.messages import LeaveReason, RaceLeave
    from protocol.room.messages import CarRotation

    leave = RaceLeave(LeaveReason.DESYNC, bytes(64))
    assert encode_message(leave) == msgpack.packb({"type": "race-leave", "reason": "desync", "signature": bytes(64)})
    rotation = CarRotation((("a", 1), {"k": (1.5, None)}))  # type: ignore[arg-type]
    assert encode_message(rotation) == msgpack.packb({"type": "car-rotation", "carRotation": [["a", 1], {"k": [1.5, None]}]})
