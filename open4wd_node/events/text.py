"""The readable form of a node's events: one line (or a few) per event, as a person reads them.

PeerIds are shortened to their last 4 characters, as the spec's own messages do. Rounds are 0-based in
JSON (``round``, as in the race log and the spec's raceId) and 1-based in every readable text
(``round_text``). ``event_text`` reads an event's JSON form (its name and data), so the demo renders the
JSON lines of its node processes the same way a node renders its own events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from protocol.race.results import RaceStatus


def short(peer: object) -> str:
    """A PeerId as readable text shows it: its last 4 characters (anything else as it is)."""
    return f"…{peer[-4:]}" if isinstance(peer, str) and len(peer) > 4 else str(peer)


def round_text(index: int) -> str:
    """A 0-based round index as people count it: ``round_text(0) == "round 1"``."""
    return f"round {index + 1}"


def status_text(status: str, frames: int | None, reason: str | None = None, rounds: Sequence[str] = ()) -> str:
    """How a standings row's car ended: ``finished (1840 frames)``, ``DNF``, ``left (voluntary)`` or
    ``desync (voted out)``; after two or more rounds also each round's status."""
    word = RaceStatus(status)
    if word is RaceStatus.FINISHED:
        text = f"finished ({frames} frames)"
    elif word is RaceStatus.DNF:
        text = "DNF"
    elif word is RaceStatus.DESYNC:
        text = "desync (voted out)"
    else:
        text = f"left ({reason})" if reason else "left"
    if len(rounds) > 1:
        text += " · rounds: " + ", ".join("DNF" if r == RaceStatus.DNF.value else r for r in rounds)
    return text


def vote_verdict(outvoted: Sequence[str], name: Callable[[str], str] = short) -> str:
    """Who lost a checksum vote that did not agree (nobody: there was no strict majority)."""
    return "outvoted " + ", ".join(name(p) for p in outvoted) if outvoted else "no strict majority"


def _standings(rows: Sequence[Mapping[str, Any]], name: Callable[[str], str]) -> str:
    """Round-end rows (``finished_frame``, ``reason``) or match-end rows (``finishFrames``, ``rounds``)."""
    return "\n".join(
        f"  {r['rank']}. {name(r['peer'])}  {r['points']} pts  "
        + status_text(r["status"], r.get("finished_frame", r.get("finishFrames")), r.get("reason"), r.get("rounds", ()))
        for r in rows
    )


def event_text(event: str, d: Mapping[str, Any], name: Callable[[str], str] = short) -> str | None:
    """The readable line(s) of one event, or None for a routine one (an agreed checksum); ``name`` says
    how a PeerId is shown (the demo shows its nodes' numbers)."""
    if event == "room-created":
        lines = [f"room {d['room_id']} is open; share an invitation:"]
        lines += [f"  {role:<11} {invite}" for role, invite in d.get("invites", {}).items()]
        return "\n".join(lines)
    if event == "compatibility":
        if d["compatible"]:
            return f"version check {name(d['peer'])}: compatible"
        detail = "; ".join(d.get("differences") or d["reasons"])
        return f"version check {name(d['peer'])}: INCOMPATIBLE ({detail})"
    if event == "joined":
        return f"joined room {d['room_id'][:8]}… as {d['role']}"
    if event == "ready-set":
        return f"all {len(d['roster'])} participants are ready: signing the start"
    if event == "member-joined":
        return f"+ {name(d['peer'])} joined as {d.get('role', 'participant')} ({d.get('nickname', '')})"
    if event == "member-left":
        return f"- {name(d['peer'])} left ({d.get('reason', 'link closed')})"
    if event == "notice":
        return f"notice [{d['kind']}]: {d['text']}"
    if event == "ready":
        return f"{name(d['peer'])} is {'ready' if d['ready'] else 'not ready'}"
    if event == "ready-refused":
        return f"the host refused this node's Ready [{d['code']}]: {d['message']}"
    if event == "ready-withdrawn":
        return f"this node is no longer Ready ({d['reason']}): {d['message']}"
    if event == "countdown":
        return f"start locked: match {d['match_id'][:12]}…, countdown 5 s"
    if event == "match-start":
        roster = ", ".join(name(p) for p in d["roster"])
        return f"match {d['match_id']} started with {roster}"
    if event == "error":
        return f"error[{d['code']}]: {d['message']}"
    if event == "race-start":
        return f"{round_text(d['round'])}: racing from start slot {d['slot'] + 1} of {len(d['roster'])}"
    if event == "progress":
        return None  # routine: the live view shows the frame, the lag and the rollbacks itself
    if event == "checksum":
        return None if d["agreed"] else f"{round_text(d['round'])}, frame {d['frame']}: the state hashes did NOT agree"
    if event == "desync":
        return f"{round_text(d['round'])}, frame {d['frame']}: the state hashes differ; {vote_verdict(d['peers'], name)}"
    if event == "lag":
        return f"{round_text(d['round'])}, frame {d['frame']}: this node is {d['frames']} frames behind the clock"
    if event == "round-end":
        return f"{round_text(d['round'])} over at frame {d['frame']}:\n{_standings(d['standings'], name)}"
    if event == "match-end":
        return f"match over ({d['outcome']}):\n{_standings(d['results'], name)}"
    if event == "result" and "mismatches" in d:  # a spectator's
        return (f"watched to its end: {d['outcome']}; {d['agreed_hashes']} state hashes matched the players' agreed "
                f"ones, {d['mismatches']} did not; race log {d['log']}")
    if event == "result":
        return (f"{d['agreed_hashes']} state hashes agreed, {d['disagreements']} disagreed; "
                f"worst lag {d['max_lag']} frames; race log {d['log']}")
    if event == "leave":
        return f"{name(d['peer'])} left the race ({d['reason']})"
    if event == "peer-lost":
        return f"{name(d['peer'])} lost its link; the race predicts its car while it reconnects"
    if event == "rejoin":
        return f"{name(d['peer'])} is back (from frame {d['frame']})"
    if event == "caught-up":
        return (f"{round_text(d['round'])}: caught up from the snapshot of frame {d['frame']}, "
                f"racing again from frame {d['resume_frame']}")
    if event == "session-end" and "round" not in d:  # a spectator's
        return f"watching ended: {d['reason']}" + (f" ({d['detail']})" if d["detail"] else "")
    if event == "session-end":
        return f"the race ended for this node in {round_text(d['round'])}: {d['reason']} ({d['detail']})"
    if event == "state-saved":
        return f"{round_text(d['round'])}, frame {d['frame']}: state saved to {d['path']}"
    if event == "fault":
        return f"fault injected: {d['kind']} after frame {d['frame']}"
    if event == "anchor":
        anchored = f"the result is anchored at frame {d['frame']}" if d["frame"] is not None else "no anchor frame"
        return f"{round_text(d['round'])}: {anchored}"
    if event == "spectate-start":
        return f"watching match {d['match_id'][:12]}… through {name(d['source'])} (source {d['source_epoch']})"
    if event == "checkpoint":
        why = "from the source" if d["reason"] == "source" else "again, after a state that differed from the players'"
        return f"{round_text(d['round'])}: checkpoint of frame {d['frame']} loaded {why}"
    if event == "frame":
        return None  # the live view shows the frame; the plain text does not repeat it every second
    if event == "log":
        return f"race log: {d['path']}"
    if event == "live-page":
        return f"live page: {d['url']} (open it in a browser on this machine)"
    rest = ", ".join(f"{k}={v + 1 if k == 'round' else v}" for k, v in d.items())  # rounds are 1-based in text
    return f"{event}: {rest}" if rest else event
