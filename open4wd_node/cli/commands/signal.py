"""``open4wd-node signal``: run the Open4WD signaling service (WebSocket wire, TURN credentials) that relay
operators run next to coturn (docs/signaling.md, docs/operators.md). Every key of the ``[signal]`` table
(``configs/signal.toml``) is also a flag here; a flag wins over the file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from open4wd_node.signal.config import KEYS

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


NOT_GIVEN = object()
"""A single-valued flag not on the command line (argparse keeps a default that is no string as it is): the
``[signal]`` table's value, or the default, applies. An empty ``--metrics`` is given, as None: off."""


def flag_dest(key: str) -> str:
    """Where argparse keeps the flag of ``key`` (apart from the global settings)."""
    return f"signal_{key}"


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Serve until SIGTERM or SIGINT, then drain (exit 128 + signal). ``UserError`` for a bad ``[signal]``
    table, a bad TURN secret file, or an address that cannot be bound."""
    import trio

    from open4wd_node.runtime.config import read_toml
    from open4wd_node.runtime.errors import UserError
    from open4wd_node.signal.config import SIGNAL_TABLE, signal_settings
    from open4wd_node.signal.daemon import run_signal
    from open4wd_node.events.sink import EventSink

    table = read_toml(ctx.config_path).get(SIGNAL_TABLE, {}) if ctx.config_path is not None else {}
    if not isinstance(table, dict):
        raise UserError("config-invalid", f"{SIGNAL_TABLE} is the signaling service's table: write [{SIGNAL_TABLE}] "
                                          "and its keys under it (configs/signal.toml)")
    given = {}
    for key, spec in KEYS.items():
        value = getattr(args, flag_dest(key))
        if spec.rule.repeatable and value is not None:
            given[key] = spec.rule.combine(value)
        elif not spec.rule.repeatable and value is not NOT_GIVEN:
            given[key] = value
    settings = signal_settings(table, given)
    status: int = trio.run(run_signal, settings, EventSink(as_json=args.json))
    return status


def register(subparsers: Subparsers) -> None:
    """Declare ``signal`` and one flag per ``[signal]`` key (nothing heavy is imported here)."""
    import json

    parser = subparsers.add_parser("signal", help="run the signaling service (WebSocket wire, /turn-token) for WebRTC peers")
    for key, spec in KEYS.items():
        parser.add_argument(spec.flag, dest=flag_dest(key), type=spec.rule,
                            action="append" if spec.rule.repeatable else "store",
                            default=None if spec.rule.repeatable else NOT_GIVEN,
                            metavar=spec.metavar or spec.rule.metavar,
                            help=f"{spec.help} [key signal.{key}, default {json.dumps(spec.default)}]")
    parser.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    parser.set_defaults(run=run, logs=True)
