"""``open4wd-node asset``: validate, bake, inspect and import GLB assets; check loadouts; list the built-ins.

Every FILE may be a path, a ``builtin:<type>-NN`` ref, or the content id of an asset in the local store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Run the ``asset`` action the command line named; its exit status (1: refused)."""
    from open4wd_node.cli.asset_actions import ACTIONS

    return ACTIONS[args.asset_command](args, ctx)


def register(subparsers: Subparsers) -> None:
    """Declare ``asset`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("asset", help="validate, bake, inspect and import GLB assets; list built-ins")
    parser.set_defaults(run=run)
    sub = parser.add_subparsers(dest="asset_command", required=True, metavar="ACTION")
    validate = sub.add_parser("validate", help="check assets and print coded findings (exit 0 accepted, 1 rejected)")
    validate.add_argument("files", nargs="+", metavar="FILE", help="GLB path, builtin:<type>-NN ref or stored content id")
    validate.add_argument("--json", action="store_true", help="print one JSON object")
    validate.add_argument("--unbaked", action="store_true",
                          help="check an author's source file against the bake's rules instead of admission")
    bake_cmd = sub.add_parser("bake", help="finalize a GLB: marker, auto_* fields and the embedded physics manifest")
    bake_cmd.add_argument("input", metavar="IN")
    bake_cmd.add_argument("output", metavar="OUT")
    bake_cmd.add_argument("--json", action="store_true", help="print one JSON object (the baked file's ids, or the findings)")
    inspect = sub.add_parser("inspect", help="show an admitted asset's key figures (or its manifest with --json)")
    inspect.add_argument("file", metavar="FILE")
    inspect.add_argument("--json", action="store_true", help="print one JSON object with the whole manifest")
    imp = sub.add_parser("import", help="admit assets and add them to the local content-addressed store")
    imp.add_argument("files", nargs="+", metavar="FILE")
    imp.add_argument("--json", action="store_true", help="print one JSON object")
    loadout = sub.add_parser("loadout", help="assemble a loadout JSON file and check every loadout rule")
    loadout.add_argument("file", metavar="LOADOUT.json")
    loadout.add_argument("--json", action="store_true", help="print one JSON object")
    listing = sub.add_parser("builtin", help="list the 27 built-in assets shipped with this node, or export one as a GLB file")
    what = listing.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="list the built-in refs")
    what.add_argument("--export", nargs=2, metavar=("NAME", "FILE"),
                      help="write the built-in NAME (builtin:tire-01 or tire-01) to FILE, a GLB to edit or to inspect")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
