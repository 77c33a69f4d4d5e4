"""``open4wd-node state-diff A B``: the first fields two saved states of one frame disagree on.

``--limit`` (at least 1) only bounds how many differing fields are shown: the verdict and the count
``differing_fields`` always cover all of them. Two states of different matches, rounds or frames are
compared with a warning on stderr and in ``warnings``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from open4wd_node.runtime.values import IntRange

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


LIMIT = IntRange(1, 100_000)


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Print the fields two saved states differ in; exit 0 when identical, 1 when not. ``UserError``
    ``state-file-*`` for an unreadable file, ``state-layout-mismatch`` for states of different worlds."""
    import json
    import sys
    from pathlib import Path

    from open4wd_node.race.state_files import context_warnings, read_state_file, state_differences

    a, b = read_state_file(Path(args.a)), read_state_file(Path(args.b))
    differences = state_differences(a, b)
    shown = differences[:args.limit]
    warnings = context_warnings(a, b)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        print(json.dumps({
            "a": {"node": a.get("node"), "match": a.get("matchId"), "round": a.get("round"), "frame": a.get("frame")},
            "b": {"node": b.get("node"), "match": b.get("matchId"), "round": b.get("round"), "frame": b.get("frame")},
            "warnings": warnings,
            "identical": not differences,
            "differing_fields": len(differences),
            "differences": [{"field": f, "a": x, "b": y} for f, x, y in shown],
        }))
    elif not differences:
        print(f"identical: {_at(a)}")
    else:
        print(f"A: node …{str(a.get('node'))[-4:]} {_at(a)}; B: node …{str(b.get('node'))[-4:]} {_at(b)}")
        for field, x, y in shown:
            print(f"  {field:<28} A {x:>16}   B {y:>16}   (B − A = {y - x})")
        if len(differences) > len(shown):
            print(f"  … and {len(differences) - len(shown)} more differing fields (--limit {args.limit})")
    return 0 if not differences else 1


def _at(state: dict[str, Any]) -> str:
    """Where a saved state was taken, rounds 1-based as in every readable text (JSON keeps the index)."""
    from open4wd_node.events.text import round_text

    index = state.get("round")
    return f"{round_text(index) if isinstance(index, int) else 'round ?'} frame {state.get('frame')}"


def register(subparsers: Subparsers) -> None:
    """Declare ``state-diff`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("state-diff", help="compare two saved states (written after a checksum mismatch)")
    parser.add_argument("a", metavar="A", help="a saved-state file")
    parser.add_argument("b", metavar="B", help="another node's saved state of the same frame")
    parser.add_argument("--limit", type=LIMIT, default=16, help="show at most this many differing fields")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
