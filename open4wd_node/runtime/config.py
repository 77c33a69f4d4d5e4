"""Node configuration: built-in defaults, overridden by a TOML file, overridden by command-line flags.

Every key of ``NodeConfig`` is a setting with exactly one command-line flag (``Setting``): the flag
is declared from the key (``open4wd_node.cli.commands._settings``), so the two share one rule (a value
refused on one edge is refused on the other, in the same words) and one default (the flag's own
default is "not given", and the value then comes from the file, else from ``NodeConfig``).
Precedence: flag > configuration file > built-in default; a list flag adds to the file's list, a
table flag replaces the file's entries it names. ``configs/node.toml`` documents every key with its
default; tests keep it, the keys and the flags one to one.

A key is a setting of this node and its player (where it listens and is reached, who drives, how it
races and logs, which rules it plays by). What a room or a match is (track, rounds, laps, seats, car,
bot seed, faults, ready, spectate) is chosen per command and has no key.
"""

from __future__ import annotations

import argparse
import enum
import json
import tomllib
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from open4wd_node.runtime.addresses import ADVERTISE, AUTOMATIC, ICE_SERVER, IP_ADDRESS, LISTEN, SIGNAL_URL, Address, Advertise
from open4wd_node.runtime.choices import DRIVERS, FRAMES_PER_TICK, INPUT_DELAY, LOG_FORMATS, RACE_MODES, REACHABILITY
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.values import MAX_SAFE_INTEGER, PORT, IntRange, ListOf, OneOf, Rule, TableOf, Text, ValueRejected

VERSION = IntRange(1, MAX_SAFE_INTEGER)
SIGNAL_TABLE = "signal"  # the signaling service's settings (configs/signal.toml), not a node's key
SERVICE_TABLES = {SIGNAL_TABLE: ("the signaling service's", "configs/signal.toml")}
RETIRED_RELAY = {"relays": "the key relays", "relay": "the [relay] table"}
"""What configured the circuit relay of earlier versions, which coturn and the signaling service replaced:
named in a file, refused with ``config-relay-retired`` rather than ignored (a node configured to be reached
through a relay would otherwise be silently unreachable)."""


class Scope(enum.Enum):
    """Where the flag goes on the command line."""

    GLOBAL = "global"  # before the command: every command reads it
    ROOM = "room"  # on ``host`` and ``join``: the commands that run a node in a room


@dataclass(frozen=True)
class Setting:
    """How one configuration key is set on the command line."""

    flag: str
    rule: Rule
    help: str
    scope: Scope = Scope.GLOBAL
    metavar: str | None = None


def setting(default: Any, flag: str, rule: Rule, help: str, scope: Scope = Scope.GLOBAL, metavar: str | None = None) -> Any:
    """A ``NodeConfig`` field with its default and its command-line flag (kept in the field's metadata)."""
    meta = {"setting": Setting(flag, rule, help, scope, metavar)}
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class NodeConfig:
    """This node's settings: every field is a TOML key with one command-line flag (module docstring)."""

    economy_config_version: int = setting(
        1, "--economy-config-version", VERSION, "governance epoch this node plays under (one of the six version fields)",
        metavar="N")
    deprecated_materials: tuple[str, ...] = setting(
        (), "--deprecated-material", ListOf(Text(64)),
        "client-local deprecated material ids: a soft notice, never blocks, never sent (repeatable, adds to the file's)",
        metavar="ID[,ID…]")
    identity_file: str = setting(
        "", "--identity-file", Text(), "identity key file (a 32-byte seed, mode 0600); empty = <data-dir>/identity.key",
        metavar="PATH")
    asset_walls: dict[str, tuple[int, ...]] = setting(
        {}, "--asset-wall", TableOf(ListOf(VERSION, unique_sorted=True)),
        "asset schema versions that start a new compatibility class, per asset type (repeatable)", metavar="TYPE=V[,V…]")
    asset_yanked: dict[str, tuple[int, ...]] = setting(
        {}, "--asset-yanked", TableOf(ListOf(VERSION, unique_sorted=True)),
        "broken asset schema versions, never a downgrade target, per asset type (repeatable)", metavar="TYPE=V[,V…]")
    asset_min_versions: dict[str, int] = setting(
        {}, "--asset-min-version", TableOf(VERSION),
        "assets below this schema version are unusable, per asset type (repeatable)", metavar="TYPE=V")
    log_format: str = setting("console", "--log-format", OneOf(LOG_FORMATS), "log rendering on stderr")
    listen: Address = setting(
        Address("127.0.0.1", 0), "--listen", LISTEN,
        "where this node accepts links (the room, the race mesh, host succession); port 0 picks a free one; "
        "0.0.0.0 or :: listens on every interface (docs/network.md)", Scope.ROOM)
    advertise: Advertise = setting(
        AUTOMATIC, "--advertise", ADVERTISE,
        "the address put in invitations and announced to the room, when peers must dial another address than "
        "--listen (a public or forwarded address, a DNS name); empty = the listen address, or on a wildcard "
        "this machine's primary interface", Scope.ROOM)
    reachability: str = setting(
        "auto", "--reachability", OneOf(REACHABILITY),
        "how peers reach this node: direct (never through TURN), relay (no direct links: only over WebRTC "
        "through a TURN server; needs --signal and --ice-server turn:HOST:PORT), auto (direct, and over WebRTC "
        "with every ICE server given; docs/webrtc.md)", Scope.ROOM)
    signals: tuple[str, ...] = setting(
        (), "--signal", ListOf(SIGNAL_URL),
        "signaling services (open4wd-node signal or the spec's) where this node answers WebRTC offers and "
        "through which it opens WebRTC links, the first that answers (repeatable, adds to the file's; "
        "docs/webrtc.md); with a signaling service and no --listen a node accepts no TCP links", Scope.ROOM, "URL")
    ice_servers: tuple[str, ...] = setting(
        (), "--ice-server", ListOf(ICE_SERVER),
        "STUN and TURN servers of this node's WebRTC links (repeatable, adds to the file's); TURN credentials "
        "come from --turn-credentials, else from the signaling service's /turn-token", Scope.ROOM,
        "stun:HOST:PORT|turn:HOST:PORT")
    ice_hosts: tuple[str, ...] = setting(
        (), "--ice-host", ListOf(IP_ADDRESS),
        "the local addresses this node offers as WebRTC host candidates (repeatable); empty = every "
        "interface's address", Scope.ROOM, "IP")
    turn_credentials: str = setting(
        "", "--turn-credentials", Text(),
        "a file holding the TURN servers' username on its first line and credential on its second; empty = "
        "ask the signaling service's /turn-token", Scope.ROOM, "PATH")
    nickname: str = setting("player", "--nickname", Text(64), "name shown to the other members", Scope.ROOM, "NAME")
    driver: str = setting(
        "bot", "--driver", OneOf(DRIVERS),
        "who drives this node's car: the built-in bot, a game UI on the control API, or nobody", Scope.ROOM)
    mode: str = setting(
        "rollback", "--mode", OneOf(RACE_MODES),
        "rollback (predict missing inputs) or strict lockstep (wait for every input)", Scope.ROOM)
    input_delay: int = setting(0, "--input-delay", INPUT_DELAY, "local input delay in frames", Scope.ROOM, "FRAMES")
    frames_per_tick: int = setting(
        1, "--frames-per-tick", FRAMES_PER_TICK,
        "frames the race pump steps per wake-up, 1..4: more spends less CPU per frame but sends inputs in groups, "
        "up to N-1 frames later; in lockstep the input delay is at least N-1 (for headless nodes: soaks, bots; "
        "docs/node.md \"Frames per tick\")", Scope.ROOM, "N")
    control_port: int = setting(
        0, "--control-port", PORT,
        "control API port on 127.0.0.1 with --driver external (0 picks one; docs/drivers.md)", Scope.ROOM, "PORT")


