"""The check that the values of ``Any`` fields in a decoded message are plain data: nil, bool, int, float,
text, bytes, and lists and text-keyed maps of them, at most ``MAX_OPAQUE_DEPTH`` levels deep.

msgspec reads an ``Any`` field as any msgpack value: an extension (a timestamp becomes a datetime), a map
whose keys are not text, any depth. Each message type with ``Any`` values gets one check of them, composed
once from its annotations of plain loops: a message's values are checked for every message that arrives,
so the checks make as few calls and objects as they can (most ``Any`` values are short lists of scalars,
a race input's events, which one comparison of their items' types with the scalars' clears).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, get_args, get_origin

import msgspec

MAX_OPAQUE_DEPTH = 16
"""How deep the plain data of an ``Any`` field may nest (lists and maps in lists and maps)."""


class NotPlain(Exception):
    """A value of an ``Any`` field that is not plain data; ``path`` grows as the check unwinds."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


_PLAIN_SCALARS = frozenset({type(None), bool, int, float, str, bytes})
_TEXT = frozenset({str})
Check = Callable[[Any], None]
"""Raises ``NotPlain`` unless the ``Any`` values in a value are plain. A check is only given values that
are true: what is false (nil, 0, an empty list or map) holds nothing that is not plain."""


def _check_plain(value: Any, depth: int = 0) -> None:
    """Raise ``NotPlain`` unless ``value``, ``depth`` levels inside an ``Any`` value, is plain data."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return
    if depth >= MAX_OPAQUE_DEPTH:
        raise NotPlain(f"nests deeper than {MAX_OPAQUE_DEPTH} levels")
    if kind is list:
        _check_plain_items(value, value, depth + 1)
    elif kind is dict:
        if not _TEXT.issuperset(map(type, value)):
            raise NotPlain("has a map key that is not text")
        _check_plain_items(value.values(), value, depth + 1)
    else:
        raise NotPlain(f"holds an unsupported {kind.__name__}")


def _check_plain_items(items: Iterable[Any], container: list[Any] | dict[str, Any], depth: int) -> None:
    """``_check_plain`` of each of ``items``, the items or values of ``container``: their types compared
    with the scalars' at once, and only what is not a scalar looked into (and named when refused)."""
    if _PLAIN_SCALARS.issuperset(map(type, items)):
        return
    for item in items:
        if type(item) not in _PLAIN_SCALARS:
            try:
                _check_plain(item, depth)
            except NotPlain as exc:
                exc.path.append(_place_of(item, container))
                raise


def _place_of(item: Any, container: list[Any] | dict[str, Any]) -> str:
    """The path segment of ``item`` in ``container`` (``[3]``, ``.key``), found when a check refused it."""
    if type(container) is dict:
        return "." + next(key for key, value in container.items() if value is item)
    return f"[{next(index for index, value in enumerate(container) if value is item)}]"


def _check_plain_list(value: list[Any]) -> None:
    """``_check_plain`` of each item of a ``list[Any]``."""
    _check_plain_items(value, value, 0)


def _check_plain_map(value: dict[str, Any]) -> None:
    """``_check_plain`` of each value of a ``dict[str, Any]`` (msgspec has checked the keys)."""
    _check_plain_items(value.values(), value, 0)


def plain_data_check(hint: Any) -> Check | None:
    """The check of the ``Any`` values inside a value of type ``hint`` (a message or record class, a list,
    a map, an optional), or None when ``hint`` holds no ``Any``."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return _check_plain
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        fields = _field_checks(hint)
        return _fields_check(fields) if fields else None
    if origin in (typing.Union, types.UnionType):  # an optional: a check is never given nil (see Check)
        options = [check for option in args if (check := plain_data_check(option)) is not None]
        assert len(options) <= 1, "the wire's unions are optionals of one type (bytes | None)"
        return options[0] if options else None
    if origin is list and args[0] is Any:
        return _check_plain_list
    if origin is dict and args[1] is Any:
        return _check_plain_map
    if origin is list and isinstance(args[0], type) and issubclass(args[0], msgspec.Struct):
        fields = _field_checks(args[0])
        return _records_check(fields) if fields else None
    item = plain_data_check(args[-1]) if origin in (list, dict) else None
    if item is None:
        return None
    return _items_check(item) if origin is list else _values_check(item)


def _field_checks(kind: type[msgspec.Struct]) -> list[tuple[str, Check]]:
    """Each field of struct ``kind`` that holds ``Any`` values, with their check."""
    return [(field.name, check) for field in msgspec.structs.fields(kind)
            if (check := plain_data_check(field.type)) is not None]


def _fields_check(fields: list[tuple[str, Check]]) -> Check:
    def check(value: Any) -> None:
        for name, field_check in fields:
            field = getattr(value, name)
            if field:  # what is false (nil, 0, empty) is plain
                try:
                    field_check(field)
                except NotPlain as exc:
                    exc.path.append(f".{name}")
                    raise

    return check


def _records_check(fields: list[tuple[str, Check]]) -> Check:
    """The check of a list of records: ``_fields_check`` of each, without a call per record, and without a
    loop over the fields when there is one (a race input's events are checked for every input)."""
    if len(fields) > 1:
        each = _fields_check(fields)
        return _items_check(each)
    ((name, field_check),) = fields

    def check(value: list[Any]) -> None:
        for entry in value:
            field = getattr(entry, name)
            if field:
                try:
                    field_check(field)
                except NotPlain as exc:
                    exc.path += (f".{name}", _place_of(entry, value))
                    raise

    return check


def _items_check(item: Check) -> Check:
    def items(value: list[Any]) -> None:
        for entry in value:
            if entry:
                try:
                    item(entry)
                except NotPlain as exc:
                    exc.path.append(_place_of(entry, value))
                    raise

    return items


def _values_check(item: Check) -> Check:
    def values(value: dict[str, Any]) -> None:
        for key, entry in value.items():
            if entry:
                try:
                    item(entry)
                except NotPlain as exc:
                    exc.path.append(f".{key}")
                    raise

    return values
