"""Spectating, both ways: what a racer's ``SpectateSource`` receives from spectators (their ``mode-select``
and whatever else a modified viewer sends), and what a spectator's ``SpectateViewer`` receives from its
source (round descriptor, race keys, checkpoints, signed inputs, signed votes, round and session ends),
re-simulating the real built-in round of ``fuzz.doors.race`` as it goes.

``stream`` races the three sessions of ``fuzz.doors.race`` honestly with ``PEER`` as a source serving
``SPECTATOR`` from the start: what it sent is the viewer's seeds, and the source as it stands at a
vote frame is the source door's (every input starts from a copy of it, so a subscription meets a real
backlog: descriptor, keys, checkpoint, inputs, votes).
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Sequence

from fuzz.doors import race
from fuzz.harness import Target, coded, frames
from open4wd_node.race.world import WorldAdapter
from protocol.actions import Send
from protocol.encoding.wire import Message, decode_message, encode_message
from protocol.identity.keys import Identity, race_id
from protocol.race.actions import RaceAction
from protocol.race.keys import announce
from protocol.race.session import RaceSession
from protocol.spectate.messages import ModeSelect, RosterEntry, SpectateEndReason, SpectateMode
from protocol.spectate.source import SpectateSource
from protocol.spectate.viewer import SpectateViewer, ViewRound
from protocol.identity.keys import PeerId

SPECTATOR, SECOND, STRANGER = (Identity(bytes([i]) * 32).peer_id for i in (7, 8, 9))
SPECTATORS = (SPECTATOR, SECOND, STRANGER)  # the room admitted the first two; the third is nobody's spectator
TRACK_REF = "builtin:track-01"
CAPACITY = 2
SOURCE_AT_FRAME = 250  # the source door's source: two votes and a checkpoint into the race
STREAM_FRAMES = 420
MAX_STEPS_PER_MESSAGE = 4  # the view pump's most frames a tick


def roster() -> list[RosterEntry]:
    """The round's racers as the start package names them."""
    setup = race.setup()
    return [RosterEntry(peer, slot, setup.loadouts[peer]) for peer, slot in sorted(setup.slots.items(), key=lambda x: x[1])]


def new_source() -> SpectateSource:
    """``PEER``'s source at the round's start (its own race key announced), serving ``SPECTATORS[:2]``."""
    source = SpectateSource(race.MATCH_ID, SPECTATORS[:2], CAPACITY)
    source.round_started(0, TRACK_REF, roster())
    source.key(race.PEER.peer_id, announce(race.PEER, race_id(race.MATCH_ID, 0)))
    return source


def stream(frames_: int = STREAM_FRAMES, subscribe: bool = True, end: bool = False) -> tuple[SpectateSource, list[Message]]:
    """An honest race (``THIRD`` cut off for a while) with ``PEER`` as source: the source after ``frames_``
    frames, and what it sent ``SPECTATOR`` (subscribed from the start unless ``subscribe`` is False; with
    ``end``, the round and the match then end)."""
    source = new_source()
    sent: list[Send] = []
    if subscribe:
        sent += source.receive(SPECTATOR, ModeSelect(SpectateMode.REPLAY.value, race.MATCH_ID, 1), 0)
    me = race.PEER.peer_id
    reached = [0]

    def acted(peer: PeerId, actions: Sequence[RaceAction], session: RaceSession) -> None:
        if peer == me:
            sent.extend(source.observe(me, actions, session.vote_state))
            reached[0] = session.current_frame

    def heard(receiver: PeerId, sender: PeerId, message: Message) -> None:
        if receiver == me:
            sent.extend(source.observe_message(sender, message))

    race.play(lambda sender, message: None, race.THIRD, frames_=frames_, cut_at=130, heal_at=200, acted=acted,
              heard=heard)
    if end:
        sent += source.round_ended(reached[0], {}) + source.end(SpectateEndReason.MATCH_END)
    return source, [s.message for s in sent if s.peer == SPECTATOR]


@functools.cache
def _source_at_vote() -> bytes:
    """The source at ``SOURCE_AT_FRAME``, pickled: unpickling a copy takes a tenth of the time of a deep
    copy (0.5 ms against 4.7; the deep copy was most of an execution), and a copy shares nothing with the
    next input's."""
    return pickle.dumps(stream(SOURCE_AT_FRAME, subscribe=False)[0])


def source_at_vote() -> SpectateSource:
    """A fresh copy of the source every input of ``spectate-source`` meets."""
    source: SpectateSource = pickle.loads(_source_at_vote())
    return source


def source_once(data: bytes) -> None:
    """A racer's source with a real backlog: every frame one message from a spectator (first byte: which
    of ``SPECTATORS``; a multiple of 4 there means that spectator's link ended instead), each answer
    encoded as its link would."""
    source = source_at_vote()
    for now, part in enumerate(frames(data)):
        if not part:
            continue
        peer = SPECTATORS[part[0] % len(SPECTATORS)]
        if part[0] % 4 == 0:
            source.drop(peer)
            continue
        message = coded(decode_message, part[1:])
        if isinstance(message, Message):
            for send in coded(source.receive, peer, message, now * 16) or []:
                encode_message(send.message)


def view_round() -> ViewRound:
    """The round as the spectator's verified start package says it."""
    setup = race.setup()
    return ViewRound(TRACK_REF, dict(setup.slots), dict(setup.loadouts))


def viewer_once(data: bytes) -> None:
    """A spectator's viewer on the real round, asking ``PEER`` then ``THIRD``: every frame one message
    from a racer (first byte: even ``PEER``, odd ``THIRD``; a multiple of 4 above 0 means the current
    source's link ended instead), then as many steps as the jitter buffer allows (at most 4)."""
    adapter = WorldAdapter(race.round_start(race.shared_world()))
    viewer = SpectateViewer(race.MATCH_ID, [view_round()], lambda index: adapter, [race.PEER.peer_id, race.THIRD.peer_id])
    viewer.start(0)
    for index, part in enumerate(frames(data)):
        now = index * race.TICK_MS
        if not part:
            continue
        if part[0] % 4 == 0 and part[0] > 0:
            viewer.source_lost(now)
            continue
        message = coded(decode_message, part[1:])
        if isinstance(message, Message):
            viewer.receive(race.PEERS[part[0] % 2].peer_id, message, now)
        for _ in range(MAX_STEPS_PER_MESSAGE):
            stepped, _actions = viewer.advance(now)
            if not stepped:
                break


TARGETS = {
    "spectate-source": Target("spectate-source", source_once, "what a racer's spectator source receives from viewers"),
    "spectate-viewer": Target("spectate-viewer", viewer_once, "what a spectator's viewer receives from its source"),
}
