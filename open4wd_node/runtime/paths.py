"""Where a node keeps its identity, stores and logs: one data directory per node."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "OPEN4WD_DATA_DIR"


def default_data_dir() -> Path:
    """``$OPEN4WD_DATA_DIR``, else the XDG data home, so several nodes can run side by side."""
    explicit = os.environ.get(DATA_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "open4wd-node"
