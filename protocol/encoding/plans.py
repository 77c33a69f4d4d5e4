"""Compiled per-class plans for the wire's hot path: a decoder of the well-formed case and an encoder.

Why: a racer with 7 peers decodes about seven ``race-inputs`` a frame, each carrying several inputs,
and encodes as many (docs/node.md, "CPU per frame"). The reference decoder (``wire._build``) calls one
converter closure per value and formats the path of every value it checks (``race-inputs.inputs[3]
.frame``), for the sake of an error that almost never comes. A plan is generated once per class as
Python source with the type checks inline and no paths. It never raises a peer's error itself: on any
doubt (a missing, extra or mistyped field, a map key that is not text, anything deeper than usual) it
raises ``Unplanned``, and the caller runs the reference decoder, which raises the exact coded error it
always did. So a plan accepts a subset of what the reference accepts and builds an equal object, and an
encoder builds the same map, so the same bytes (``tests/protocol/encoding/test_plans.py`` holds both to
that on every registered message type and on arbitrary bodies).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any, get_args, get_origin, get_type_hints


class Unplanned(Exception):
    """A plan declines a value: the reference decoder decides (and names the peer's error)."""


Decoder = Callable[[Any], Any]
Encoder = Callable[[Any], Any]
_SCALARS = frozenset({type(None), bool, int, float, str, bytes})
_INLINE = {int: "type({v}) is not int", bool: "type({v}) is not bool", str: "type({v}) is not str",
           bytes: "type({v}) is not bytes", float: "type({v}) is not int and type({v}) is not float"}
_DECODERS: dict[type, Decoder] = {}
_ENCODERS: dict[tuple[type, str | None], Encoder] = {}


def opaque_ok(value: Any, max_depth: int, depth: int = 0) -> bool:
    """Whether the reference's check of an ``Any`` field (``wire._check_opaque``) accepts ``value``:
    plain data only, text map keys, at most ``max_depth`` levels."""
    if depth > max_depth:
        return False
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is list:
        for item in value:
            if not opaque_ok(item, max_depth, depth + 1):
                return False
        return True
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not opaque_ok(item, max_depth, depth + 1):
                return False
        return True
    return False


def decoder(cls: type, max_depth: int) -> Decoder:
    """The compiled decoder of dataclass ``cls`` (built the first time): a decoded msgpack map in, the
    instance out, or ``Unplanned``."""
    plan = _DECODERS.get(cls)
    if plan is None:
        plan = _DECODERS[cls] = _compile_decoder(cls, max_depth)
    return plan


def _compile_decoder(cls: type, max_depth: int) -> Decoder:
    hints = get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    namespace: dict[str, Any] = {"CLS": cls, "NAMES": frozenset(names), "Unplanned": Unplanned}
    lines = ["def decode(data):", "    if type(data) is not dict or data.keys() != NAMES:", "        raise Unplanned"]
    for index, name in enumerate(names):
        var, hint = f"v{index}", hints[name]
        lines.append(f"    {var} = data[{name!r}]")
        if hint in _INLINE:
            lines.append(f"    if {_INLINE[hint].format(v=var)}:")
            lines.append("        raise Unplanned")
        else:
            namespace[f"C{index}"] = _converter(hint, max_depth)
            lines.append(f"    {var} = C{index}({var})")
    if _fields_only(cls):
        namespace["NEW"], namespace["SET"] = object.__new__, object.__setattr__
        lines.append("    built = NEW(CLS)")
        lines.append(f"    SET(built, '__dict__', {{{', '.join(f'{name!r}: v{index}' for index, name in enumerate(names))}}})")
        lines.append("    return built")
    else:
        lines.append(f"    return CLS({', '.join(f'{name}=v{index}' for index, name in enumerate(names))})")
    exec("\n".join(lines), namespace)  # noqa: S102 - source built above from the class's own field names
    compiled: Decoder = namespace["decode"]
    return compiled


def _fields_only(cls: type) -> bool:
    """Whether an instance of dataclass ``cls`` is exactly its fields' values, so a plan may build it by
    giving it its attribute dict at once: every field is set by ``__init__`` and nothing else happens
    there (no ``__post_init__``, no slots). A frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``, which costs about three times as much for a 4-field input (a racer builds
    some twenty a frame with 7 peers); the object built is equal either way (``test_plans.py``)."""
    return (not hasattr(cls, "__post_init__") and not any("__slots__" in vars(base) for base in cls.__mro__[:-1])
            and all(f.init for f in fields(cls)))


def _converter(hint: Any, max_depth: int) -> Decoder:
    """A closure checking one value against ``hint`` exactly as ``wire._make_converter`` does, minus the
    error: ``Unplanned`` instead."""
    if hint is Any:
        def opaque(value: Any) -> Any:
            if not opaque_ok(value, max_depth):
                raise Unplanned
            return value

        return opaque
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        nullable = any(option is type(None) for option in get_args(hint))
        options = tuple(_converter(o, max_depth) for o in get_args(hint) if o is not type(None))

        def union(value: Any) -> Any:
            if nullable and value is None:
                return None
            for option in options:
                try:
                    return option(value)
                except Unplanned:
                    pass
            raise Unplanned

        return union
    if origin in (list, tuple):
        (item_hint, *_) = get_args(hint)
        item = _converter(item_hint, max_depth)
        as_tuple = origin is tuple

        def sequence(value: Any) -> Any:
            if type(value) is not list:
                raise Unplanned
            items = [item(v) for v in value]
            return tuple(items) if as_tuple else items

        return sequence
    if origin is dict:
        key_hint, item_hint = get_args(hint)
        key_of, item_of = _converter(key_hint, max_depth), _converter(item_hint, max_depth)

        def mapping(value: Any) -> Any:
            if type(value) is not dict:
                raise Unplanned
            return {key_of(k): item_of(v) for k, v in value.items()}

        return mapping
    if isinstance(hint, type) and is_dataclass(hint):
        return decoder(hint, max_depth)
    exact = float if hint is float else hint

    def scalar(value: Any) -> Any:
        kind = type(value)
        if kind is not exact and not (exact is float and kind is int):
            raise Unplanned
        return value

    return scalar


def encoder(cls: type, type_name: str | None, generic: Encoder) -> Encoder:
    """The compiled encoder of dataclass ``cls``: an instance in, the map ``generic`` (``wire._to_plain``)
    would build out, with ``type_name`` first when given (a message's body). Fields whose hint is a
    scalar are taken as they are, dataclass-typed fields and lists of them go through their own compiled
    encoder when the value is of that exact class, anything else through ``generic``."""
    key = (cls, type_name)
    plan = _ENCODERS.get(key)
    if plan is None:
        plan = _ENCODERS[key] = _compile_encoder(cls, type_name, generic)
    return plan


def _compile_encoder(cls: type, type_name: str | None, generic: Encoder) -> Encoder:
    hints = get_type_hints(cls)
    names = [f.name for f in fields(cls)]
    namespace: dict[str, Any] = {"GENERIC": generic, "TYPE": type_name}
    items = ['"type": TYPE'] if type_name is not None else []
    for index, name in enumerate(names):
        hint, value = hints[name], f"m.{name}"
        if hint in _INLINE:
            items.append(f"{name!r}: {value}")
            continue
        origin = get_origin(hint)
        (item_hint, *_) = get_args(hint) or (None,)
        if isinstance(hint, type) and is_dataclass(hint):
            namespace[f"K{index}"], namespace[f"E{index}"] = hint, encoder(hint, None, generic)
            items.append(f"{name!r}: E{index}({value}) if type({value}) is K{index} else GENERIC({value})")
        elif origin in (list, tuple) and isinstance(item_hint, type) and is_dataclass(item_hint):
            namespace[f"K{index}"], namespace[f"E{index}"] = item_hint, encoder(item_hint, None, generic)
            items.append(f"{name!r}: [E{index}(x) if type(x) is K{index} else GENERIC(x) for x in {value}]"
                         f" if type({value}) is list or type({value}) is tuple else GENERIC({value})")
        else:
            items.append(f"{name!r}: GENERIC({value})")
    source = f"def encode(m):\n    return {{{', '.join(items)}}}"
    exec(source, namespace)  # noqa: S102 - source built above from the class's own field names
    compiled: Encoder = namespace["encode"]
    return compiled
