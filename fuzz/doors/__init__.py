"""One fuzz target per door, by name (each module imported only when its targets are asked for)."""

from __future__ import annotations

import importlib

from fuzz.harness import Target

MODULES = {  # target name -> the module under fuzz.doors that defines it
    "wire-handshake": "wire", "wire-room": "wire", "wire-race": "wire",
    "link-handshake": "link", "link-sealed": "link",
    "invitation": "invitation",
    "room-host": "room", "room-member": "room",
    "race-session": "race",
    "glb-container": "assets", "glb-reader": "assets", "glb-admission": "assets", "glb-bake": "assets",
    "loadout": "files", "config-toml": "files", "race-log": "files", "state-file": "files",
    "control-api": "control",
    "spectate-source": "spectate", "spectate-viewer": "spectate",
    "signal-server": "signaling", "signal-client": "signaling",
    "webrtc-chunks": "webrtc", "webrtc-sdp": "webrtc",
}


def target(name: str) -> Target:
    """The target called ``name``; ``KeyError`` naming the choices for any other name."""
    if name not in MODULES:
        raise KeyError(f"no fuzz target {name!r}; targets: {', '.join(MODULES)}")
    module = importlib.import_module(f"fuzz.doors.{MODULES[name]}")
    found: Target = module.TARGETS[name]
    return found
