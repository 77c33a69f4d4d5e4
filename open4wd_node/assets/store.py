"""Content-addressed local asset store under ``<data-dir>/assets``: id = SHA-256 hex of the GLB bytes.

Writes are atomic (temporary file in the same directory, fsync, rename), so a crash never leaves a
half-written asset under a valid id; reads re-hash the bytes, so a corrupted file is refused, not used.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

from open4wd_node.runtime.atomic_file import write_atomic
from sim_core.assets.admission import AdmittedAsset, admit_cached
from sim_core.assets.builtins import admitted_builtin, is_builtin_ref
from sim_core.assets.constants import MAX_GLB_BYTES
from sim_core.errors import SimError

CONTENT_ID = re.compile(r"^[0-9a-f]{64}$")
DEFAULT_MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024


def content_id(data: bytes) -> str:
    """An asset's id: the SHA-256 hex digest of its bytes."""
    return hashlib.sha256(data).hexdigest()


class AssetStore:
    """The local content-addressed GLB store (module docstring), capped per asset and in total."""

    def __init__(
        self, root: Path, *, max_asset_bytes: int = MAX_GLB_BYTES, max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES
    ) -> None:
        self.root = root
        self.max_asset_bytes = max_asset_bytes
        self.max_total_bytes = max_total_bytes

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> "AssetStore":
        """The store of a node's data directory: ``<data-dir>/assets``."""
        return cls(data_dir / "assets")

    def path(self, cid: str) -> Path:
        """Where ``cid`` is kept; ``SimError`` ``store-invalid-id`` for anything but 64 lowercase hex digits."""
        if not CONTENT_ID.match(cid):
            raise SimError("store-invalid-id", f"{cid!r} is not a content id (64 lowercase hex digits of SHA-256)")
        return self.root / cid[:2] / f"{cid}.glb"

    def ids(self) -> Iterator[str]:
        """The content ids stored, in order."""
        if self.root.is_dir():
            for path in sorted(self.root.glob("??/*.glb")):
                if CONTENT_ID.match(path.stem):
                    yield path.stem

    def total_bytes(self) -> int:
        """What the stored assets take together (checked against the total cap before a ``put``)."""
        return sum(self.path(cid).stat().st_size for cid in self.ids())

    def has(self, cid: str) -> bool:
        """Whether a file for ``cid`` is stored (not re-hashed: ``get`` checks the bytes)."""
        return self.path(cid).is_file()

    def put(self, data: bytes) -> str:
        """Store the bytes (idempotent) and return their content id; caps are checked before writing."""
        if len(data) > self.max_asset_bytes:
            raise SimError("store-asset-too-large",
                           f"the asset is {len(data)} bytes; the store accepts at most {self.max_asset_bytes}")
        cid = content_id(data)
        target = self.path(cid)
        if target.is_file():
            return cid
        if self.total_bytes() + len(data) > self.max_total_bytes:
            raise SimError("store-full", f"storing {len(data)} more bytes would exceed the store cap of "
                                         f"{self.max_total_bytes}; remove assets first")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)
        return cid

    def get(self, cid: str) -> bytes:
        """The stored bytes of ``cid``, re-hashed; ``SimError`` ``store-missing`` or ``store-corrupt``."""
        path = self.path(cid)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise SimError("store-missing", f"asset {cid} is not in the local store ({self.root})") from None
        except OSError as exc:  # a directory in its place, no permission, …: the store was damaged outside the node
            raise SimError("store-corrupt", f"stored file {path} cannot be read ({exc.strerror or exc}); "
                                            "delete it and fetch the asset again") from None
        if content_id(data) != cid:
            raise SimError("store-corrupt", f"stored file for {cid} no longer hashes to its id; delete {path} and fetch it again")
        return data

    def admitted(self, ref: str) -> AdmittedAsset:
        """A loadout ref resolved for a race: built-ins from the package, content ids from this store.
        The bytes are read and re-hashed every time; what admission concluded comes from the cache
        (``sim_core.derived_cache``, keyed by the content id)."""
        return admitted_builtin(ref) if is_builtin_ref(ref) else admit_cached(self.get(ref), ref)
