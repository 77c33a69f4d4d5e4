"""A soak race's processes share one derived cache: what one node derives, the next one and the replays
read; a kept race's packed files hold none of it."""

import io
import tarfile

from open4wd_node.assets.cache_dir import CacheDir
from open4wd_node.soak.race import _pack, share_derived_cache

ENTRY = "route/" + "ab" * 32


def test_what_one_process_of_a_race_derives_the_others_read_and_a_kept_race_does_not_carry(tmp_path):
    race, worker = tmp_path / "race", tmp_path / "worker-cache"
    share_derived_cache(race, ["node0", "node1", "spectator0"], worker)
    CacheDir.in_data_dir(race / "node0").write(ENTRY, b"derived once")
    assert CacheDir.in_data_dir(race / "node1").read(ENTRY) == b"derived once"
    assert CacheDir.in_data_dir(race / "spectator0").read(ENTRY) == b"derived once"
    assert (worker / ENTRY).read_bytes() == b"derived once"  # the worker's cache outlives the race's directory
    (race / "node0" / "events.jsonl").write_text("{}\n")
    with tarfile.open(fileobj=io.BytesIO(_pack(race))) as packed:
        assert packed.getnames() == ["node0/events.jsonl"]
