"""``open4wd-node identity show|new|import``: the node's Ed25519 identity and its BIP39 backup."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


MAX_MNEMONIC_BYTES = 4096  # 24 words of at most 8 letters are under 220 bytes; room for any spacing


def _show(args: argparse.Namespace, ctx: NodeContext) -> int:
    from protocol.identity.keys import load_or_create_identity

    identity, created = load_or_create_identity(ctx.identity_path)
    record = {"peer_id": identity.peer_id, "key_file": str(ctx.identity_path), "created": created}
    if args.json:
        print(json.dumps(record))
    else:
        if created:
            print(f"created a new identity in {ctx.identity_path} (mode 0600)", file=sys.stderr)
        print(identity.peer_id)
    return 0


def _new(args: argparse.Namespace, ctx: NodeContext) -> int:
    from protocol.identity.keys import Identity, new_mnemonic, seed_from_mnemonic, write_identity_file

    mnemonic = new_mnemonic(args.words)
    identity = Identity(seed_from_mnemonic(mnemonic))
    write_identity_file(ctx.identity_path, identity, overwrite=args.force)
    if args.json:
        print(json.dumps({"peer_id": identity.peer_id, "key_file": str(ctx.identity_path), "mnemonic": mnemonic}))
    else:
        print(identity.peer_id)
        print("Write these words down; they are the only way to restore this identity:", file=sys.stderr)
        print(mnemonic)
    return 0


def _import(args: argparse.Namespace, ctx: NodeContext) -> int:
    from open4wd_node.runtime.user_files import STDIN, UserFile, display_path
    from protocol.identity.keys import Identity, seed_from_mnemonic, write_identity_file

    words = UserFile("the mnemonic file", MAX_MNEMONIC_BYTES, "mnemonic-unreadable", "mnemonic-invalid", "mnemonic-invalid")
    if args.mnemonic_file is None:
        mnemonic = words.text(words.read_stdin(), STDIN)
    else:
        mnemonic = words.text(words.read(args.mnemonic_file), display_path(args.mnemonic_file))
    identity = Identity(seed_from_mnemonic(mnemonic))
    write_identity_file(ctx.identity_path, identity, overwrite=args.force)
    if args.json:
        print(json.dumps({"peer_id": identity.peer_id, "key_file": str(ctx.identity_path)}))
    else:
        print(identity.peer_id)
    return 0


def register(subparsers: Subparsers) -> None:
    """Declare ``identity`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("identity", help="show, create or import this node's identity")
    actions = parser.add_subparsers(dest="identity_action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="print the PeerId (creating the identity on first use)")
    show.set_defaults(run=_show)
    new = actions.add_parser("new", help="create a fresh identity and print its BIP39 backup words")
    new.add_argument("--words", type=int, choices=(12, 24), default=24, help="mnemonic length")
    new.set_defaults(run=_new)
    imp = actions.add_parser("import", help="restore an identity from BIP39 words (read from stdin or a file)")
    imp.add_argument("--mnemonic-file", default=None, help="file holding the words (default: stdin)")
    imp.set_defaults(run=_import)
    for sub in (show, new, imp):
        sub.add_argument("--json", action="store_true", help="print one JSON object")
    for sub in (new, imp):
        sub.add_argument("--force", action="store_true", help="replace an existing identity")
