"""The race: one node's ``RaceSession`` fed its two peers' race links (inputs, re-sends, probes, votes,
keys, anchors, catch-up requests, offers and snapshots, leaves) over the real simulation of a built-in round.

The round is fixed (match id, identities, track, cars, seed) and the fuzzed node's world is built once
and restored to its start for every input, so an input costs what its messages cost. ``play`` races
the three sessions honestly, with one peer cut off long enough to need a catch-up, and records what
the two peers sent to the fuzzed node: the seeds. Each frame of an input is one message, its first
byte saying which peer sent it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from fuzz.harness import Target, coded, frames
from open4wd_node.race.world import WorldAdapter, chip_skills
from protocol.actions import Send
from protocol.encoding.wire import Message, decode_message, encode_message
from protocol.identity.keys import Identity
from protocol.race.actions import RaceAction
from protocol.race.keys import RaceKeyBook
from protocol.race.session import RaceSession
from protocol.race.setup import RaceSetup, loadout_digest
from protocol.identity.keys import PeerId
from sim_core.assets.demo_round import archetype_loadout, builtin_demo_track, builtin_demo_vehicles
from sim_core.world import World

ME, PEER, THIRD = (Identity(bytes([i]) * 32) for i in (1, 2, 3))
PEERS = (PEER, THIRD)
MATCH_ID = "18" * 32
TICK_MS = 16
FRAMES_PER_MESSAGE = 2  # the fuzzed node steps this many frames between two of its peer's messages


@functools.cache
def _start() -> tuple[World, bytes]:
    world = _new_world()
    return world, world.save_state()


def _new_world() -> World:
    return World.new(builtin_demo_track(), builtin_demo_vehicles(3), seed=18)


@functools.cache
def setup() -> RaceSetup:
    """The round's setup: slots 0, 1, 2 for ``ME``, ``PEER``, ``THIRD``, each with its car's chip skills."""
    world, _ = _start()
    slots = {ME.peer_id: 0, PEER.peer_id: 1, THIRD.peer_id: 2}
    return RaceSetup(
        match_id=MATCH_ID, round_index=0, slots=slots,
        skills={peer: chip_skills(world, slot) for peer, slot in slots.items()},
        loadouts={peer: loadout_digest(archetype_loadout(slot + 1)) for peer, slot in slots.items()},
        grid_context_digest="cd" * 32, grid_seed="5e" * 32,
    )


def round_start(world: World | None = None) -> World:
    """A fresh world of the round, or ``world`` (the cached one: ``shared_world``) restored to its start."""
    world = _new_world() if world is None else world
    world.load_state(_start()[1])
    return world


def shared_world() -> World:
    """The one world the fuzzed node's inputs reuse (restore it with ``round_start``)."""
    return _start()[0]


def new_session(identity: Identity, world: World | None = None) -> RaceSession:
    """A session of ``identity`` on a fresh world (or ``world`` restored to the round's start)."""
    world = round_start(world)
    peers = sorted(setup().slots)
    return RaceSession(setup(), identity, WorldAdapter(world), RaceKeyBook(peers))


def _step(session: RaceSession, now: int) -> list[RaceAction]:
    actions: list[RaceAction] = []
    if session.ended is not None:
        return actions
    if session.needs_local_input:
        actions += session.add_local_input([], now)
    actions += session.advance_frame(now).actions
    return actions


Acted = Callable[[PeerId, Sequence[RaceAction], RaceSession], None]
"""(peer, what its session just did, its session): a spectator source's view of one racer (``fuzz.doors.spectate``)."""
Heard = Callable[[PeerId, PeerId, Message], None]
"""(receiver, sender, message its session was given)."""


def play(record: Callable[[Identity, Message], None], cut_off: Identity, frames_: int = 900, cut_at: int = 130,
         heal_at: int = 600, acted: Acted | None = None, heard: Heard | None = None) -> None:
    """The three nodes race honestly; ``cut_off`` loses both links at ``cut_at`` and stands still until
    ``heal_at`` (far behind: it catches up from a snapshot); ``record(sender, message)`` sees every
    message a peer sent to ``ME``; ``acted`` and ``heard`` (optional) see every session's actions and
    every message delivered to one."""
    sessions = {i.peer_id: new_session(i) for i in (ME, PEER, THIRD)}
    by_id = {i.peer_id: i for i in (ME, PEER, THIRD)}
    cut = False
    now = 0

    def linked(a: PeerId, b: PeerId) -> bool:
        return not (cut and cut_off.peer_id in (a, b))

    def deliver(source: PeerId, actions: Sequence[RaceAction]) -> None:
        if acted is not None:
            acted(source, actions, sessions[source])
        pending = [(source, a) for a in actions]
        while pending:
            origin, action = pending.pop(0)
            if isinstance(action, Send) and linked(origin, action.peer):
                if action.peer == ME.peer_id:
                    record(by_id[origin], action.message)
                target = sessions[action.peer]
                message = decode_message(encode_message(action.message))
                answers = target.receive(origin, message, now)
                if heard is not None:
                    heard(action.peer, origin, message)
                if acted is not None:
                    acted(action.peer, answers, target)
                pending += [(action.peer, a) for a in answers]

    for peer_id, session in sessions.items():
        deliver(peer_id, session.start(now))
    for frame in range(frames_):
        now += TICK_MS
        if frame in (cut_at, heal_at):
            cut = frame == cut_at
            for a, b in ((x, cut_off) for x in (ME, PEER, THIRD) if x != cut_off):
                for x, y in ((a, b), (b, a)):
                    changed = sessions[x.peer_id].peer_lost if cut else sessions[x.peer_id].peer_reconnected
                    deliver(x.peer_id, changed(y.peer_id, now))
        order = sorted(sessions)
        for peer_id in order[frame % 3:] + order[:frame % 3]:  # every node steps first in turn
            if not (cut and peer_id == cut_off.peer_id):  # cut off, it stands still (stopped, say)
                deliver(peer_id, _step(sessions[peer_id], now))


def one_input(data: bytes) -> None:
    """This node's session: every frame one message from a peer (its first byte: even ``PEER``, odd
    ``THIRD``), then two steps of the session."""
    me = new_session(ME, shared_world())
    now = 0
    me.start(now)
    for part in frames(data):
        if not part:
            continue
        message = coded(decode_message, part[1:])
        if isinstance(message, Message):
            me.receive(PEERS[part[0] % 2].peer_id, message, now)
        for _ in range(FRAMES_PER_MESSAGE):
            now += TICK_MS
            _step(me, now)


TARGETS = {"race-session": Target("race-session", one_input, "a peer's race link: inputs, votes, keys, catch-up")}
