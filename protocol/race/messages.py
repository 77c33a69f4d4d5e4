"""Race wire messages (spec/netcode.md §3), as strict typed msgpack messages.

The sender of every message is the authenticated peer of the link it arrived on, never a field.
Signed messages carry an Ed25519 signature by the round's race sign key over a ``race_signing``
digest; ``race-key`` is signed by the master key. Events travel as ``[skill, hold]`` pairs.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from protocol.encoding.wire import Channel, Message, Record, message

MAX_INPUT_EVENTS_PER_FRAME = 4
SYNC_SNAPSHOT_MAX_BYTES = 4_194_304
RACE_MESSAGE_MAX_BYTES = 4_194_688
RACE_LINK = Channel("race-link", RACE_MESSAGE_MAX_BYTES + 64 * 1024)
"""Frame limit of a race link: a snapshot response plus its envelope (the plain RACE channel is 16 KiB)."""
INPUT_TYPES = frozenset({"race-inputs", "race-relay"})
"""Types that spend a race link's input bucket (120 burst, 90/s); every other race type spends the
control bucket (32 burst, 32/s), as checksums and catch-up do in spec/netcode.md §2.4."""
MAX_INPUTS_PER_MESSAGE = 33
"""At most this many inputs in one ``race-inputs``: the input window ``[current − 8, current + 24]``
(protocol/race/inputs.py), the most a receiver can take at once."""
OFFER_CANDIDATES = 2


class LeaveReason(StrEnum):
    """Why a peer left the race: the ``reason`` of ``race-leave`` on the wire, and of the ``leave`` event."""

    VOLUNTARY = "voluntary"  # it chose to
    DISCONNECT = "disconnect"  # its link was lost for good, or its catch-up failed
    DESYNC = "desync"  # voted out: three minority checksum votes in a row

    @classmethod
    def parse(cls, value: str) -> LeaveReason | None:
        """The reason named by ``value``, or None for a word that is not one."""
        try:
            return cls(value)
        except ValueError:
            return None


class RaceInput(Record):
    """One signed input of its sender for ``frame``: its events as ``[skill, hold]`` pairs and ``prev``,
    the digest of the sender's input of the frame before (32 bytes; zeros for none), signed by the
    sender's race key over ``input_digest`` (each input verifies on its own: the race log, replay and
    catch-up keep and forward single inputs with their signatures)."""

    frame: int
    events: list[list[Any]]
    prev: bytes
    signature: bytes


@message("race-inputs")
class RaceInputs(Message):
    """GGRS-style input message: every input of the sender that the receiver has not acknowledged yet
    (ascending frames, at most ``MAX_INPUTS_PER_MESSAGE``), and ``ack``, the newest frame up to which the
    sender holds every input of the receiver (-1: none yet). A lost or refused message is repaired by
    the next one, which carries the same inputs again."""

    ack: int
    inputs: list[RaceInput]


@message("race-input-probe")
class RaceInputProbe(Message):
    """The progress watchdog's probe: the sender has waited 2 s for the receiver's next input (or race
    key, ``hasKey`` false). ``ack`` as in ``race-inputs``. The receiver answers at once with a
    ``race-inputs`` (and its race key announce when ``hasKey`` is false)."""

    ack: int
    hasKey: bool


@message("race-checksum")
class RaceChecksum(Message):
    """A signed vote: the SHA-256 of the sender's state after ``frame`` (``checksum_digest``)."""

    frame: int
    hash: bytes
    signature: bytes


@message("race-key")
class RaceKey(Message):
    """A peer's race sign key for ``raceId``, bound to it by its master key (``key_digest``)."""

    raceId: str
    publicKey: bytes
    signature: bytes


@message("race-leave")
class RaceLeave(Message):
    """The sender leaves the race; ``reason`` is a ``LeaveReason`` value (checked on arrival), signed by
    the sender's race key over ``leave_digest`` (an unsigned or foreign leave changes nothing)."""

    reason: str
    signature: bytes


@message("race-rejoin")
class RaceRejoin(Message):
    """Sent on a re-established link: who I am racing as, where I am, whether I must catch up."""

    raceId: str
    loadoutDigest: str
    nextFrame: int
    catchUp: bool


@message("race-probe")
class RaceProbe(Message):
    """A catch-up probe: asks the receiver for its offer of final snapshots (``catch_up_digest("probe")``)."""

    requestId: int
    signature: bytes


class Candidate(Record):
    """A pinned pre-step snapshot offered for catch-up: its frame and the SHA-256 of its bytes."""

    frame: int
    hash: bytes


@message("race-offer")
class RaceOffer(Message):
    """Up to two pinned candidates, the newest final 8-aligned snapshots of the responder."""

    requestId: int
    candidates: list[Candidate]
    signature: bytes


@message("race-sync-request")
class RaceSyncRequest(Message):
    """Asks the receiver for the pinned snapshot (``frame``, ``hash``) it offered to ``requestId``."""

    requestId: int
    frame: int
    hash: bytes
    signature: bytes


class InputRecord(Record):
    """A peer's own signed input, forwarded unchanged (its signature is by that peer's race key)."""

    peer: str
    frame: int
    events: list[list[Any]]
    prev: bytes
    signature: bytes

    @classmethod
    def of(cls, peer: str, signed: RaceInput) -> InputRecord:
        """``peer``'s signed input as a record, unchanged."""
        return cls(peer, signed.frame, signed.events, signed.prev, signed.signature)

    def signed(self) -> RaceInput:
        """The record's input as its owner signed it."""
        return RaceInput(self.frame, self.events, self.prev, self.signature)


@message("race-snapshot")
class RaceSnapshot(Message):
    """The pinned state of ``frame``; ``inputs`` holds each peer's newest signed input before ``frame``
    (its prediction base) and every signed input from ``frame`` on of the peers that will not re-send
    their own (lost, catching up or gone), so the requester predicts them exactly as the sender did."""

    requestId: int
    frame: int
    state: bytes
    inputs: list[InputRecord]
    signature: bytes


@message("race-relay")
class RaceRelay(Message):
    """Signed inputs of a lost peer, forwarded so every survivor predicts it from the same inputs."""

    inputs: list[InputRecord]


@message("race-resume")
class RaceResume(Message):
    """A caught-up peer: state loaded at ``frame``, its real inputs start at ``resumeFrame``."""

    frame: int
    resumeFrame: int


@message("race-anchor-proposal")
class RaceAnchorProposal(Message):
    """A RaceConsensusAnchorEvent proposed by its ``peerId`` (the link's peer), without signatures."""

    event: dict[str, Any]


@message("race-anchor-signature")
class RaceAnchorSignature(Message):
    """A master-key signature over ``digest`` = ledger_signing_digest of the proposal it endorses."""

    digest: bytes
    signature: bytes
