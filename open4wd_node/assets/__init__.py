"""Assets on this node: the content store, the derived cache's folder, transfer between members, the room's checks, cars."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "CacheDir": "cache_dir",
    "CarChoice": "cars",
    "loadout_file": "cars",
    "NodeRoomAssets": "room_assets",
    "asset_materials": "room_assets",
    "policy_from_config": "room_assets",
    "AssetStore": "store",
    "content_id": "store",
    "AssetTransfer": "transfer",
    "relay_to": "transfer",
})
