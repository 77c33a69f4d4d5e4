"""The example loadouts in docs/examples/ are legal cars that ``asset loadout`` accepts and a room races."""

from __future__ import annotations

import json

import pytest

from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.cars import CarChoice
from open4wd_node.cli.main import main
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.assets.room_assets import NodeRoomAssets
from tests.open4wd_node.race.nodes import race, short_track
from tests.layout import REPO_ROOT

EXAMPLES = REPO_ROOT / "docs" / "examples"
LOADOUTS = sorted(EXAMPLES.glob("loadout-*.json"))
PER_ROUND = EXAMPLES / "loadout-per-round.json"


def test_there_is_a_single_car_and_a_per_round_example():
    kinds = {path.name: CarChoice.parse(str(path)).per_round for path in LOADOUTS}
    assert False in kinds.values() and kinds[PER_ROUND.name] is True


@pytest.mark.parametrize("path", LOADOUTS, ids=lambda p: p.name)
def test_every_car_of_an_example_is_accepted_by_asset_loadout(tmp_path, capsys, path):
    cars = CarChoice.parse(str(path)).cars
    for number, car in enumerate(cars):
        single = tmp_path / f"car{number}.json"
        single.write_text(json.dumps(car))
        assert main(["--data-dir", str(tmp_path), "asset", "loadout", "--json", str(single)]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["accepted"] and not [f for f in report["findings"] if f["severity"] == "error"]
    choice = CarChoice.parse(str(path))
    NodeRoomAssets(AssetStore.in_data_dir(tmp_path), DEFAULTS).check_rotation("z", choice.rotation(len(cars)))


async def test_a_match_is_raced_with_the_example_cars(tmp_path, fast_clock):
    """``host --car loadout-per-round.json --rounds 3`` against ``join --car`` the single-car example."""
    rounds = len(json.loads(PER_ROUND.read_text()))
    single = next(path for path in LOADOUTS if path != PER_ROUND)
    recorders, codes = await race(tmp_path, 2, track_bytes=short_track(8.0), rounds=rounds,
                                  cars={0: str(PER_ROUND), 1: str(single)})
    assert codes == {0: 0, 1: 0}
    results = [rec.of("result")[0] for rec in recorders]
    assert {r["outcome"] for r in results} == {"finished"} and all(r["disagreements"] == 0 for r in results)
    assert len(recorders[0].of("round-end")) == rounds
