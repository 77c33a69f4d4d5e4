"""Every parameter, field or attribute that holds a peer is typed ``PeerId``, not ``str`` (docs/protocol.md,
"Identity"): a name that means a peer, annotated ``str`` in the product, fails here unless it is one of the
deliberate exceptions below, each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.layout import REPO_ROOT

PEER_NAMES = frozenset({"peer", "peer_id", "sender", "signer", "me", "host_peer", "host_peer_id", "from_peer",
                        "successor", "culprit", "voter", "dialer"})
PACKAGES = ("protocol", "open4wd_node", "fuzz")
DELIBERATE = {
    ("protocol/identity/keys.py", "peer_id"): "the parser's input, not yet proven a PeerId",
    ("protocol/versions/record.py", "peer_id"): "short_peer formats any text, also a record's claimed sender",
    ("open4wd_node/view/room_view.py", "peer"): "a display row read back from the JSON events",
    ("open4wd_node/view/live_model.py", "peer"): "a display row read back from the JSON events",
    ("open4wd_node/view/replay_film.py", "peer"): "a replay page's label of a log's racer",
    ("open4wd_node/demo/view.py", "peer"): "the demo's display name of a JSON event's racer",
}


def str_typed_peers(path: Path) -> list[tuple[str, int]]:
    """``(name, line)`` of every argument or annotated assignment named like a peer and annotated ``str``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.arg):
            name, annotation = node.arg, node.annotation
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, (ast.Name, ast.Attribute)):
            name = node.target.id if isinstance(node.target, ast.Name) else node.target.attr
            annotation = node.annotation
        else:
            continue
        if name in PEER_NAMES and annotation is not None and ast.unparse(annotation) in {"str", "str | None"}:
            found.append((name, node.lineno))
    return found


def test_no_peer_is_typed_as_a_plain_string():
    offending = []
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            relative = path.relative_to(REPO_ROOT).as_posix()
            offending += [f"{relative}:{line} {name}: str" for name, line in str_typed_peers(path)
                          if (relative, name) not in DELIBERATE]
    assert offending == []


def test_the_scan_finds_a_string_typed_peer(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("class A:\n    sender: str\n\ndef f(peer: str, peer_id: 'PeerId', other: str) -> None: ...\n"
                      "def g(me: str | None) -> None: ...\n")
    assert str_typed_peers(source) == [("sender", 2), ("peer", 4), ("me", 5)]


def test_every_deliberate_exception_still_exists():
    """An exception whose code went away is removed from the list, so the list never excuses new code."""
    for relative, name in DELIBERATE:
        assert name in {found for found, _ in str_typed_peers(REPO_ROOT / relative)}, (relative, name)
