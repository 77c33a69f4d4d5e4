"""What a node tells its user: one JSON object per line (``--json``), or readable lines.

Every event has an ``event`` key; the names are the stable ``--json`` interface (README). PeerIds in
the readable form are shortened to their last 4 characters, as the spec's own messages do.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


def short(peer: object) -> str:
    return f"…{peer[-4:]}" if isinstance(peer, str) and len(peer) > 4 else str(peer)


def _text(event: str, d: dict[str, Any]) -> str | None:
    if event == "room-created":
        lines = [f"room {d['room_id']} is open; share an invitation:"]
        lines += [f"  {role:<11} {invite}" for role, invite in d.get("invites", {}).items()]
        return "\n".join(lines)
    if event == "compatibility":
        if d["compatible"]:
            return f"version check {short(d['peer'])}: compatible"
        detail = "; ".join(d.get("differences") or d["reasons"])
        return f"version check {short(d['peer'])}: INCOMPATIBLE ({detail})"
    if event == "member-joined":
        return f"+ {short(d['peer'])} joined as {d.get('role', 'participant')} ({d.get('nickname', '')})"
    if event == "member-left":
        return f"- {short(d['peer'])} left ({d.get('reason', 'link closed')})"
    if event == "notice":
        return f"notice [{d['kind']}]: {d['text']}"
    if event == "ready":
        return f"{short(d['peer'])} is {'ready' if d['ready'] else 'not ready'}"
    if event == "countdown":
        return f"start locked: match {d['match_id'][:12]}…, countdown 5 s"
    if event == "match-start":
        roster = ", ".join(short(p) for p in d["roster"])
        return f"match {d['match_id']} started with {roster}"
    if event == "error":
        return f"error[{d['code']}]: {d['message']}"
    if event == "race-start":
        return f"round {d['round'] + 1}: racing from start slot {d['slot'] + 1} of {len(d['roster'])}"
    if event == "checksum":
        return None if d["agreed"] else f"frame {d['frame']}: the state hashes did NOT agree"
    if event == "round-end":
        rows = ", ".join(f"{r['rank']}. {short(r['peer'])} ({r['points']} pts)" for r in d["standings"])
        return f"round {d['round'] + 1} over at frame {d['frame']}: {rows}"
    if event == "match-end":
        rows = "\n".join(f"  {r['rank']}. {short(r['peer'])}  {r['points']} pts" for r in d["results"])
        return f"match over ({d['outcome']}):\n{rows}"
    if event == "result":
        return (f"{d['agreed_hashes']} state hashes agreed, {d['disagreements']} disagreed; "
                f"worst lag {d['max_lag']} frames; race log {d['log']}")
    if event == "leave":
        return f"{short(d['peer'])} left the race ({d['reason']})"
    if event == "session-end":
        return f"the race ended for this node: {d['reason']} ({d['detail']})"
    rest = ", ".join(f"{k}={v}" for k, v in d.items())
    return f"{event}: {rest}" if rest else event


class EventSink:
    def __init__(self, *, as_json: bool, stream: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stream = stream or sys.stdout

    def view(self, lines: list[str]) -> None:
        """The live room view (readable mode only: ``--json`` replaces it with events)."""
        if not self.as_json:
            print("\n".join(lines), file=self.stream, flush=True)

    def emit(self, event: str, **data: Any) -> None:
        line = json.dumps({"event": event, **data}, default=str) if self.as_json else _text(event, data)
        if line is not None:  # the readable view leaves out routine events (agreed checksums)
            print(line, file=self.stream, flush=True)
