"""The derived cache: admitted assets and routes reused across processes through the data dir, checked on
read, rebuilt when damaged, missed when made by other code, and never changing a result."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.cache_dir import CacheDir
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.assets.room_assets import NodeRoomAssets
from sim_core import World, derived_cache
from sim_core.assets import admission
from sim_core.assets.admission import ADMITTED, admit, admit_cached
from sim_core.assets.builtins import BUILTIN_REFS, builtin_bytes
from sim_core.assets.findings import AssetRejected
from sim_core.derived_cache import DerivedCache, EntryInvalid, backed_by, entry_key, package_fingerprint
from sim_core.specs.route import SAMPLE_ARRAYS, Route
from tests.open4wd_node.race.nodes import short_track

# A fresh interpreter: back the process cache with CACHE_DIR, build the demo, step it, report.
PROBE = """
import json, sys
from pathlib import Path
from open4wd_node.assets.cache_dir import CacheDir
from sim_core import World
from sim_core.derived_cache import backed_by
with backed_by(CacheDir(Path(sys.argv[1]))) as cache:
    world = World.demo(8)
    for _ in range(120):
        world.step({})
print(json.dumps({"stats": vars(cache.stats), "hash": world.state_hash().hex(),
                  "reader_loaded": "pygltflib" in sys.modules or "numpy" in sys.modules}))
"""


def probe(cache_dir: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(cache_dir)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def demo_hash_here() -> str:
    world = World.demo(8)
    for _ in range(120):
        world.step({})
    return world.state_hash().hex()


def entry_names(cache_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(cache_dir)) for p in cache_dir.rglob("*") if p.is_file())


def test_a_second_process_builds_the_demo_from_the_data_dir_cache(tmp_path):
    first, second = probe(tmp_path), probe(tmp_path)
    # 25 built-ins in the demo's track and three archetype cars, and one route
    assert first["stats"] == {"memory_hits": 18, "store_hits": 0, "builds": 26, "bad_entries": 0}
    assert second["stats"] == {"memory_hits": 18, "store_hits": 26, "builds": 0, "bad_entries": 0}
    assert first["reader_loaded"] and not second["reader_loaded"]  # no GLB was read the second time
    assert first["hash"] == second["hash"] == demo_hash_here()  # the same race, cache or not
    assert len(entry_names(tmp_path)) == 26


ROOM_PROBE = """
import json, sys
from dataclasses import replace
from pathlib import Path
from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.cache_dir import CacheDir
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.assets.room_assets import NodeRoomAssets
from sim_core.assets.builtins import BUILTIN_REFS
from sim_core.derived_cache import backed_by
data_dir = Path(sys.argv[1])
with backed_by(CacheDir.in_data_dir(data_dir)) as cache:
    assets = NodeRoomAssets(AssetStore.in_data_dir(data_dir), replace(DEFAULTS))
    assets.prepare(BUILTIN_REFS)  # what a room does when it opens (room_session._room_assets)
