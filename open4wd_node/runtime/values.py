"""Values a user gives the node, checked by one rule wherever they come from.

The same option may arrive as a command-line string (``--economy-config-version -3``) or as a TOML
value (``economy_config_version = 12345678901234567890123``); both go through the same ``IntRange``, so
a number refused on one edge is refused on the other with the same words. Command-line rejections
become usage errors (exit 2); configuration rejections are ``config-invalid`` (exit 1).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1  # the largest integer every peer's JSON can carry exactly
DECIMAL = re.compile(r"[+-]?[0-9]{1,4000}")  # any size a TOML file can hold: the same answer on both edges
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a key of a table value (an asset type)


class ValueRejected(ValueError):
    """A value outside its rule; ``str()`` is the sentence shown to the user."""


class Rule:
    """One rule for one kind of value: ``check`` takes a value from a parsed file (TOML, JSON),
    ``parse`` the text typed on the command line; an instance is an argparse ``type=``.

    A repeatable rule (a list or a table) is declared with ``action="append"``: each occurrence of
    the flag is parsed alone, ``combine`` joins them into what ``check`` gives for a whole file value,
    and ``merge`` says how the command line's value meets the file's."""

    repeatable = False
    metavar: str | None = None

    @property
    def rule(self) -> str:
        """The rule in words, completing "takes …" in a refusal (``an integer in 0..8``)."""
        raise NotImplementedError

    def check(self, value: Any) -> Any:
        """``value`` from a parsed file, checked (and normalised); ``ValueRejected`` when it breaks the rule."""
        raise NotImplementedError

    def parse(self, text: str) -> Any:
        """``text`` typed on the command line, checked; ``ValueRejected`` when it breaks the rule."""
        return self.check(text)

    def refused(self, value: Any) -> ValueRejected:
        """The refusal of ``value``, in the rule's words."""
        return ValueRejected(f"takes {self.rule}, got {shown(value)}")

    def text_of(self, value: Any) -> str:
        """``value`` when it is a string (a file may hold any type), else the refusal."""
        if not isinstance(value, str):
            raise self.refused(value)
        return value

    def combine(self, values: Sequence[Any]) -> Any:
        """The occurrences of a repeatable flag joined into one value (only repeatable rules)."""
        raise NotImplementedError(f"{type(self).__name__} is not repeatable")

    def merge(self, configured: Any, given: Any) -> Any:
        """The command line wins over the file."""
        return given

    def __call__(self, text: str) -> Any:
        try:
            return self.parse(text)
        except ValueRejected as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


def shown(value: Any) -> str:
    """A rejected value as the user sees it: cut short, so a huge value cannot flood the terminal."""
    text = repr(value)
    return text if len(text) <= 42 else f"{text[:40]}…"


