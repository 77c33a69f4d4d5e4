"""Compatibility: the six-field build version and its rule, version collection between members, asset schema versions."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "AssetVersionPolicy": "assets",
    "VersionCheckReport": "assets",
    "compatibility_class": "assets",
    "downgrade_target": "assets",
    "effective_min": "assets",
    "pre_race_version_check": "assets",
    "ArmTimer": "collection",
    "Broadcast": "collection",
    "CollectionFinished": "collection",
    "CollectorAction": "collection",
    "Unicast": "collection",
    "VersionCollector": "collection",
    "VersionInfoMessage": "collection",
    "VersionRequest": "collection",
    "answer_version_request": "collection",
    "ClientVersionInfo": "record",
    "CompatibilityReport": "record",
    "check_compatibility": "record",
    "describe_incompatibility": "record",
    "field_differences": "record",
    "incompatibility_reasons": "record",
    "node_version_info": "record",
    "short_peer": "record",
})