print(json.dumps(vars(cache.stats)))
"""


def test_a_room_in_a_second_process_does_not_admit_the_builtins_again(tmp_path):
    def room() -> dict:
        out = subprocess.run([sys.executable, "-c", ROOM_PROBE, str(tmp_path)], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.splitlines()[-1])

    assert room() == {"memory_hits": 0, "store_hits": 0, "builds": 27, "bad_entries": 0}
    assert room() == {"memory_hits": 0, "store_hits": 27, "builds": 0, "bad_entries": 0}


def test_the_cli_keeps_the_cache_in_the_data_dir(tmp_path):
    def sim() -> dict:
        out = subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(tmp_path), "sim", "--frames", "30",
                              "--json"], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    first = sim()
    entries = {p: p.stat().st_ino for p in (tmp_path / "cache").rglob("*") if p.is_file()}
    assert len(entries) == 26
    assert sim()["state_hash"] == first["state_hash"]
    # nothing was rebuilt: an entry is only ever replaced (new inode) when it is written again
    assert {p: p.stat().st_ino for p in (tmp_path / "cache").rglob("*") if p.is_file()} == entries


def test_a_command_that_derives_nothing_does_not_open_the_cache(tmp_path):
    code = "from open4wd_node.cli.main import main\nmain(['version'])"
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint('open4wd_node.assets.cache_dir' in sys.modules)"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "False" and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("ref", BUILTIN_REFS)
def test_an_entry_read_back_is_exactly_what_admission_concluded(tmp_path, ref):
    data = builtin_bytes(ref)
    admit_cached(data, cache=DerivedCache(CacheDir(tmp_path)))
    fresh = DerivedCache(CacheDir(tmp_path))
    assert admit_cached(data, cache=fresh) == admit(data)
    assert vars(fresh.stats) == {"memory_hits": 0, "store_hits": 1, "builds": 0, "bad_entries": 0}


def test_a_route_read_back_is_the_sampled_route():
    route = World.demo(1).route
    again = Route.from_bytes(route.to_bytes())
    assert (again.loop, again.length_um, again.count) == (route.loop, route.length_um, route.count)
    assert all(getattr(again, name) == getattr(route, name) for name in SAMPLE_ARRAYS)
    for damaged in (route.to_bytes()[:-8], route.to_bytes()[:10], b""):
        with pytest.raises(EntryInvalid):
            Route.from_bytes(damaged)


def _flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def _other_format(data: bytes) -> bytes:
    return data.replace(f"{derived_cache.MAGIC} {derived_cache.CACHE_FORMAT} ".encode(), f"{derived_cache.MAGIC} 99 ".encode(), 1)


DAMAGE = {
    "payload bit flip": _flip_last_byte,
    "truncated": lambda data: data[: len(data) // 2],
    "no header line": lambda data: data[:20],
    "empty file": lambda data: b"",
    "other cache format": _other_format,
    "not an entry": lambda data: b"garbage\n" + data,
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_entry_is_ignored_logged_and_rebuilt(tmp_path, caplog, damage):
    data = builtin_bytes("builtin:chip-02")
    admit_cached(data, cache=DerivedCache(CacheDir(tmp_path)))
    [name] = entry_names(tmp_path)
    path = tmp_path / name
    path.write_bytes(DAMAGE[damage](path.read_bytes()))
    cache = DerivedCache(CacheDir(tmp_path))
    with caplog.at_level(logging.WARNING, logger="open4wd_node.cache"):
        assert admit_cached(data, cache=cache) == admit(data)
    assert vars(cache.stats) == {"memory_hits": 0, "store_hits": 0, "builds": 1, "bad_entries": 1}
    assert any("ignored and rebuilt" in r.getMessage() for r in caplog.records)
    again = DerivedCache(CacheDir(tmp_path))  # the rebuilt entry is whole again
    admit_cached(data, cache=again)
    assert again.stats.store_hits == 1


def test_an_entry_of_other_bytes_under_this_key_is_refused(tmp_path):
    chip, motor = builtin_bytes("builtin:chip-01"), builtin_bytes("builtin:motor-01")
    admit_cached(chip, cache=DerivedCache(CacheDir(tmp_path)))
    [chip_name] = entry_names(tmp_path)
    motor_name = f"admitted/{entry_key('admitted', admission.content_id(motor))}"
    (tmp_path / motor_name).write_bytes((tmp_path / chip_name).read_bytes())  # a valid entry, for other bytes
    cache = DerivedCache(CacheDir(tmp_path))
    assert admit_cached(motor, cache=cache).asset_type == "motor"
    assert cache.stats.bad_entries == 1 and cache.stats.builds == 1
    payload = derived_cache.unframe_entry((tmp_path / chip_name).read_bytes(), "admitted", chip_name.split("/")[1])
    with pytest.raises(EntryInvalid):  # the record itself names the bytes it belongs to
        ADMITTED.decode(payload, admission.content_id(motor))


def test_entries_made_by_other_code_are_never_looked_up(tmp_path, monkeypatch):
    data = builtin_bytes("builtin:roller-03")
    admit_cached(data, cache=DerivedCache(CacheDir(tmp_path)))
    monkeypatch.setattr(derived_cache, "code_fingerprint", lambda: "0" * 64)  # e.g. an admission rule changed
    cache = DerivedCache(CacheDir(tmp_path))
    assert admit_cached(data, cache=cache) == admit(data)
    assert vars(cache.stats) == {"memory_hits": 0, "store_hits": 0, "builds": 1, "bad_entries": 0}
    assert len(entry_names(tmp_path)) == 2  # the old entry is stale by its key: not read, not trusted


def test_the_code_fingerprint_follows_sources_and_data_but_not_bytecode(tmp_path):
    tree = tmp_path / "pkg"
    (tree / "assets").mkdir(parents=True)
    (tree / "assets" / "rules.py").write_text("LIMIT = 1\n")
    (tree / "materials.csv").write_text("id\nabs\n")
    before = package_fingerprint(tree)
    (tree / "__pycache__").mkdir()
    (tree / "__pycache__" / "rules.cpython-311.pyc").write_bytes(b"\0" * 16)
    assert package_fingerprint(tree) == before
    (tree / "assets" / "rules.py").write_text("LIMIT = 2\n")
    assert package_fingerprint(tree) != before
    (tree / "assets" / "rules.py").write_text("LIMIT = 1\n")
    (tree / "materials.csv").write_text("id\nabs\npc\n")
    assert package_fingerprint(tree) != before


def test_the_key_names_the_reader_libraries_versions():
    versions = derived_cache.installed_versions(derived_cache.READER_LIBRARIES)
    assert [v.rsplit("-", 1)[0] for v in versions] == ["dracopy", "numpy", "pygltflib"]
    assert not any(v.endswith("-absent") for v in versions)


def test_store_assets_are_cached_by_content_id(tmp_path):
    data = short_track(7.25)  # bytes no other test admits
    store = AssetStore.in_data_dir(tmp_path)
    cid = store.put(data)
    with backed_by(CacheDir.in_data_dir(tmp_path)) as cache:
        builds = cache.stats.builds
        assert store.admitted(cid) == admit(data)
        assert cache.stats.builds == builds + 1
    assert entry_names(tmp_path / "cache") == [f"admitted/{entry_key('admitted', cid)}"]
    fresh = DerivedCache(CacheDir.in_data_dir(tmp_path))  # what the next process would find
    assert admit_cached(store.get(cid), cid, cache=fresh).digest == admit(data).digest and fresh.stats.store_hits == 1


def test_a_refused_asset_is_admitted_once_per_room(tmp_path, monkeypatch):
    data = short_track(7.5)
    at = data.index(b'"digest":"') + len(b'"digest":"')
    broken = data[:at] + (b"0" if data[at:at + 1] != b"0" else b"1") + data[at + 1:]  # the embedded digest, altered
    assets = NodeRoomAssets(AssetStore.in_data_dir(tmp_path), DEFAULTS)
    cid = assets.store.put(broken)
    calls = []
    monkeypatch.setattr(admission, "admit", lambda data: calls.append(1) or admit(data))
    assets.prepare([cid, "builtin:chip-09"])  # refused and unknown: left to the checks that report them
    for _ in range(3):
        with pytest.raises(AssetRejected) as exc:
            assets.resolve(cid)
        assert exc.value.code == "manifest-digest-mismatch"
    assert calls == [1]


def test_an_unwritable_cache_dir_costs_speed_not_the_result(tmp_path, caplog):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    data = builtin_bytes("builtin:battery-02")
    cache = DerivedCache(CacheDir(blocker))
    with caplog.at_level(logging.WARNING, logger="open4wd_node.cache"):
        assert admit_cached(data, cache=cache) == admit(data)
    assert cache.stats.builds == 1
    assert any("cannot write cache entry" in r.getMessage() for r in caplog.records)


def test_an_unreadable_entry_is_computed_instead(tmp_path, caplog):
    data = builtin_bytes("builtin:battery-03")
    name = f"admitted/{entry_key('admitted', admission.content_id(data))}"
    (tmp_path / name).mkdir(parents=True)  # a folder where the entry should be: unreadable, unwritable
    cache = DerivedCache(CacheDir(tmp_path))
    with caplog.at_level(logging.WARNING, logger="open4wd_node.cache"):
        assert admit_cached(data, cache=cache) == admit(data)
    assert cache.stats.builds == 1
    messages = [r.getMessage() for r in caplog.records]
    assert any("is unreadable" in m for m in messages) and any("cannot write cache entry" in m for m in messages)
