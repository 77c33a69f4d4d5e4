"""The per-match race log: an append-only file of length-prefixed, checksummed msgpack records.

    file   = "O4WRLOG1" record*
    record = u32be(len(body)) ‖ SHA-256(body)[:8] ‖ body        body = msgpack map with a "kind" key

Records reach the kernel with one ``os.write`` per batch, so a ``kill -9`` loses nothing already
written and the file stays readable up to its last complete record; ``sync()`` (round end, exit) also
fsyncs. A torn tail is reported as truncation, a checksum mismatch before the tail as damage.

A node that closes its log writes an ``end`` record last, saying why (``EndReason``); so a reader can
tell a whole log (``complete``) from one whose writer stopped between records without closing it
(``incomplete``: killed, or the machine went down) and from one cut inside a record (``torn``).
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import msgpack

from open4wd_node.runtime.errors import UserError

MAGIC = b"O4WRLOG1"
HEAD = struct.Struct(">I8s")
MAX_RECORD_BYTES = 8 * 1024 * 1024  # a saved state is at most 4 MiB; headers stay far below this


END_KIND = "end"


class EndReason(str, Enum):
    """Why a node closed its race log (the ``reason`` of the ``end`` record)."""

    ENDED = "ended"  # the match ran to its end for this node; the record's ``outcome`` says how
    INTERRUPTED = "interrupted"  # SIGINT (Ctrl-C)
    TERMINATED = "terminated"  # SIGTERM
    CANCELLED = "cancelled"  # stopped by the program itself (e.g. a caller's time limit), no signal, no error
    ERROR = "error"  # an exception ended the match; ``detail`` names it


class LogStatus(str, Enum):
    """How much of a match a log holds."""

    COMPLETE = "complete"  # closed by its node: the last record is the end record
    INCOMPLETE = "incomplete"  # whole records only, but no end record: its writer stopped without closing it
    TORN = "torn"  # ends inside a record (its writer was killed mid-write): good up to the last whole record


def end_record(reason: EndReason, *, outcome: str | None = None, detail: str = "") -> dict[str, Any]:
    """The last record of a closed log; ``outcome`` only when the match ran to its end."""
    return {"kind": END_KIND, "reason": reason.value, "outcome": outcome, "detail": detail}


def _checksum(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()[:8]


def encode_record(record: dict[str, Any]) -> bytes:
    """One record's bytes in the file (header, checksum, msgpack body); ``UserError``
    ``race-log-record-too-large`` over ``MAX_RECORD_BYTES``."""
    body: bytes = msgpack.packb(record, use_bin_type=True)
    if len(body) > MAX_RECORD_BYTES:
        raise UserError("race-log-record-too-large", f"a {record.get('kind')} record of {len(body)} bytes is over the cap")
    return HEAD.pack(len(body), _checksum(body)) + body


class RaceLogWriter:
    """Appends records to a new race log (never an existing one). ``UserError`` ``race-log-exists`` or
    ``race-log-unwritable`` when the file cannot be created."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except FileExistsError:
            raise UserError("race-log-exists", f"{path} already exists; a race log is never overwritten") from None
        except OSError as exc:
            raise UserError("race-log-unwritable", f"cannot create {path}: {exc.strerror}") from None
        self._pending: list[bytes] = [MAGIC]

    def append(self, record: dict[str, Any]) -> None:
        """Queue a record; it reaches the file at the next ``flush``."""
        self._pending.append(encode_record(record))

    def flush(self) -> None:
        """Write the queued records to the file (one ``os.write`` per batch; not fsynced)."""
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]

    def sync(self) -> None:
        """Write the queued records and make the file durable."""
        self.flush()
        self.fsync()

    def fsync(self) -> None:
        """Make what ``flush`` wrote durable. Touches only the file descriptor, so a worker thread may
        run it (``run_blocking``) while the event loop keeps appending records."""
        os.fsync(self._fd)

    def close(self) -> None:
        """Write, fsync and close the file (idempotent)."""
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "RaceLogWriter":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass(frozen=True)
class LogRecord:
    """One complete record of a log: its position (``index``-th, at byte ``offset``) and its body."""

    index: int
    offset: int
    record: dict[str, Any]


@dataclass
class LogReader:
    """Iterate the complete records of a log; ``truncated`` tells whether a torn tail was skipped, and
    ``end`` holds the end record once it was read (nothing may follow it)."""

    path: Path
    truncated: bool = False
    end: dict[str, Any] | None = None

    @property
    def status(self) -> LogStatus:
        """Meaningful once the records were iterated."""
        if self.truncated:
            return LogStatus.TORN
        return LogStatus.COMPLETE if self.end is not None else LogStatus.INCOMPLETE

    def __iter__(self) -> Iterator[LogRecord]:
        self.truncated, self.end = False, None
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise UserError("race-log-unreadable", f"cannot read {self.path}: {exc.strerror}") from None
        if not data.startswith(MAGIC):
            raise UserError("race-log-damaged", f"{self.path} is not a race log (bad magic)")
        offset, index = len(MAGIC), 0
        while offset < len(data):
            if offset + HEAD.size > len(data):
                self.truncated = True
                return
            length, checksum = HEAD.unpack_from(data, offset)
            end = offset + HEAD.size + length
            if length > MAX_RECORD_BYTES:
                raise UserError("race-log-damaged", f"record {index} at byte {offset} claims {length} bytes")
            if end > len(data):
                self.truncated = True
                return
            body = data[offset + HEAD.size : end]
            if _checksum(body) != checksum:
                raise UserError("race-log-damaged", f"record {index} at byte {offset} fails its checksum")
            try:
                record = msgpack.unpackb(body, raw=False, strict_map_key=True)
            except (ValueError, TypeError, msgpack.exceptions.UnpackException):
                raise UserError("race-log-damaged", f"record {index} at byte {offset} is not msgpack") from None
            if not isinstance(record, dict) or not isinstance(record.get("kind"), str):
                raise UserError("race-log-damaged", f"record {index} at byte {offset} has no kind")
            if self.end is not None:
                raise UserError("race-log-damaged", f"record {index} at byte {offset} follows the end record")
            if record["kind"] == END_KIND:
                self.end = record
            yield LogRecord(index, offset, record)
            offset, index = end, index + 1
