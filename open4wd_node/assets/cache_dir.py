"""The node's half of ``sim_core.derived_cache``: entries as files under ``<data-dir>/cache``.

``sim_core`` decides what an entry holds and whether to trust it; this module only keeps the bytes,
``<data-dir>/cache/<kind>/<key>``, written atomically (a crash leaves the old entry or the whole new
one; no fsync: an entry lost to a power cut is only rebuilt). The cache is an optimisation, so a folder
that cannot be read or written costs speed, never a race: the failure is logged as a warning and the
product is computed instead.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from open4wd_node.runtime.atomic_file import write_atomic

log = logging.getLogger("open4wd_node.cache")

ENTRY_NAME = re.compile(r"^[a-z][a-z-]*/[0-9a-f]{64}$")


class CacheDir:
    """An ``EntryStore`` (sim_core.derived_cache) over one folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> "CacheDir":
        """The cache of a node's data directory: ``<data-dir>/cache``."""
        return cls(data_dir / "cache")

    def path(self, name: str) -> Path:
        """The file of entry ``name`` (``<kind>/<64 hex>``); ``ValueError`` for another name (a caller's bug)."""
        if not ENTRY_NAME.match(name):
            raise ValueError(f"{name!r} is not a cache entry name (<kind>/<64 hex>)")
        return self.root / name

    def read(self, name: str) -> bytes | None:
        """The entry's bytes, or None when it is absent or unreadable (logged: the product is computed instead)."""
        path = self.path(name)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cache entry %s is unreadable (%s); computing it instead", path, exc.strerror)
            return None

    def write(self, name: str, data: bytes) -> None:
        """Store the entry atomically; a failure is logged, never raised (the next start computes it again)."""
        path = self.path(name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data, durable=False)  # a lost entry is rebuilt; a torn one fails its checksum
        except OSError as exc:
            log.warning("cannot write cache entry %s (%s); the next start computes it again", path, exc.strerror)

    def discard(self, name: str, reason: str) -> None:
        """Remove an entry ``sim_core`` did not trust, logging ``reason`` (a failure to remove is logged too)."""
        path = self.path(name)
        log.warning("cache entry %s ignored and rebuilt: %s", path, reason)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot remove cache entry %s (%s)", path, exc.strerror)
