"""Races whose every figure the compiled race core must reproduce (``tests/protocol/race/test_compiled_core.py``):
sans-IO sessions wired through the seeded harness, one clean race and the rules that end, repair or replace
a peer's history (a forged input on its owner's own link, a peer removed after its reconnect window, a
peer that reconnects in time and catches up from a snapshot). Each run is summed up as plain data, per
node: its world's final state hash, what it confirmed, voted and refused, its counters and how it ended."""

from __future__ import annotations

import hashlib
from typing import Any

from protocol.race.messages import RaceInputs
from protocol.race.spans import skills_mask

from tests.protocol.race.harness import (
    CaughtUp, Mesh, Misbehaviour, VoteDecided, alter_newest, newest_frame, own_span, with_own_span,
)


def _summary(mesh: Mesh) -> dict[str, Any]:
    nodes = {}
    for peer in mesh.peers:
        stats = mesh.sessions[peer].stats
        ended = mesh.ended(peer)
        confirmed = mesh.confirmed_log(peer)
        nodes[peer] = {
            "state": hashlib.sha256(mesh.state(peer)).hexdigest(),
            "confirmed": [len(confirmed), hashlib.sha256(repr(sorted(confirmed.items())).encode()).hexdigest()],
            "votes": [v.kind for v in mesh.of(peer, VoteDecided)],
            "refused": [m.code for m in mesh.of(peer, Misbehaviour)],
            "caught_up": [[c.frame, c.resume_frame] for c in mesh.of(peer, CaughtUp)],
            "ended": None if ended is None else [ended.reason.value, ended.detail],
            "counters": [stats.steps, stats.rollbacks, stats.rollback_frames, stats.signatures_checked,
                         stats.liveness()],
        }
    return nodes


def clean_race() -> dict[str, Any]:
    """Four peers over a jittery network, to the end of the round."""
    mesh = Mesh(4, seed=5, length=400)
    mesh.run_to_end()
    return _summary(mesh)


def forged_input() -> dict[str, Any]:
    """One input's signed events altered once on its owner's own link: refused with its run, predicted,
    re-simulated, asked for again and taken."""
    mesh = Mesh(3, seed=43, length=400)
    a, b = mesh.peers[:2]
    flipped: list[int] = []

    def tamper(src: str, dst: str, msg: object) -> object:
        span = own_span(msg)
        if src == a and dst == b and isinstance(msg, RaceInputs) and span is not None and not flipped and mesh.now > 500:
            flipped.append(newest_frame(span))
            return with_own_span(msg, alter_newest(span, toggle=skills_mask([("brake", False)])))  # in a's chip
        return msg

    mesh.tamper = tamper
    mesh.run_to_end()
    return {"flipped": flipped, "nodes": _summary(mesh)}


def removed_peer() -> dict[str, Any]:
    """A peer cut off for its whole reconnect window: removed by the others, its own side void."""
    mesh = Mesh(4, seed=22, length=1300)
    lost, others = mesh.peers[0], mesh.peers[1:]
    mesh.run(1000)
    mesh.cut([lost], others)
    mesh.run_to_end()
    return _summary(mesh)


def caught_up_peer() -> dict[str, Any]:
    """A peer cut off for 3 s, then back: it catches up from a snapshot the majority vouches for."""
    mesh = Mesh(4, seed=21, length=1000)
    lost, others = mesh.peers[3], mesh.peers[:3]
    mesh.run(2000)
    mesh.cut([lost], others)
    mesh.run(3000)
    mesh.heal([lost], others)
    mesh.run_to_end()
    return _summary(mesh)


def all_runs() -> dict[str, Any]:
    """Every run above by name."""
    return {"clean": clean_race(), "forged": forged_input(), "removed": removed_peer(), "caught_up": caught_up_peer()}

