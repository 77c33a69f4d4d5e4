"""The digests a race sign key (and, for the key announce, the master key) signs.

The spec leaves their bytes open (spec/netcode.md §3.1, §3.3), so this project defines them and freezes
them with test vectors. Every digest is SHA-256 over canonical DAG-CBOR of a map whose ``type`` names the
message and whose ``domain`` names this layout version, so a signature made for one message, round or
layout can never verify as another. The vectors in docs/race.md pin the bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from protocol.encoding import dagcbor
from protocol.identity.keys import PeerId

DOMAIN = "open4wd-race-sign-v1"
SKILLS = ("boost", "brake", "swerve_left", "swerve_right", "jump", "slam", "stabilize", "weapon")
"""The spec's skill order (interfaces.md §3.1): the canonical order of a frame's events."""
HOLD_SKILLS = frozenset({"swerve_left", "swerve_right", "stabilize", "weapon"})
SKILL_ORDER = {name: i for i, name in enumerate(SKILLS)}

Event = tuple[str, bool]


def canonical_events(events: Iterable[Event]) -> tuple[Event, ...]:
    """Events in the spec's skill order, so two encodings of one input sign and compare equal."""
    return tuple(sorted(events, key=lambda e: SKILL_ORDER[e[0]]))


def _digest(body: dict[str, Any]) -> bytes:
    body["domain"] = DOMAIN
    return hashlib.sha256(dagcbor.encode(body)).digest()


INPUT_DOMAIN = "open4wd-race-sign-v2"
"""The input map's layout version: v2 added ``prev``, the digest of the signer's input of the frame before."""
NO_PREVIOUS_INPUT = bytes(32)
"""``prev`` of an input whose signer holds no input of its own for the frame before (its first frame)."""


def input_digest(race_id: str, frame: int, events: tuple[Event, ...], prev: bytes) -> bytes:
    """What a race key signs for its input of ``frame`` (events already canonical): the digest of the map
    ``{"type": "race-input", "domain": INPUT_DOMAIN, "raceId": …, "frame": …, "events": …, "prev": …}``.

    ``prev`` chains a peer's inputs: it is the digest of the signer's own input of ``frame - 1``
    (``NO_PREVIOUS_INPUT`` if it holds none), so one verified signature authenticates every earlier input
    whose digests it reaches link by link. A receiver that holds a peer's inputs in order therefore
    verifies one signature for a run of them (docs/race.md, "Chained inputs"); any single input, with its
    ``prev``, still verifies on its own (relays, catch-up, spectators, replay).

    The bytes are assembled from parts encoded once (a node computes one of these per peer per frame,
    and encoding the whole map each time cost more than verifying it). In canonical key order (length,
    then bytes) the map is prev, type, frame, domain, events, raceId, so only prev, the frame and the
    events sit between constant bytes; the events' encoding is cached too (a frame's events are one of a
    few thousand canonical tuples). A hypothesis test holds it to the whole map's DAG-CBOR. ``prev`` must
be 32 bytes: a peer's is checked first (``protocol.race.inputs.input_prev``)."""
    return hashlib.sha256(b"".join((
        _INPUT_PREV, prev, _INPUT_TYPE_FRAME, dagcbor.encode_int(frame), _INPUT_MIDDLE, _events_cbor(events),
        _input_tail(race_id),
    ))).digest()


_INPUT_PREV = b"\xa6" + dagcbor.encode("prev") + b"\x58\x20"  # a map of six, then a 32-byte string's head
_INPUT_TYPE_FRAME = dagcbor.encode("type") + dagcbor.encode("race-input") + dagcbor.encode("frame")
_INPUT_MIDDLE = dagcbor.encode("domain") + dagcbor.encode(INPUT_DOMAIN) + dagcbor.encode("events")


@lru_cache(maxsize=16)
def _input_tail(race_id: str) -> bytes:
    """The constant bytes after a round's input digests' events."""
    return dagcbor.encode("raceId") + dagcbor.encode(race_id)


@lru_cache(maxsize=4096)
def _events_cbor(events: tuple[Event, ...]) -> bytes:
    return dagcbor.encode([list(e) for e in events])


def checksum_digest(race_id: str, frame: int, state_hash: bytes) -> bytes:
    """What a race key signs for its state-hash vote at ``frame``."""
    return _digest({"type": "race-checksum", "raceId": race_id, "frame": frame, "hash": state_hash})


def leave_digest(race_id: str, reason: str) -> bytes:
    """What a race key signs to leave the round for ``reason`` (a ``LeaveReason`` value): a leave that
    does not verify against the sender's race key of this round changes nothing."""
    return _digest({"type": "race-leave", "raceId": race_id, "reason": reason})


def key_digest(race_id: str, peer_id: PeerId, public_key: bytes) -> bytes:
    """What the master key signs to bind a race key to its PeerId and round."""
    return _digest({"type": "race-key", "raceId": race_id, "peerId": peer_id, "publicKey": public_key})


def catch_up_digest(race_id: str, kind: str, request_id: int, target: PeerId,
                    candidates: list[tuple[int, bytes]]) -> bytes:
    """What a race key signs for a catch-up probe, offer, sync request or snapshot.

    ``target`` is the PeerId the message is addressed to, so it cannot be replayed to another peer;
    ``candidates`` are (frame, state hash) pairs: none for a probe, up to two for an offer, the one
    asked for in a sync request, and the sent state's for a snapshot.
    """
    return _digest({
        "type": f"race-{kind}", "raceId": race_id, "requestId": request_id, "target": target,
        "candidates": [[frame, state_hash] for frame, state_hash in candidates],
    })
