"""The content-addressed store: ids, idempotent atomic writes, caps, corruption."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from open4wd_node.assets.store import AssetStore
from sim_core.assets.builtins import builtin_bytes
from sim_core.errors import SimError


def test_put_get_and_ids(tmp_path: Path) -> None:
    store = AssetStore(tmp_path / "assets")
    data = builtin_bytes("builtin:chip-01")
    cid = store.put(data)
    assert cid == hashlib.sha256(data).hexdigest()
    assert store.put(data) == cid  # idempotent
    assert store.get(cid) == data and store.has(cid) and list(store.ids()) == [cid]
    assert store.path(cid).parent.name == cid[:2]
    assert not [p for p in store.path(cid).parent.iterdir() if p.name.startswith(".incoming-")]
    assert store.admitted(cid).asset_type == "chip"
    assert store.admitted("builtin:track-01").asset_type == "track"


def test_caps(tmp_path: Path) -> None:
    store = AssetStore(tmp_path, max_asset_bytes=100, max_total_bytes=150)
    with pytest.raises(SimError) as exc:
        store.put(b"x" * 101)
    assert exc.value.code == "store-asset-too-large"
    store.put(b"a" * 100)
    with pytest.raises(SimError) as exc:
        store.put(b"b" * 60)
    assert exc.value.code == "store-full"


def test_missing_invalid_and_corrupt(tmp_path: Path) -> None:
    store = AssetStore(tmp_path)
    with pytest.raises(SimError) as exc:
        store.get("0" * 64)
    assert exc.value.code == "store-missing"
    with pytest.raises(SimError) as exc:
        store.get("../etc/passwd")
    assert exc.value.code == "store-invalid-id"
    cid = store.put(b"hello")
    store.path(cid).write_bytes(b"tampered")
    with pytest.raises(SimError) as exc:
        store.get(cid)
    assert exc.value.code == "store-corrupt"
