"""Values a user gives the node, checked by one rule wherever they come from.

The same option may arrive as a command-line string (``--economy-config-version -3``) or as a TOML
value (``economy_config_version = 12345678901234567890123``); both go through the same ``IntRange``, so
a number refused on one edge is refused on the other with the same words. Command-line rejections
become usage errors (exit 2); configuration rejections are ``config-invalid`` (exit 1).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1  # the largest integer every peer's JSON can carry exactly
DECIMAL = re.compile(r"[+-]?[0-9]{1,20}")


class ValueRejected(ValueError):
    """A value outside its rule; ``str()`` is the sentence shown to the user."""


@dataclass(frozen=True)
class IntRange:
    """An integer in ``lo..hi`` (inclusive). Usable directly as an argparse ``type=``."""

    lo: int
    hi: int

    @property
    def rule(self) -> str:
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

    def __call__(self, text: str) -> int:
        try:
            return self.parse(text)
        except ValueRejected as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


PORT = IntRange(0, 65535)
SEED = IntRange(0, 2**64 - 1)
