"""docs/node.md lists every event a node prints ("Events"), and the code's event classes are that list."""

from __future__ import annotations

import types
import typing
from dataclasses import fields

import msgspec

from open4wd_node.events.vocabulary import EVENT_CLASSES
from protocol.race.actions import RaceEvent
from tests.events_doc import documented_events

RACE_EVENTS = set(typing.get_args(RaceEvent))


class Given:
    """A field's value that is not None (with a ``value``, as an enum member has)."""

    value = "given"


def _may_be_none(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return "None" in text or (isinstance(annotation, types.UnionType) and type(None) in typing.get_args(annotation))


def _given(kind: object) -> object:
    """A value of a field of type ``kind`` that is not None: a wire message (a ``room-decision`` event
    carries the message it reports) with every field given, else ``Given``."""
    if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        return kind(**{name: Given() for name in kind.__struct_fields__})
    return Given()


def keys_of(cls: type) -> tuple[set[str], set[str]]:
    """Every JSON key an event of ``cls`` may print, and those it leaves out when the field is None."""
    hints = typing.get_type_hints(cls)
    every = set(cls(**{f.name: _given(hints[f.name]) for f in fields(cls)}).data())
    least = set(cls(**{f.name: None if _may_be_none(f.type) else _given(hints[f.name]) for f in fields(cls)}).data())
    if cls in RACE_EVENTS:  # told with the round they happened in (InRound)
        every, least = every | {"round"}, least | {"round"}
    return every, every - least


def test_every_event_class_has_a_distinct_name():
    names = [cls.EVENT for cls in EVENT_CLASSES]
    assert all(names), [cls.__name__ for cls in EVENT_CLASSES if not cls.EVENT]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_the_docs_list_every_event_and_nothing_else():
    documented = documented_events()
    assert set(documented) == {cls.EVENT for cls in EVENT_CLASSES}


def test_the_docs_list_each_events_keys_and_which_one_view_leaves_out():
    documented = documented_events()
    for cls in EVENT_CLASSES:
        every, optional = keys_of(cls)
        assert documented[cls.EVENT].keys == every, cls.EVENT
        assert documented[cls.EVENT].optional == optional, cls.EVENT
