"""A cache of what deterministic code derives from content: admitted assets, sampled route ribbons.

Why: admitting the 25 built-in GLBs costs about half a second per process (mostly pygltflib parsing)
and sampling a track's route about a tenth of a second. Both are pure functions of their input and of
this code, so a result can be kept and reused, in this process and, through an ``EntryStore`` that
the shell supplies (files in the node's data dir), by the next process.

An entry is found by its key::

    SHA-256(cache format ‖ entry kind ‖ code fingerprint ‖ source digest)

The source digest names the input (a GLB's SHA-256 content id; a TrackSpec's digest). The code
fingerprint covers everything else a result depends on: every source and data file of ``sim_core``
(admission rules, the material table, the built-in digest list, the route sampler), ``ENGINE_ID`` and
the installed versions of the libraries the GLB reader decodes with. Changing any of them gives new
keys, so an entry made by other code is never looked up again (it is stale by construction); nobody has
to remember to bump a version number.

``sim_core`` never chooses where entries live: without a store the cache is in-process only (that is
what ``World.demo`` gets in a plain Python process); the CLI backs the process cache with the data
dir's store for the duration of a command (``backed_by``).

Entries are checked on every read: header (magic, format, kind, key), SHA-256 of the payload, then the
kind's own decoder. A bad entry is counted, reported to the store (which logs and removes it) and
rebuilt; it is never trusted.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from sim_core import ENGINE_ID

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

T = TypeVar("T")

CACHE_FORMAT = 1
MAGIC = "open4wd-cache"
MEMORY_ENTRIES = 256
READER_LIBRARIES = ("numpy", "pygltflib", "dracopy")  # what the GLB reader decodes with (reader.py)
FINGERPRINT_SUFFIXES = (".py", ".csv", "SHA256SUMS")  # sim_core's code and the data it derives from


class EntryInvalid(ValueError):
    """A stored entry that must not be used: damaged, truncated, or made for another key."""


class EntryStore(Protocol):
    """Where entries live between processes (the shell: files under ``<data-dir>/cache``).

    ``name`` is ``<kind>/<64 hex key>``. ``read`` returns None when there is no entry; ``discard`` is
    told why an entry was refused (the store logs that and removes the entry)."""

    def read(self, name: str) -> bytes | None:
        """The stored entry called ``name``, or None when there is none."""

    def write(self, name: str, data: bytes) -> None:
        """Store ``data`` as ``name`` (atomically: a reader sees the old entry, the new one or none)."""

    def discard(self, name: str, reason: str) -> None:
        """Remove the entry ``name``, refused on read for ``reason`` (the store logs it)."""


@dataclass(frozen=True)
class EntryKind(Generic[T]):
    """One kind of cached product: how it becomes bytes and how bytes become it again.

    ``decode(payload, source_digest)`` raises ``EntryInvalid`` (any ``ValueError``) when the payload
    is not a well-formed product of that source."""

    name: str
    encode: Callable[[T], bytes]
    decode: Callable[[bytes, str], T]


@dataclass
class CacheStats:
    """How the cache answered since the process started (tests and ``--json`` diagnostics read it)."""

    memory_hits: int = 0
    store_hits: int = 0
    builds: int = 0  # the product was computed (admission ran, the route was sampled)
    bad_entries: int = 0  # stored entries refused on read (then rebuilt)


def _normalised(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def installed_versions(names: tuple[str, ...]) -> tuple[str, ...]:
    """``name-version`` of each distribution, read from the ``*.dist-info`` folder names on ``sys.path``.

    ``importlib.metadata`` would cost ~30 ms of imports on a start whose whole budget is 50 ms; the
    folder names carry the same two facts. A distribution that is not found reads ``name-absent``."""
    wanted = {_normalised(n): n for n in names}
    found: dict[str, str] = {}
    for entry in sys.path:
        if not entry:  # the script's folder, not where distributions are installed
            continue
        try:
            listing = os.listdir(entry)
        except OSError:
            continue
        for item in listing:
            stem, dot, suffix = item.rpartition(".")
            if dot and suffix in ("dist-info", "egg-info"):
                dist, _, version = stem.partition("-")
                key = _normalised(dist)
                if key in wanted and key not in found:
                    found[key] = version
    return tuple(f"{wanted[k]}-{found.get(k, 'absent')}" for k in sorted(wanted))


def _package_files(folder: Traversable, prefix: str = "") -> Iterator[tuple[str, bytes]]:
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        if item.is_dir():
            if item.name != "__pycache__":
                yield from _package_files(item, f"{prefix}{item.name}/")
        elif item.name.endswith(FINGERPRINT_SUFFIXES):
            yield prefix + item.name, item.read_bytes()


def package_fingerprint(folder: Traversable) -> str:
    """SHA-256 over the sources and data files under ``folder`` (names and bytes; bytecode ignored)."""
    h = hashlib.sha256()
    for path, data in _package_files(folder):
        h.update(f"{path}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@cache
def code_fingerprint() -> str:
    """SHA-256 over ENGINE_ID, every source and data file of ``sim_core`` and the reader's libraries."""
    from importlib import resources  # here, not at import: the CLI imports this module for every command

    parts = (ENGINE_ID, package_fingerprint(resources.files("sim_core")), *installed_versions(READER_LIBRARIES))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def entry_key(kind: str, source_digest: str) -> str:
    """The entry key of a product of ``kind`` built from ``source_digest`` by this code (module docstring)."""
    return hashlib.sha256(f"{CACHE_FORMAT}\0{kind}\0{code_fingerprint()}\0{source_digest}".encode()).hexdigest()