@dataclass(frozen=True)
class IntRange(Rule):
    """An integer in ``lo..hi`` (inclusive). Usable directly as an argparse ``type=``."""

    lo: int
    hi: int

    @property
    def rule(self) -> str:
        """``an integer in LO..HI``."""
        return f"an integer in {self.lo}..{self.hi}"

    def check(self, value: Any) -> int:
        """A value from a parsed file (TOML, JSON): a real integer, never a bool or a float."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueRejected(f"takes {self.rule}, got {value!r}")
        if not self.lo <= value <= self.hi:
            shown = str(value) if len(str(value)) <= 24 else f"{str(value)[:20]}… ({len(str(value))} digits)"
            raise ValueRejected(f"takes {self.rule}, got {shown}")
        return value

    def parse(self, text: str) -> int:
        """A value typed on the command line."""
        if not DECIMAL.fullmatch(text.strip()):
            raise ValueRejected(f"takes {self.rule}, got {text[:40]!r}")
        return self.check(int(text))



@dataclass(frozen=True)
class OneOf(Rule):
    """One of a closed set of words; a refusal names them all."""

    choices: tuple[str, ...]

    @property
    def rule(self) -> str:
        """``one of A, B, C``: a refusal names every choice."""
        return f"one of {', '.join(self.choices)}"

    @property
    def metavar(self) -> str:  # type: ignore[override]
        """``A|B|C`` in the help."""
        return "|".join(self.choices)

    def check(self, value: Any) -> str:
        """``value`` when it is one of the choices, else ``ValueRejected``."""
        text = self.text_of(value)
        if text not in self.choices:
            raise self.refused(value)
        return text


@dataclass(frozen=True)
class Text(Rule):
    """Any string (a name, a path); ``max_chars`` bounds what a peer or a file system will take."""

    max_chars: int = 4096

    @property
    def rule(self) -> str:
        """``a string of at most N characters``."""
        return f"a string of at most {self.max_chars} characters"

    def check(self, value: Any) -> str:
        """``value`` when it is a string short enough, else ``ValueRejected``."""
        text = self.text_of(value)
        if len(text) > self.max_chars:
            raise self.refused(value)
        return text


@dataclass(frozen=True)
class ListOf(Rule):
    """A list: an array in TOML; on the command line comma-separated, the flag repeatable (the
    occurrences add up). The command line adds to the file's list. ``unique_sorted`` for numbers."""

    item: Rule
    unique_sorted: bool = False
    repeatable = True

    @property
    def rule(self) -> str:
        """``a list, each <the item's rule>``."""
        return f"a list, each {self.item.rule}"

    def _normal(self, items: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(sorted(set(items))) if self.unique_sorted else tuple(dict.fromkeys(items))

    def check(self, value: Any) -> tuple[Any, ...]:
        """A TOML array, every item checked by the item's rule."""
        if not isinstance(value, list):
            raise self.refused(value)
        return self._normal([self.item.check(v) for v in value])

    def parse(self, text: str) -> tuple[Any, ...]:
        """Comma-separated items, each parsed by the item's rule."""
        return self._normal([self.item.parse(part) for part in text.split(",")])

    def combine(self, values: Sequence[tuple[Any, ...]]) -> tuple[Any, ...]:
        """The items of every occurrence of the flag, in order."""
        return self._normal([item for value in values for item in value])

    def merge(self, configured: Sequence[Any], given: Sequence[Any]) -> tuple[Any, ...]:
        """The command line's items add to the file's."""
        return self._normal([*configured, *given])


@dataclass(frozen=True)
class TableOf(Rule):
    """A table of ``NAME = value``: a TOML table; on the command line ``NAME=VALUE``, the flag
    repeatable. A name given on the command line replaces that name's value from the file."""

    value: Rule
    repeatable = True

    @property
    def rule(self) -> str:
        """``a table of NAME = value, each value <the value's rule>``."""
        return f"a table of NAME = value, each value {self.value.rule}"

    @property
    def metavar(self) -> str:  # type: ignore[override]
        """``NAME=VALUE`` in the help."""
        return "NAME=VALUE"

    def _name(self, name: Any) -> str:
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueRejected(f"takes {self.rule} (a name is letters, digits, _ or -), got name {shown(name)}")
        return name

    def check(self, value: Any) -> dict[str, Any]:
        """A TOML table: every name checked, every value by the value's rule."""
        if not isinstance(value, dict):
            raise self.refused(value)
        return {self._name(k): self.value.check(v) for k, v in value.items()}

    def parse(self, text: str) -> dict[str, Any]:
        """One ``NAME=VALUE`` from the command line."""
        name, sep, rest = text.partition("=")
        if not sep:
            raise ValueRejected(f"takes NAME=VALUE ({self.rule}), got {shown(text)}")
        return {self._name(name.strip()): self.value.parse(rest)}

    def combine(self, values: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Every occurrence's entries; a later one replaces an earlier one of the same name."""
        return {k: v for value in values for k, v in value.items()}

    def merge(self, configured: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """A name given on the command line replaces that name's value from the file."""
        return {**configured, **given}


PORT = IntRange(0, 65535)
SEED = IntRange(0, 2**64 - 1)
