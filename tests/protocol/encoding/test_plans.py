"""The compiled plans agree with the reference coder on every registered message type: the same bytes
out, the same object in, and nothing accepted that the reference refuses."""

import importlib
import pkgutil
import types
import typing
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, get_args, get_origin, get_type_hints

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import protocol
from protocol.encoding import plans
from protocol.encoding.wire import MAX_OPAQUE_DEPTH, REGISTRY, _build, _to_plain, decode_message, encode_message
from protocol.errors import ProtocolError

for _module in pkgutil.walk_packages(protocol.__path__, "protocol."):  # every message class registers itself
    importlib.import_module(_module.name)
MESSAGE_TYPES = sorted(REGISTRY)

plain_data = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of ``hint`` as a message field holds them."""
    if hint is Any:
        return plain_data
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(st.none() if o is type(None) else strategy(o) for o in get_args(hint)))
    if origin in (list, tuple):
        items = st.lists(strategy(get_args(hint)[0]), max_size=3)
        return items.map(tuple) if origin is tuple else items
    if origin is dict:
        key, item = get_args(hint)
        return st.dictionaries(strategy(key), strategy(item), max_size=3)
    if is_dataclass(hint):
        hints = get_type_hints(hint)
        return st.builds(hint, **{f.name: strategy(hints[f.name]) for f in fields(hint)})
    return {bool: st.booleans(), int: st.integers(-(2**63), 2**64 - 1), float: st.floats(allow_nan=False),
            str: st.text(max_size=8), bytes: st.binary(max_size=8)}[hint]


def reference_body(msg: Any) -> bytes:
    body = {"type": msg.TYPE}
    body.update(_to_plain(msg))
    return msgpack.packb(body, use_bin_type=True)


@pytest.mark.parametrize("type_name", MESSAGE_TYPES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_coder_matches_the_reference(type_name, data):
    msg = data.draw(strategy(REGISTRY[type_name]))
    body = encode_message(msg)
    assert body == reference_body(msg)
    decoded = decode_message(body)
    fields_ = msgpack.unpackb(body, raw=False)
    del fields_["type"]
    expected = _build(REGISTRY[type_name], fields_, type_name)
    assert decoded == expected
    assert vars(decoded) == vars(expected)  # built with its attribute dict at once: exactly the fields


def test_a_plan_builds_a_class_that_checks_itself_through_its_init():
    """A dataclass with a ``__post_init__`` is built by calling it, so its own checks still run (a plan
    gives the others their attribute dict at once)."""
    checked = []

    @dataclass(frozen=True)
    class Checked:
        frame: int

        def __post_init__(self) -> None:
            checked.append(self.frame)

    @dataclass(frozen=True)
    class Plain:
        frame: int

    assert plans.decoder(Checked, MAX_OPAQUE_DEPTH)({"frame": 7}) == Checked(7)
    assert checked == [7, 7]
    built = plans.decoder(Plain, MAX_OPAQUE_DEPTH)({"frame": 9})
    assert built == Plain(9) and vars(built) == {"frame": 9}


def mutations(valid: dict) -> st.SearchStrategy[dict]:
    """``valid`` with one field dropped, added, or replaced by arbitrary plain data (nested too)."""
    key = st.sampled_from(sorted(valid))
    return st.one_of(
        key.map(lambda k: {n: v for n, v in valid.items() if n != k}),
        st.tuples(st.text(max_size=4) | st.binary(max_size=2), plain_data).map(lambda kv: {**valid, kv[0]: kv[1]}),
        st.tuples(key, plain_data).map(lambda kv: {**valid, kv[0]: kv[1]}),
        st.tuples(key, plain_data).map(lambda kv: {**valid, kv[0]: [kv[1]] if isinstance(valid[kv[0]], list) else kv[1]}),
    )


@pytest.mark.parametrize("type_name", MESSAGE_TYPES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_plan_accepts_nothing_the_reference_refuses(type_name, data):
    cls = REGISTRY[type_name]
    valid = msgpack.unpackb(encode_message(data.draw(strategy(cls))), raw=False)
    del valid["type"]
    body = data.draw(mutations(valid) if valid else st.just(valid))
    try:
        expected = _build(cls, body, type_name)
    except ProtocolError:
        expected = None
    try:
        planned = plans.decoder(cls, MAX_OPAQUE_DEPTH)(body)
    except plans.Unplanned:
        return
    assert expected is not None, "the plan accepted a body the reference refuses"
    assert planned == expected


def test_opaque_depth_limit_is_the_reference_s():
    nested: Any = 1
    for _ in range(MAX_OPAQUE_DEPTH):
        nested = [nested]
    assert plans.opaque_ok(nested, MAX_OPAQUE_DEPTH)
    assert not plans.opaque_ok([nested], MAX_OPAQUE_DEPTH)
    assert not plans.opaque_ok({1: 2}, MAX_OPAQUE_DEPTH)
    assert not plans.opaque_ok(msgpack.ExtType(1, b""), MAX_OPAQUE_DEPTH)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40) | st.tuples(plain_data, st.dictionaries(st.text(max_size=6), plain_data, max_size=3)).map(
    lambda kd: msgpack.packb({"type": kd[0], **kd[1]}, use_bin_type=True)).map(lambda b: b[:40]))
def test_peeking_at_the_type_from_the_bytes_agrees_with_msgpack(body):
    from protocol.encoding.wire import _peek_with_msgpack, peek_message_type

    try:
        expected: object = _peek_with_msgpack(body)
    except ProtocolError as exc:
        expected = exc.code
    try:
        assert peek_message_type(body) == expected
    except ProtocolError as exc:
        assert exc.code == expected
