"""Files a user hands the node (a mnemonic, a loadout, an asset), read under one set of rules.

Whatever a user types as a path (a missing file, a directory, a file they may not read, an endless
device such as ``/dev/zero``, a symlink loop, an empty string, bytes that are not UTF-8) the answer is
one coded sentence naming the file, never a traceback and never an unbounded read: at most
``max_bytes + 1`` bytes are read, so a larger file is refused without loading it. (A FIFO with no
writer blocks until one appears, as it does for ``cat``: that is how shells hand over ``<(…)``.)

JSON from a user is also capped in nesting, and may hold neither ``NaN``/``Infinity`` (not JSON) nor
integers longer than 20 digits (Python refuses those beyond 4300 digits with advice meant for
programmers, and no value a user writes by hand is that long).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO

from open4wd_node.runtime.errors import UserError

MAX_INTEGER_DIGITS = 20
STDIN = "(standard input)"  # how messages name standard input where they name a file


def display_path(path: str) -> str:
    """A path as it can be printed: bytes that are not UTF-8 (``surrogateescape`` in argv) become ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


@dataclass(frozen=True)
class UserFile:
    """What a path given by the user should hold, how large it may be, and the codes it is refused with."""

    what: str  # "the mnemonic file": the start of every message about it
    max_bytes: int
    unreadable_code: str = "file-unreadable"
    too_large_code: str = "file-too-large"
    invalid_code: str = "file-invalid"  # the bytes are not what the file should hold (not UTF-8, …)

    def read(self, path: str) -> bytes:
        """The file's bytes, or a ``UserError`` saying in words why it cannot be used."""
        shown = display_path(path)
        if not path:
            raise UserError(self.unreadable_code, f"{self.what} is an empty path; give the name of a file")
        try:
            with open(path, "rb") as handle:
                return self.read_stream(handle, shown)
        except FileNotFoundError:
            raise UserError(self.unreadable_code, f"{self.what} {shown} does not exist") from None
        except IsADirectoryError:
            raise UserError(self.unreadable_code, f"{self.what} {shown} is a directory, not a file") from None
        except PermissionError:
            raise UserError(self.unreadable_code,
                            f"{self.what} {shown} may not be read by this user (permission denied)") from None
        except OSError as exc:
            raise UserError(self.unreadable_code, f"cannot read {self.what} {shown}: {exc.strerror or exc}") from None

    def read_stdin(self) -> bytes:
        """The same rules for standard input (which may be closed: ``<&-``)."""
        if sys.stdin is None:
            raise UserError(self.unreadable_code,
                            f"standard input is closed, so {self.what} cannot come from it; name a file instead")
        try:
            return self.read_stream(sys.stdin.buffer, STDIN)
        except OSError as exc:
            raise UserError(self.unreadable_code, f"cannot read {self.what} from standard input: {exc.strerror or exc}") from None

    def read_stream(self, handle: BinaryIO, shown: str) -> bytes:
        """At most ``max_bytes`` from an open stream (a file or stdin); more is refused, not truncated."""
        data = handle.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise UserError(self.too_large_code,
                            f"{self.what} {shown} is larger than {self.max_bytes} bytes, the most it may hold")
        return data

    def text(self, data: bytes, shown: str) -> str:
        """UTF-8 (a leading byte-order mark, as some editors write, is allowed)."""
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise UserError(self.invalid_code,
                            f"{self.what} {shown} is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x})") from None


@dataclass(frozen=True)
class UserJsonFile:
    """A JSON file from a user: a ``UserFile`` whose text must parse and nest at most ``max_depth`` deep."""

    file: UserFile
    max_depth: int

    def read(self, path: str) -> Any:
        """The parsed JSON value of the file at ``path``; a ``UserError`` (``json-invalid``,
        ``json-too-deep`` or the file's own codes) saying why it cannot be used."""
        shown = display_path(path)
        text = self.file.text(self.file.read(path), shown)
        if not text.strip():
            raise UserError("json-invalid", f"{self.file.what} {shown} is empty; it should hold JSON")
        try:
            value = json.loads(text, parse_int=_short_int, parse_constant=_no_constant)
        except RecursionError:
            raise self._too_deep(shown) from None
        except ValueError as exc:  # JSONDecodeError, and the two hooks above
            raise UserError("json-invalid", f"{self.file.what} {shown} is not valid JSON: {exc}") from None
        depth, broken_text = shape(value)
        if depth > self.max_depth:
            raise self._too_deep(shown)
        if broken_text:
            raise UserError("json-invalid", f"{self.file.what} {shown} holds a lone UTF-16 surrogate escape "
                                            "(\\ud800…\\udfff without its pair), which is not Unicode text")
        return value

    def _too_deep(self, shown: str) -> UserError:
        return UserError("json-too-deep",
                         f"{self.file.what} {shown} nests deeper than {self.max_depth} levels of arrays and objects")


def shape(value: Any) -> tuple[int, bool]:
    """How deep arrays and objects nest in a parsed JSON value (a scalar is 0, ``{}`` is 1), and whether
    any string or key holds a lone surrogate (JSON can escape one; it cannot be printed). No recursion."""
    deepest, broken, stack = 0, False, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            broken = broken or not _is_text(item)
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, dict):
            deepest = max(deepest, depth)
            broken = broken or not all(_is_text(key) for key in item)
            stack.extend((child, depth + 1) for child in item.values())
    return deepest, broken


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _short_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        raise ValueError(f"an integer of {digits} digits ({text[:12]}…) is far larger than any value it may hold")
    return int(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
