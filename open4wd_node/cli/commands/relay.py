"""``open4wd-node relay``: run a relay for nodes that cannot be reached directly (docs/relay.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from open4wd_node.runtime.addresses import LISTEN, METRICS_ADDRESS

FROM_CONFIG = object()  # --metrics not given: the [relay] table's, or the default (argparse leaves a non-string as it is)

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Relay until SIGTERM or SIGINT, then drain (exit 128 + signal). ``UserError`` for a bad ``[relay]``
    table or an address that cannot be bound."""
    from dataclasses import replace

    import trio

    from open4wd_node.relay.config import relay_settings
    from open4wd_node.relay.daemon import run_relay
    from open4wd_node.runtime.config import RELAY_TABLE, read_toml
    from open4wd_node.events.sink import EventSink
    from protocol.identity.keys import load_or_create_identity

    table = read_toml(ctx.config_path).get(RELAY_TABLE, {}) if ctx.config_path is not None else {}  # a table: checked
    settings = relay_settings(table)
    if args.relay_listen is not None:
        settings = replace(settings, listen=args.relay_listen)
    if args.relay_metrics is not FROM_CONFIG:
        settings = replace(settings, metrics=args.relay_metrics)
    identity, _ = load_or_create_identity(ctx.identity_path)
    status: int = trio.run(run_relay, identity, settings, EventSink(as_json=args.json))
    return status


def register(subparsers: Subparsers) -> None:
    """Declare ``relay`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("relay", help="relay circuits for nodes that cannot be reached directly")
    parser.add_argument("--listen", dest="relay_listen", type=LISTEN, default=None, metavar="HOST:PORT",
                        help="where nodes reach the relay [key relay.listen, default \"0.0.0.0:4100\"]")
    parser.add_argument("--metrics", dest="relay_metrics", type=METRICS_ADDRESS, default=FROM_CONFIG, metavar="HOST:PORT",
                        help="Prometheus /metrics and /healthz; empty = off [key relay.metrics, default \"127.0.0.1:9464\"]")
    parser.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    parser.set_defaults(run=run, logs=True)
