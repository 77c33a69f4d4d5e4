"""Saved-state evidence files: a state written after a vote mismatch, readable without its world.

    file = msgpack {kind: "saved-state", version: 1, matchId, round, frame, node, fields: [name…], state: bytes}

``fields`` names the state's i64 values in saved order (``World.field_names``), so ``state-diff`` can
compare two nodes' states of one frame by name with nothing but the two files. Two states of different
matches, rounds or frames still compare, with a warning: their differences are expected, not a desync.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import msgpack

from open4wd_node.runtime.errors import UserError

STATE_HEADER_BYTES = 40  # magic, version, car count, topology digest (sim_core.state.codec)
MAX_STATE_FILE_BYTES = 8 * 1024 * 1024


def write_state_file(path: Path, *, match_id: str, round_index: int, frame: int, node: str,
                     fields: list[str], state: bytes) -> None:
    """Write one saved-state file (the layout in the module docstring); ``OSError`` propagates."""
    body = {"kind": "saved-state", "version": 1, "matchId": match_id, "round": round_index, "frame": frame,
            "node": node, "fields": fields, "state": state}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(msgpack.packb(body, use_bin_type=True))


def read_state_file(path: Path) -> dict[str, Any]:
    """A saved-state file's fields, with its i64 ``values`` decoded; ``UserError``
    ``state-file-unreadable`` or ``state-file-invalid``."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError("state-file-unreadable", f"cannot read {path}: {exc.strerror}") from None
    try:
        body = msgpack.unpackb(data[:MAX_STATE_FILE_BYTES + 1], raw=False)
    except (ValueError, TypeError, msgpack.exceptions.UnpackException):
        body = None
    if not isinstance(body, dict) or body.get("kind") != "saved-state" or not isinstance(body.get("state"), bytes) \
            or not isinstance(body.get("fields"), list):
        raise UserError("state-file-invalid", f"{path} is not a saved-state file")
    count = (len(body["state"]) - STATE_HEADER_BYTES) // 8
    if count != len(body["fields"]) or count < 0:
        raise UserError("state-file-invalid", f"{path}: {count} values but {len(body['fields'])} field names")
    body["values"] = struct.unpack_from(f"<{count}q", body["state"], STATE_HEADER_BYTES)
    return body


def state_differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(field, value in A, value in B) for every differing field, in saved order; the layouts must
    match. All of them: whether the states are identical never depends on how many are shown."""
    if a["fields"] != b["fields"]:
        raise UserError("state-layout-mismatch", "the two states are of different worlds (their fields differ)")
    return [(name, x, y) for name, x, y in zip(a["fields"], a["values"], b["values"], strict=True) if x != y]


def context_warnings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """One sentence per way the two states are not of the same moment (match, round, frame)."""
    return [
        f"the states are of different {what} (A: {a.get(key)}, B: {b.get(key)}); differences between them are "
        f"expected and do not show a desync"
        for key, what in (("matchId", "matches"), ("round", "rounds"), ("frame", "frames"))
        if a.get(key) != b.get(key)
    ]
