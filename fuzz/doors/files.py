"""Files a user hands the node, read from real files the way its commands read them: a loadout JSON
(``--car FILE``, ``asset loadout``), the TOML configuration (``--config``), a race log (``replay``) and
two saved-state files (``state-diff``)."""

from __future__ import annotations

import functools
from pathlib import Path

from fuzz.harness import Target, frames, scratch_dir
from open4wd_node.assets.cars import CarChoice, loadout_file
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.assets.store import AssetStore
from open4wd_node.race.replay import replay
from open4wd_node.race.state_files import context_warnings, read_state_file, state_differences
from open4wd_node.runtime.config import DEFAULTS, load_config
from protocol.errors import ProtocolError
from protocol.identity.keys import PeerId
from sim_core.assets.loadout import assemble

FIXTURES = Path(__file__).parent.parent / "fixtures"
PEER = PeerId("z6MkFuzzLoadoutPeer")


@functools.cache
def _assets() -> NodeRoomAssets:
    """The node's asset view over a store holding the race-log fixture's track (a real baked GLB)."""
    store = AssetStore(scratch_dir("files") / "assets")
    for glb in sorted(FIXTURES.glob("*.glb")):
        store.put(glb.read_bytes())
    return NodeRoomAssets(store, DEFAULTS)


def _file(name: str, data: bytes) -> Path:
    path = scratch_dir("files") / name
    path.write_bytes(data)
    return path


def loadout_once(data: bytes) -> None:
    """As ``--car FILE`` (the car a room checks) and as ``asset loadout FILE`` (assembly, with findings)."""
    path = _file("car.json", data)
    assets = _assets()
    choice = CarChoice.parse(str(path))
    try:
        assets.check_rotation(PEER, choice.rotation(len(choice.cars)))
    except ProtocolError:
        pass  # a car that cannot race: refused with its code
    loadout = loadout_file("the loadout file").read(str(path))
    if isinstance(loadout, dict):
        assemble(loadout, assets.store.admitted)


def config_once(data: bytes) -> None:
    """As ``--config FILE``."""
    load_config(_file("node.toml", data))


def race_log_once(data: bytes) -> None:
    """As ``replay LOG`` (the log's track is in the store)."""
    replay(_file("race.o4wlog", data), _assets())


def state_files_once(data: bytes) -> None:
    """As ``state-diff A B``: the input's first frame is file A, the bytes after it file B."""
    first = next(frames(data), b"")
    a = read_state_file(_file("a.state", first))
    b = read_state_file(_file("b.state", data[2 + len(first) :]))
    context_warnings(a, b)
    state_differences(a, b)


TARGETS = {
    "loadout": Target("loadout", loadout_once, "a loadout JSON file"),
    "config-toml": Target("config-toml", config_once, "the TOML configuration"),
    "race-log": Target("race-log", race_log_once, "a race log, replayed"),
    "state-file": Target("state-file", state_files_once, "two saved-state files, compared"),
}