DEFAULTS = NodeConfig()


def settings(scope: Scope | None = None) -> list[tuple[Field[Any], Setting]]:
    """Every key with its setting (of one scope), in declaration order."""
    found = [(f, f.metadata["setting"]) for f in fields(NodeConfig)]
    return [(f, s) for f, s in found if scope is None or s.scope is scope]


def _setting_of(key: str) -> Setting:
    return next(s for f, s in settings() if f.name == key)


def shown_default(value: Any) -> str:
    """A default as it is written in TOML."""
    if isinstance(value, (Address, Advertise, str)):
        return json.dumps(str(value))
    if isinstance(value, (tuple, dict)):
        return json.dumps(value)
    return str(value)


def config_from_mapping(data: dict[str, Any], base: NodeConfig = DEFAULTS) -> NodeConfig:
    """A configuration from a TOML document: every value checked by its key's rule. A ``[signal]`` table
    is the signaling service's (``open4wd_node.signal.config``); the retired relay's key and table are
    refused (``RETIRED_RELAY``)."""
    retired = [what for key, what in RETIRED_RELAY.items() if key in data]
    if retired:
        raise UserError("config-relay-retired", f"{' and '.join(retired)} configured the circuit relay (open4wd-node "
                                                "relay), which coturn and the signaling service replaced: remove it, "
                                                "and give --signal URL and --ice-server turn:HOST:PORT instead "
                                                "(docs/operators.md)")
    for table, (whose, example) in SERVICE_TABLES.items():
        if table in data and not isinstance(data[table], dict):
            raise UserError("config-invalid", f"{table} is {whose} table: write [{table}] and its keys under it "
                                              f"({example})")
    data = {key: value for key, value in data.items() if key not in SERVICE_TABLES}
    known = [f.name for f in fields(NodeConfig)]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise UserError("config-invalid", f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    values = {}
    for key, value in data.items():
        try:
            values[key] = _setting_of(key).rule.check(value)
        except ValueRejected as exc:
            raise UserError("config-invalid", f"option {key!r} {exc}") from None
    return replace(base, **values)


def flag_dest(key: str) -> str:
    """Where argparse keeps a setting's flag: apart from the commands' own options (``demo --mode``
    is the mode of the nodes a demo starts, not this node's ``mode`` key)."""
    return f"setting_{key}"


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on this command line (a repeated flag's occurrences combined)."""
    given = {}
    for f, s in settings():
        value = getattr(args, flag_dest(f.name), None)
        if value is not None:
            given[f.name] = s.rule.combine(value) if s.rule.repeatable else value
    return given


def with_settings(config: NodeConfig, given: dict[str, Any]) -> NodeConfig:
    """``config`` with command-line values: a flag wins over the file (``None`` = not given)."""
    values = {key: _setting_of(key).rule.merge(getattr(config, key), value) for key, value in given.items() if value is not None}
    return replace(config, **values)


def load_config(path: Path | None) -> NodeConfig:
    """The defaults, or the defaults overridden by the TOML file at ``path``."""
    if path is None:
        return DEFAULTS
    return config_from_mapping(read_toml(path))


def read_toml(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``; ``UserError`` ``config-unreadable`` or ``config-invalid``."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError("config-unreadable", f"cannot read {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError("config-invalid", f"{path} is not valid TOML: {exc}") from None
    return data
