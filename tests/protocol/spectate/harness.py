"""A sans-IO race (the race tests' in-memory mesh) with one racer as a spectator source, and viewers fed
from it: what the shell does with real links, without them."""

from __future__ import annotations

import heapq
from dataclasses import replace

from protocol.actions import Misbehaviour, Send
from protocol.encoding.wire import decode_message, encode_message
from protocol.identity.keys import Identity, race_id
from protocol.race.keys import announce
from protocol.spectate.actions import DialSource, DropSource, FrameShown, ViewerAction, ViewEnded
from protocol.spectate.messages import RosterEntry, SpectateEndReason
from protocol.spectate.source import SpectateSource
from protocol.spectate.viewer import SpectateViewer, ViewRound
from tests.protocol.race.harness import MATCH_ID, TICK_MS, CounterWorld, Mesh

TRACK = "builtin:track-02"
SPECTATOR = Identity(b"\x77" * 32).peer_id


class SourcedMesh(Mesh):
    """``Mesh`` whose racers each run a ``SpectateSource`` fed from their session's actions and messages;
    ``out[peer]`` is what each source sent, in order."""

    def __init__(self, n: int, **options) -> None:
        self.sources: dict[str, SpectateSource] = {}
        self.out: dict[str, list[Send]] = {}
        super().__init__(n, **options)
        for identity in self.ids:
            peer = identity.peer_id
            source = SpectateSource(MATCH_ID, [SPECTATOR], capacity=20)
            source.round_started(0, TRACK, [RosterEntry(p, self.setup.slots[p], self.setup.loadouts[p]) for p in self.peers])
            self.sources[peer], self.out[peer] = source, []
            self.out[peer] += source.key(peer, announce(identity, race_id(MATCH_ID, 0)))

    def handle(self, src, actions) -> None:
        super().handle(src, actions)
        source = getattr(self, "sources", {}).get(src)
        if source is not None:
            self.out[src] += source.observe(src, actions, self.sessions[src].vote_state)

    def deliver(self) -> None:
        while self.queue and self.queue[0][0] <= self.now:
            _, _, src, dst, body = heapq.heappop(self.queue)
            if not self.link_up(src, dst):
                continue
            message = decode_message(body)
            self.handle(dst, self.sessions[dst].receive(src, message, self.now))
            self.out[dst] += self.sources[dst].observe_message(src, message)

    def finish(self) -> None:
        """Every source says its round and match are over."""
        for peer, source in self.sources.items():
            frame = self.sessions[peer].current_frame
            self.out[peer] += source.round_ended(frame, {}) + source.end(SpectateEndReason.MATCH_END)


def view_round(mesh: Mesh) -> ViewRound:
    return ViewRound(TRACK, dict(mesh.setup.slots), dict(mesh.setup.loadouts))


class Watcher:
    """A viewer wired to the sources of a ``SourcedMesh``: it subscribes where ``DialSource`` says and
    reads what that source sent since, in order (through the wire codec)."""

    def __init__(self, mesh: SourcedMesh, source: str, world=None, tamper=None) -> None:
        self.mesh = mesh
        self.world = world or CounterWorld(len(mesh.peers), 600)
        self.viewer = SpectateViewer(MATCH_ID, [view_round(mesh)], lambda r: self.world, [source] + [
            p for p in mesh.peers if p != source])
        self.actions: list[ViewerAction] = []
        self.cursor: dict[str, int] = {}
        self.tamper = tamper
        self.handle(self.viewer.start(mesh.now))

    def handle(self, actions: list[ViewerAction]) -> None:
        for action in actions:
            self.actions.append(action)
            if isinstance(action, DialSource):
                source = self.mesh.sources[action.peer]
                self.cursor[action.peer] = len(self.mesh.out[action.peer])
                for send in source.receive(SPECTATOR, decode_message(encode_message(action.select)), self.mesh.now):
                    self.mesh.out[action.peer].append(send)
            elif isinstance(action, DropSource):
                self.mesh.sources[action.peer].drop(SPECTATOR)

    def pump(self) -> None:
        """Deliver what the current source sent this viewer, then step as the jitter buffer allows."""
        peer = self.viewer.source
        if peer is not None and peer in self.cursor:
            sent = self.mesh.out[peer]
            while self.cursor[peer] < len(sent):
                send = sent[self.cursor[peer]]
                self.cursor[peer] += 1
                if send.peer != SPECTATOR:
                    continue
                message = send.message if self.tamper is None else self.tamper(peer, send.message)
                self.handle(self.viewer.receive(peer, decode_message(encode_message(message)), self.mesh.now))
        for _ in range(4):
            stepped, actions = self.viewer.advance(self.mesh.now)
            self.handle(actions)
            if not stepped:
                break

    def of(self, kind: type) -> list:
        return [a for a in self.actions if isinstance(a, kind)]

    @property
    def frames(self) -> list[int]:
        return [a.frame for a in self.of(FrameShown)]

    @property
    def ended(self) -> ViewEnded | None:
        found = self.of(ViewEnded)
        return found[0] if found else None

    @property
    def misbehaviour(self) -> list[str]:
        return [a.code for a in self.of(Misbehaviour)]


def run(mesh: SourcedMesh, watchers: list[Watcher], ms: int) -> None:
    end = mesh.now + ms
    while mesh.now < end:
        mesh.run(TICK_MS)
        for watcher in watchers:
            watcher.pump()


__all__ = ["SPECTATOR", "SourcedMesh", "Watcher", "replace", "run", "view_round"]
