"""What each door's campaign instruments: the code that parses, validates and decides on what the door
feeds, not the code that merely runs because an input was accepted.

Coverage guidance is worth its cost where a branch depends on the input's bytes: decoders, validators,
the machines' rules. An instrumented simulation step or Noise handshake costs every execution that runs
it more (each basic block and comparison calls into atheris: on the same inputs the re-simulating doors
ran 1.4 to 2.2 times as many executions per CPU second with their scope, fuzz/README.md) and its edges
tell the fuzzer nothing about the input's handling: the step only runs what passed the rules, so its
new edges reward inputs for the race they describe rather than for how they are checked. Both still run,
uninstrumented, inside the door, so the invariant (only a ``CodedError`` escapes, the time limit, the
memory limit) holds over everything executed. fuzz/README.md says per door what is instrumented and why.

Scopes are module names or prefixes (``sim_core.assets`` takes its submodules). This module imports
nothing of the project: a module is instrumented when it is first imported, inside ``instrument``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path

_ERRORS = ("open4wd_base.errors", "protocol.errors", "sim_core.errors", "open4wd_node.runtime.errors")
_STRICT_WIRE = (*_ERRORS, "protocol.encoding", "msgpack")
_ROOM = (*_STRICT_WIRE, "protocol.room", "protocol.identity", "open4wd_node.assets.room_assets",
         "open4wd_node.assets.cars", "sim_core.assets.loadout")  # cars in join requests and ReadySets are assembled
_RACE = (*_STRICT_WIRE, "protocol.race", "protocol.identity.keys")
_GLB = (*_ERRORS, "sim_core.assets", "pygltflib")
_NET = (*_STRICT_WIRE, "open4wd_node.net.link", "open4wd_node.net.link_rules")

SCOPES: dict[str, tuple[str, ...]] = {
    "wire-handshake": _STRICT_WIRE,
    "wire-room": (*_STRICT_WIRE, "protocol.room.messages"),
    "wire-race": (*_STRICT_WIRE, "protocol.race.messages"),
    "link-handshake": (*_STRICT_WIRE, "protocol.link", "protocol.identity"),
    "link-sealed": (*_STRICT_WIRE, "protocol.link", "open4wd_node.net.link_rules", "protocol.room.messages"),
    "invitation": (*_ERRORS, "protocol.room.invitation"),
    "room-host": _ROOM,
    "room-member": _ROOM,
    "race-session": _RACE,
    "glb-container": (*_ERRORS, "sim_core.assets.container", "sim_core.assets.findings"),
    "glb-reader": _GLB,
    "glb-admission": _GLB,
    "glb-bake": _GLB,
    "loadout": (*_ERRORS, "open4wd_node.assets.cars", "open4wd_node.assets.room_assets", "open4wd_node.runtime.values",
                "sim_core.assets.loadout"),
    "config-toml": (*_ERRORS, "open4wd_node.runtime.config", "open4wd_node.runtime.values", "tomllib"),
    "race-log": (*_STRICT_WIRE, "open4wd_node.race.log", "open4wd_node.race.replay", "protocol.room.locked_start",
                 "protocol.room.config", "protocol.race.keys", "protocol.race.signing", "protocol.race.messages",
                 "protocol.versions", "sim_core.specs.inputs"),
    "state-file": (*_ERRORS, "open4wd_node.race.state_files", "msgpack"),
    "control-api": (*_ERRORS, "open4wd_node.drivers.control_api", "open4wd_node.drivers.external", "sim_core.specs.inputs"),
    "spectate-source": (*_STRICT_WIRE, "protocol.spectate"),
    "spectate-viewer": (*_STRICT_WIRE, "protocol.spectate", "protocol.race.keys", "protocol.race.votes"),
    "signal-server": (*_ERRORS, "protocol.signaling", "protocol.identity.signed"),
    "signal-client": (*_ERRORS, "protocol.signaling", "protocol.identity.signed"),
    "webrtc-chunks": (*_ERRORS, "protocol.webrtc.chunks"),
    "webrtc-sdp": (*_ERRORS, "protocol.webrtc.sdp", "protocol.encoding"),
}
"""Per door: the modules its campaign instruments."""

EVERYTHING = ("protocol", "sim_core", "open4wd_node", "open4wd_base", "msgpack", "pygltflib", "tomllib")
"""What every campaign instrumented before the scopes (measured against them: benchmarks/fuzz_cost.py)."""


def modules_of(package: str) -> Iterator[str]:
    """Every module of a top-level package or module, found on disk (importing nothing)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return
    if not spec.submodule_search_locations:
        yield package
        return
    for location in spec.submodule_search_locations:
        root = Path(location)
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            yield ".".join((package, *parts))


def within(module: str, scope: tuple[str, ...]) -> bool:
    """Whether ``module`` is one of ``scope``'s names or under one of them."""
    return any(module == prefix or module.startswith(prefix + ".") for prefix in scope)


def instrument(name: str, scope: tuple[str, ...] | None = None) -> list[str]:
    """Import door ``name`` with the modules of its scope instrumented (all of them imported now, so
    that a module the door imports lazily is instrumented too) and every other module of the same
    packages not; the instrumented modules' names."""
    import atheris

    scope = SCOPES[name] if scope is None else scope
    packages = sorted({prefix.split(".")[0] for prefix in scope})
    inside: list[str] = []
    outside: list[str] = []
    for package in packages:
        for module in modules_of(package):
            (inside if within(module, scope) else outside).append(module)
    # a package's __init__ runs when any module under it is imported: instrumented only if in scope itself
    with atheris.instrument_imports(include=packages, exclude=outside):
        for module in inside:
            importlib.import_module(module)
        from fuzz.doors import target

        target(name)
    return inside
