"""The check every spec runs on a tuple of its validated items (a track's magnet sources and fluid zones,
a part's steel): one rule, one set of messages."""

from __future__ import annotations

from typing import Protocol, TypeVar

from sim_core.errors import SimError


class Validated(Protocol):
    """An item that checks itself, naming itself ``what`` in its refusal."""

    def validate(self, what: str) -> None:
        """``SimError`` with the item's own code unless it is valid."""


V = TypeVar("V", bound=Validated)


def check_all(items: object, kind: type[V], limit: int, code: str, what: str) -> None:
    """``SimError`` ``code`` unless ``items`` is a tuple of at most ``limit`` valid ``kind``."""
    if not isinstance(items, tuple) or len(items) > limit:
        raise SimError(code, f"{what} must be a tuple of at most {limit} {kind.__name__}")
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise SimError(code, f"{what}[{i}] must be a {kind.__name__}")
        item.validate(f"{what}[{i}]")
