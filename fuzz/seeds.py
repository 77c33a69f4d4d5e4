"""Writes every target's seed corpus (``fuzz/corpus/<target>/``) from real inputs: the messages of an
honest room and race played by the real machines, real handshakes, the built-in GLBs and their
sources, the shipped configuration, and the race logs and saved states of a real race between whole
nodes on loopback, and a spectator stream of a real race.
``python -m fuzz.seeds`` rewrites them all (the same inputs each time but for what is fresh by design:
the nonces and timestamps of signed room messages, the timestamps and ports in race logs);
``python -m fuzz.seeds TARGET …`` rewrites only the named spectator, signaling and WebRTC corpora (``DOOR_SEEDS``).
The corpora are committed, and the inputs of past findings (``finding-*``) are kept.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from fuzz.doors import link, race, room, signaling, spectate
from fuzz.harness import CORPUS_ROOT, join_frames
from protocol.link.handshake import DIALER, LISTENER
from protocol.encoding.wire import HANDSHAKE, ROOM, Channel, Message, encode_frame, encode_message
from protocol.race.messages import RACE_LINK
from protocol.spectate.messages import ModeSelect, SpectateMode
from protocol.room.invitation import Invitation
from sim_core.assets.builtin_gen import generate_sources
from sim_core.assets.builtins import builtin_bytes
from sim_core.assets.demo_round import archetype_loadout

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
GLB_SEEDS = ("builtin:body-01", "builtin:chip-01", "builtin:track-01", "builtin:battery-02", "builtin:weapon-01",
             "builtin:tire-01")
SOURCE_SEEDS = ("chip-01", "track-01", "body-01", "motor-01")


def write(target: str, seeds: Iterable[bytes]) -> None:
    """Replace ``target``'s corpus with ``seeds`` (named by their hash: the same seed is one file); the
    inputs of past findings (``finding-*``) stay."""
    folder = CORPUS_ROOT / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if not old.name.startswith("finding-"):
            old.unlink()
    for seed in seeds:
        (folder / hashlib.sha256(seed).hexdigest()[:16]).write_bytes(seed)


def windows(items: list[bytes], size: int, keep: Callable[[int], bool]) -> list[bytes]:
    """Runs of ``size`` items ending at each index ``keep`` picks, as frames."""
    return [join_frames(items[max(0, i + 1 - size) : i + 1]) for i in range(len(items)) if keep(i)]


def handshake_messages() -> tuple[list[Message], list[Message]]:
    """(what the dialer sent, what the listener sent) in a real handshake with the fixed keys."""
    dialer, listener = link.side(DIALER), link.side(LISTENER)
    sent_by_dialer, sent_by_listener = dialer.start(), []
    listener.start()
    pending = list(sent_by_dialer)
    while not (dialer.done and listener.done):
        replies = [r for m in pending for r in listener.receive(m, link.NOW_MS)]
        sent_by_listener += replies
        pending = [r for m in replies for r in dialer.receive(m, link.NOW_MS)]
        sent_by_dialer += pending
    return sent_by_dialer, sent_by_listener


def framed(messages: list[Message], channel: Channel) -> bytes:
    return b"".join(encode_frame(encode_message(m), channel) for m in messages)


def room_traffic() -> tuple[list[Message], list[Message]]:
    """(the joiner's messages to the host, the host's to the joiner) in an honest room up to its start."""
    sent: dict[str, list[Message]] = {"joiner": [], "host": []}
    room.play(lambda sender, message: sent[sender].append(message))
    return sent["joiner"], sent["host"]


def race_traffic() -> list[tuple[int, Message]]:
    """(sender byte, message) to the fuzzed node in two honest races: a peer cut off, then the node itself."""
    out: list[tuple[int, Message]] = []
    for cut_off in (race.THIRD, race.ME):
        race.play(lambda sender, message: out.append((race.PEERS.index(sender), message)), cut_off)
    return out


def race_files(workdir: Path) -> tuple[list[bytes], list[bytes]]:
    """(race logs, saved states) of a real race between two whole nodes on loopback TCP, one of which
    corrupts its state (both then write their state at the tie); the track is kept as a fixture."""
    import trio
    import trio.testing

    from open4wd_node.runtime.blocking import blocking_work_inline
    from tests.open4wd_node.race.nodes import race as race_nodes, short_track

    track = short_track(8.0)
    FIXTURES.mkdir(exist_ok=True)
    (FIXTURES / "short-track.glb").write_bytes(track)
    with blocking_work_inline():
        trio.run(lambda: race_nodes(workdir, 2, track_bytes=track, faults={1: 30}),
                 clock=trio.testing.MockClock(autojump_threshold=0))
    logs = [p.read_bytes() for p in sorted(workdir.rglob("*.o4wlog"))]
    states = [p.read_bytes() for p in sorted(workdir.rglob("*.state"))]
    return logs, states


def spectate_source_seeds() -> list[bytes]:
    """What spectators send a source (``fuzz.doors.spectate.source_once``: first byte 3 ``SPECTATOR``, 1
    ``SECOND``, 2 the stranger, 4 ``SPECTATOR``'s link ends): subscriptions, a second epoch, a stranger's,
    a source that is full, a message after mode-select."""
    def select(epoch: int, match_id: str = race.MATCH_ID) -> bytes:
        return encode_message(ModeSelect(SpectateMode.REPLAY.value, match_id, epoch))

    return [join_frames([b"\x03" + select(1)]),
            join_frames([b"\x03" + select(1), b"\x04", b"\x03" + select(2), b"\x01" + select(1)]),
            join_frames([b"\x02" + select(1), b"\x01" + select(1, "ab" * 32), b"\x03" + select(1), b"\x03" + select(1)])]


def spectate_viewer_seeds() -> list[bytes]:
    """What a source sends a viewer (``fuzz.doors.spectate.viewer_once``: first byte 0 ``PEER``, the
    source): the stream of a real race from its start (descriptor, checkpoint, inputs, votes) to its first
    two votes, and to its end; a late subscription's backlog."""
    _, sent = spectate.stream(end=True)
    late_source, _ = spectate.stream(subscribe=False)
    backlog = [s.message for s in late_source.receive(spectate.SPECTATOR, ModeSelect(SpectateMode.REPLAY.value,
                                                                                       race.MATCH_ID, 1), 0)]
    bodies = [b"\x00" + encode_message(m) for m in sent]
    return [join_frames(bodies[:260]), join_frames(bodies), join_frames([b"\x00" + encode_message(m) for m in backlog])]


def webrtc_chunks_seeds() -> list[bytes]:
    """A link's honest DataChannel messages with the door's small parts: whole bodies, a large body in
    order and out of order, two large bodies interleaved, a probe and its echo, a close."""
    from fuzz.doors import webrtc as door
    from protocol.webrtc.chunks import Kind, frame_close, frame_parts, frame_probe, frame_whole

    def parts(body: bytes, message_id: int) -> list[bytes]:
        return list(frame_parts(body, message_id, door.PART_BYTES))

    first, second = parts(bytes(range(200)), 1), parts(b"x" * 130, 2)
    tick, lossy = b"\x01", b"\x81"
    return [
        join_frames([tick + frame_whole(b"hello"), lossy + frame_whole(b"input"), tick + frame_whole(b"")]),
        join_frames([tick + p for p in first]),
        join_frames([tick + p for p in reversed(first)]),
        join_frames([tick + p for pair in zip(first[:-1], second, strict=True) for p in pair] + [tick + first[-1]]),
        join_frames([tick + frame_probe(Kind.PROBE, 7), tick + frame_probe(Kind.ECHO, 7),
                     tick + frame_close("room-left", "the player left")]),
    ]


def webrtc_sdp_seeds() -> list[bytes]:
    """SDPs as aiortc and a browser write them (fixture files of real offers)."""
    return [path.read_bytes() for path in sorted((FIXTURES / "sdp").glob("*.sdp"))]


DOOR_SEEDS = {"spectate-source": spectate_source_seeds, "spectate-viewer": spectate_viewer_seeds,
              "signal-server": signaling.server_seeds, "signal-client": signaling.client_seeds,
              "webrtc-chunks": webrtc_chunks_seeds, "webrtc-sdp": webrtc_sdp_seeds}
"""Corpora that ``python -m fuzz.seeds TARGET …`` can rewrite alone."""


def main(argv: list[str] | None = None) -> None:
    """Write every corpus, or only the named ones of ``DOOR_SEEDS``."""
    names = sys.argv[1:] if argv is None else argv
    if names:
        for name in names:
            if name not in DOOR_SEEDS:
                raise SystemExit(f"fuzz.seeds: {name!r} is not one of {', '.join(DOOR_SEEDS)}")
            write(name, DOOR_SEEDS[name]())
        return
    for name, seeds in DOOR_SEEDS.items():
        write(name, seeds())
    by_dialer, by_listener = handshake_messages()
    write("wire-handshake", [framed(by_dialer, HANDSHAKE), framed(by_listener, HANDSHAKE)])
    joiner, host = room_traffic()
    write("wire-room", [framed(joiner[i : i + 4], ROOM) for i in range(0, len(joiner), 4)]
          + [framed(host[i : i + 4], ROOM) for i in range(0, len(host), 4)])
    traffic = race_traffic()
    bodies = [bytes([sender]) + encode_message(message) for sender, message in traffic]
    rare = {i for i, (_, m) in enumerate(traffic) if m.TYPE != "race-inputs"}
    write("wire-race", [framed([m for _, m in traffic[max(0, i - 2) : i + 1]], RACE_LINK) for i in sorted(rare)])
    write("link-handshake", [b"\x00" + join_frames([encode_message(m) for m in by_dialer]),
                             b"\x01" + join_frames([encode_message(m) for m in by_listener])])
    write("link-sealed", [join_frames([b"\x01" + encode_message(m) for m in host[i : i + 3]]) for i in range(0, 12, 3)]
          + [join_frames([b"\x00" + encode_message(host[0])])])
    invitation = Invitation("127.0.0.1", 7777, room.ROOM_ID, room.HOST_ID.peer_id, "participant",
                            room.SECRETS["participant"])
    write("invitation", [str(invitation).encode(),
                         str(Invitation("::1", 1, room.ROOM_ID, room.HOST_ID.peer_id, "spectator",
                                        room.SECRETS["spectator"])).encode()])
    write("room-host", [join_frames([encode_message(m) for m in joiner[:n]]) for n in (1, 3, len(joiner))])
    write("room-member", [join_frames([encode_message(m) for m in host[:n]]) for n in (3, 8, len(host))])
    write("race-session", windows(bodies, 12, lambda i: i in rare or i % 150 == 0))
    write("glb-container", [builtin_bytes(ref) for ref in GLB_SEEDS])
    write("glb-reader", [builtin_bytes(ref) for ref in GLB_SEEDS])
    write("glb-admission", [builtin_bytes(ref) for ref in GLB_SEEDS])
    sources = generate_sources()
    write("glb-bake", [sources[stem] for stem in SOURCE_SEEDS])
    write("loadout", [json.dumps(archetype_loadout(1)).encode(),
                      json.dumps([archetype_loadout(2), archetype_loadout(3)]).encode()])
    write("config-toml", [(REPO / "configs" / "node.toml").read_bytes(),
                          b'log_format = "json"\nasset_walls = { motor = [2] }\nasset_min_versions = { track = 1 }\n'
                          b'[asset_yanked]\nmotor = [1]\n'])
    workdir = Path(tempfile.mkdtemp(prefix="open4wd-fuzz-seeds-"))
    try:
        logs, states = race_files(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write("race-log", logs[:1])
    write("state-file", [join_frames([states[0]]) + states[-1], join_frames([states[0]]) + states[0]])
    write("control-api", [b'{"op": "subscribe", "topics": ["frames", "standings", "events"]}\n',
                          b'{"op": "press", "skill": "boost"}\n{"op": "hold", "skill": "stabilize", "on": true}\n',
                          b'{"op": "hold", "skill": "stabilize", "on": false}\r\n{"op": "nope"}\n'])


if __name__ == "__main__":
    main()
