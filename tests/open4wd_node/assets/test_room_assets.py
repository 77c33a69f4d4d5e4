"""The room's asset checks and notices over real admitted assets (built-ins and content ids)."""

from dataclasses import replace

import pytest

from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.cars import CarChoice
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.assets.room_assets import NodeRoomAssets
from protocol.errors import ProtocolError
from protocol.room.config import MatchConfig
from sim_core.assets.builtins import builtin_bytes
from tests.coded import raises_coded

PEER = "z6MkTestPeer0001"


def assets_with(tmp_path, **config):
    return NodeRoomAssets(AssetStore(tmp_path / "assets"), replace(DEFAULTS, **config))


@pytest.mark.parametrize("archetype", ["speed", "heavy", "control"])
def test_every_archetype_is_a_legal_car(tmp_path, archetype):
    assets_with(tmp_path).check_rotation(PEER, CarChoice.parse(archetype).rotation(2))


def test_content_id_parts_need_the_store_and_pass_once_stored(tmp_path):
    assets = assets_with(tmp_path)
    data = builtin_bytes("builtin:motor-01")
    import hashlib

    cid = hashlib.sha256(data).hexdigest()
    car = dict(CarChoice.parse("speed").rotation(1)[0], motor=cid)
    assert assets.missing_assets(assets.rotation_refs([car])) == [cid]
    with pytest.raises(ProtocolError) as info:
        assets.check_rotation(PEER, [car])
    assert info.value.code == "asset-missing"
    assets.store.put(data)
    assets.check_rotation(PEER, [car])


def test_minimum_version_makes_a_content_asset_unusable(tmp_path):
    assets = assets_with(tmp_path, asset_min_versions={"motor": 2})
    cid = assets.store.put(builtin_bytes("builtin:motor-01"))
    car = dict(CarChoice.parse("speed").rotation(1)[0], motor=cid)
    with pytest.raises(ProtocolError) as info:
        assets.check_rotation(PEER, [car])
    assert info.value.code == "asset-version-unusable" and info.value.message == f"asset-version-unusable:{cid}"
    # built-ins are skipped
    assets_with(tmp_path, asset_min_versions={"motor": 2}).check_rotation(PEER, CarChoice.parse("speed").rotation(1))


def test_bad_cars_are_coded(tmp_path):
    assets = assets_with(tmp_path)
    for car, code in (
        ("not a car", "loadout-invalid"),
        (dict(CarChoice.parse("speed").rotation(1)[0], tires={"FL": "builtin:tire-01"}), "loadout-missing-part"),
        (dict(CarChoice.parse("speed").rotation(1)[0], motor="builtin:tire-01"), "loadout-part-type-mismatch"),
        (dict(CarChoice.parse("speed").rotation(1)[0], body="builtin:body-02"), "loadout-part-mass-ratio"),
    ):
        with pytest.raises(ProtocolError) as info:
            assets.check_rotation(PEER, [car])
        assert info.value.code == code


def test_deprecated_material_notice_names_no_material(tmp_path):
    config = MatchConfig.uniform("builtin:track-02", 1)
    quiet = assets_with(tmp_path).notices(config, [CarChoice.parse("speed").rotation(1)])
    assert quiet == []
    loud = assets_with(tmp_path, deprecated_materials=("asphalt",)).notices(config, [CarChoice.parse("speed").rotation(1)])
    assert [kind for kind, _ in loud] == ["deprecated-material"] and "asphalt" not in loud[0][1]


def test_schema_notices_from_synthetic_versions(tmp_path):
    """Real admitted assets, their schema version rewritten (every shipped asset is v1 today)."""
    assets = assets_with(tmp_path, asset_walls={"motor": (3,)})
    motors = []
    for version, ref in ((1, "builtin:motor-01"), (3, "builtin:motor-02")):
        cid = assets.store.put(builtin_bytes(ref))
        admitted = assets.resolve(cid)
        assets._admitted[cid] = replace(admitted, manifest={**admitted.manifest, "asset_schema_version": version})
        motors.append(dict(CarChoice.parse("speed").rotation(1)[0], motor=cid))
    notices = assets.notices(MatchConfig.uniform("builtin:track-02", 1), [[motors[0]], [motors[1]]])
    assert [kind for kind, _ in notices] == ["downgrade"] and "motor" in notices[0][1]
    drift = assets_with(tmp_path)
    drift._admitted = assets._admitted
    notices = drift.notices(MatchConfig.uniform("builtin:track-02", 1), [[motors[0]], [motors[1]]])
    assert [k for k, _ in notices] == ["schema-drift"]


def test_track_digests_refuse_a_part_as_track(tmp_path):
    assets = assets_with(tmp_path)
    assert len(assets.track_digests(MatchConfig.uniform("builtin:track-01", 2))) == 2
    with pytest.raises(ProtocolError) as info:
        assets.track_digests(MatchConfig.uniform("builtin:motor-01", 1))
    assert info.value.code == "config-invalid"


def test_car_choice_per_round_lists_and_single_cars(tmp_path):
    import json

    from open4wd_node.runtime.errors import UserError

    two = tmp_path / "two.json"
    two.write_text(json.dumps([CarChoice.parse("speed").cars[0], CarChoice.parse("control").cars[0]]))
    choice = CarChoice.parse(str(two))
    assert choice.per_round and [c["motor"] for c in choice.rotation(2)] == ["builtin:motor-01", "builtin:motor-03"]
    with pytest.raises(UserError) as info:
        choice.rotation(3)
    assert info.value.code == "car-invalid"
    assert CarChoice.parse("heavy").rotation(3) == [CarChoice.parse("heavy").cars[0]] * 3
    for bad, code in (("[]", "car-invalid"), ("[1]", "car-invalid"), ("{", "json-invalid"), ("7", "car-invalid")):
        (tmp_path / "bad.json").write_text(bad)
        with raises_coded(UserError, code):
            CarChoice.parse(str(tmp_path / "bad.json"))
