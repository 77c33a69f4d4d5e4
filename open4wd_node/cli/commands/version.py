"""``open4wd-node version``: the six compared fields and the diagnostics, as text or the spec's JSON; the text
also says whether this install's step is compiled (setup.py), which the JSON record of the spec has no field for."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Print this node's version record (text, or the spec's JSON); exit 0."""
    import json

    from open4wd_node.runtime.build_info import own_version_info
    from sim_core.compiled import step_is_compiled

    info = own_version_info(ctx.config.economy_config_version)
    if args.json:
        print(json.dumps(info.to_wire(), sort_keys=False))
        return 0
    print(f"open4wd-node {info.client_version}")
    for name, value in info.to_wire().items():
        if name != "client_version":
            print(f"  {name:<24} {value}")
    print(f"  {'step':<24} {'compiled (mypyc)' if step_is_compiled() else 'interpreted'}")
    return 0


def register(subparsers: Subparsers) -> None:
    """Declare ``version`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("version", help="print this node's version record (the six compared fields)")
    parser.add_argument("--json", action="store_true", help="print the ClientVersionInfo object (8 keys)")
    parser.set_defaults(run=run)