def frame_entry(kind: str, key: str, payload: bytes) -> bytes:
    """One header line ``open4wd-cache <format> <kind> <key> <sha256 of payload>``, then the payload."""
    header = f"{MAGIC} {CACHE_FORMAT} {kind} {key} {hashlib.sha256(payload).hexdigest()}\n"
    return header.encode("ascii") + payload


def unframe_entry(data: bytes, kind: str, key: str) -> bytes:
    """The payload of a stored entry, or ``EntryInvalid`` saying what is wrong with it."""
    head, newline, payload = data.partition(b"\n")
    if not newline:
        raise EntryInvalid("no header line (truncated)")
    fields = head.decode("ascii", "replace").split(" ")
    if len(fields) != 5 or fields[0] != MAGIC:
        raise EntryInvalid("not a cache entry (bad header)")
    if fields[1] != str(CACHE_FORMAT):
        raise EntryInvalid(f"cache format {fields[1]}, this node reads {CACHE_FORMAT}")
    if fields[2] != kind or fields[3] != key:
        raise EntryInvalid("the entry was made for another key (stale)")
    if hashlib.sha256(payload).hexdigest() != fields[4]:
        raise EntryInvalid("payload checksum mismatch (damaged)")
    return payload


class DerivedCache:
    """Two layers: a bounded in-process memory, then the optional ``store``; a miss builds.

    Thread-safe (the shell builds off the event loop in worker threads): two threads that miss the
    same key both build it, with identical results, and the store's atomic writes keep one of them."""

    def __init__(self, store: EntryStore | None = None, *, memory_entries: int = MEMORY_ENTRIES) -> None:
        self.store = store
        self.open_store: Callable[[], EntryStore] | None = None  # opens ``store`` on first need (``backed_by``)
        self.stats = CacheStats()
        self._memory: OrderedDict[str, object] = OrderedDict()
        self._memory_entries = memory_entries
        self._lock = threading.Lock()

    def get(self, kind: EntryKind[T], source_digest: str, build: Callable[[], T]) -> T:
        """The product of ``source_digest``: from memory, else from the store, else ``build()``
        (whose exceptions, a rejected asset say, propagate and leave nothing cached)."""
        key = entry_key(kind.name, source_digest)
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                self.stats.memory_hits += 1
                return self._memory[key]  # type: ignore[return-value]
        store = self._store()
        name = f"{kind.name}/{key}"
        if store is not None:
            value = self._load(store, kind, name, key, source_digest)
            if value is not None:
                return value
        value = build()
        with self._lock:
            self.stats.builds += 1
        if store is not None:
            store.write(name, frame_entry(kind.name, key, kind.encode(value)))
        self._remember(key, value)
        return value

    def _store(self) -> EntryStore | None:
        with self._lock:
            if self.store is None and self.open_store is not None:
                self.store, self.open_store = self.open_store(), None
            return self.store

    def _load(self, store: EntryStore, kind: EntryKind[T], name: str, key: str, source_digest: str) -> T | None:
        data = store.read(name)
        if data is None:
            return None
        try:
            value = kind.decode(unframe_entry(data, kind.name, key), source_digest)
        except ValueError as exc:
            with self._lock:
                self.stats.bad_entries += 1
            store.discard(name, str(exc))
            return None
        with self._lock:
            self.stats.store_hits += 1
        self._remember(key, value)
        return value

    def _remember(self, key: str, value: object) -> None:
        with self._lock:
            self._memory[key] = value
            self._memory.move_to_end(key)
            while len(self._memory) > self._memory_entries:
                self._memory.popitem(last=False)


_PROCESS_CACHE = DerivedCache()


def process_cache() -> DerivedCache:
    """The cache every ``sim_core`` lookup uses (in-process only unless a command backs it)."""
    return _PROCESS_CACHE


@contextmanager
def backed_by(store: EntryStore | Callable[[], EntryStore]) -> Iterator[DerivedCache]:
    """Back the process cache by ``store`` while the block runs (a CLI command: its data dir). A callable
    is called when an entry is first needed, so a command that never derives anything (``version``)
    does not even import the store's code.

    The memory layer is kept: its entries are valid whatever store backs it (same keys, same code)."""
    cache = _PROCESS_CACHE
    previous = cache.store, cache.open_store
    cache.store, cache.open_store = (None, store) if callable(store) else (store, None)
    try:
        yield cache
    finally:
        cache.store, cache.open_store = previous
