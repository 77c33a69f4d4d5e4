"""``open4wd-node version``: the six compared fields and the diagnostics, as text or the spec's JSON; the text
also says which parts of this install run compiled, which the spec's JSON record has no field for, and
``--build`` prints the build record (what the build compiled, from which commit) as JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Print this node's version record (text, or the spec's JSON), or its build record; exit 0."""
    import json

    from open4wd_node.runtime.build_info import build_record, compiled_summary, own_version_info
    from sim_core.compiled import compiled_modules

    if args.build:
        record = build_record()
        print(json.dumps({"record": None if record is None else record.to_json(), "running_compiled": compiled_modules()}))
        return 0
    info = own_version_info(ctx.config.economy_config_version)
    if args.json:
        print(json.dumps(info.to_wire(), sort_keys=False))
        return 0
    print(f"open4wd-node {info.client_version}")
    for name, value in info.to_wire().items():
        if name != "client_version":
            print(f"  {name:<24} {value}")
    print(f"  {'compiled':<24} {compiled_summary()}")
    return 0


def register(subparsers: Subparsers) -> None:
    """Declare ``version`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("version", help="print this node's version record (the six compared fields)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print the ClientVersionInfo object (8 keys)")
    shape.add_argument("--build", action="store_true",
                       help="print what this install's build produced (compiled modules, commit) and what runs "
                            "compiled now, as JSON")
    parser.set_defaults(run=run)
