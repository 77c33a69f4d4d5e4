"""This node's own six-field version record (ARCHITECTURE §5)."""

from __future__ import annotations

import os
from pathlib import Path

import sim_core
from protocol.versions.record import ClientVersionInfo, node_version_info

COMMIT_ENV = "OPEN4WD_COMMIT_HASH"


def build_timestamp_ms() -> int:
    """Diagnostic only (never compared): when this installed copy of the node was written."""
    return int(Path(__file__).stat().st_mtime * 1000)


def own_version_info(economy_config_version: int) -> ClientVersionInfo:
    """This node's version record for the room's compatibility check: the engine id and the
    configured governance epoch, plus diagnostics (build time, ``$OPEN4WD_COMMIT_HASH``)."""
    return node_version_info(
        engine_id=sim_core.ENGINE_ID,
        economy_config_version=economy_config_version,
        build_timestamp=build_timestamp_ms(),
        commit_hash=os.environ.get(COMMIT_ENV, "unknown"),
    )
