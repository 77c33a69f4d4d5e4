"""Race wire messages (spec/netcode.md §3), as strict typed msgpack messages.

The sender of every message is the authenticated peer of the link it arrived on, never a field.
Signed messages carry an Ed25519 signature by the round's race sign key over a ``race_signing``
digest; ``race-key`` is signed by the master key. Events travel as ``[skill, hold]`` pairs.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from protocol.encoding.wire import Channel, Message, Record, message
from protocol.identity.keys import PeerId

MAX_INPUT_EVENTS_PER_FRAME = 4
SYNC_SNAPSHOT_MAX_BYTES = 4_194_304
RACE_MESSAGE_MAX_BYTES = 4_194_688
RACE_LINK = Channel("race-link", RACE_MESSAGE_MAX_BYTES + 64 * 1024)
"""Frame limit of a race link: a snapshot response plus its envelope (the plain RACE channel is 16 KiB)."""
INPUT_TYPES = frozenset({"race-inputs", "race-relay"})
"""Types that spend a race link's input bucket (120 burst, 90/s); every other race type spends the
control bucket (32 burst, 32/s), as checksums and catch-up do in spec/netcode.md §2.4."""
MAX_INPUTS_PER_MESSAGE = 33
"""At most this many inputs in one ``race-inputs`` (all its spans together): the input window
``[current − 8, current + 24]`` (protocol/race/inputs.py), the most a receiver can take at once."""
MAX_SENT_INPUTS = 16
"""A ``race-inputs`` this node builds carries at most this many inputs (a backlog goes out over several
messages, oldest first): 16 frames are a quarter of a second, twice the rollback window."""
MAX_SENT_BYTES = 1_200
"""... and its body is at most this many bytes: with its 4-byte length, Noise's 16-byte tag and IPv6 and
TCP headers it fits one packet of the smallest MTU IPv6 allows (1,280 bytes), so one lost packet never
costs more than one message on a thin link."""
SIGNATURE_BYTES = 64
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


class InputSpan(Record, array_like=True):
    """A run of consecutive signed inputs of one owner, encoded compactly (``[owner, frame, prev, runs,
    signatures]`` on the wire): the inputs of ``frame``, ``frame + 1``, …; ``runs`` says their events as
    ``[count, skills]`` pairs (``count`` consecutive frames whose events are the skills of the bit mask
    ``skills``, bit ``i`` for the ``i``-th skill of the spec's order, each with the Hold flag its skill
    has); ``signatures`` is each input's own signature, 64 bytes apiece, in frame order.

    Each input is the ``RaceInput`` of its frame, its events and its ``prev``: the first input's is
    ``prev`` (32 bytes), or, when ``prev`` is empty, the digest of the owner's input of ``frame − 1``
    that the receiver holds; every later one's is the digest of the input before it in the span. So an
    input keeps its own signature over its own chained digest (it verifies alone, as relays, catch-up,
    spectators and the race log need), and a span whose newest signature verifies is verified whole
    (docs/race.md, "Input spans"). ``owner`` is empty for the sender's own inputs, else the PeerId of the
    peer whose inputs the sender forwards."""

    owner: str  # a PeerId, or empty for the sender's own inputs
    frame: int
    prev: bytes
    runs: list[tuple[int, int]]
    signatures: bytes

    @property
    def count(self) -> int:
        """How many inputs the span says it holds (the runs' counts summed)."""
        return sum(count for count, _ in self.runs)


class Want(Record, array_like=True):
    """``[peer, ack]``: the sender's link to ``peer`` is down; it asks the receiver to forward ``peer``'s
    inputs, of which it holds every one up to ``ack`` (as a ``race-inputs``'s own ``ack``)."""

    peer: PeerId
    ack: int


@message("race-inputs")
class RaceInputs(Message):
    """The input message: ``ack``, the newest frame up to which the sender holds every input of the
    receiver (-1: none yet); ``spans``, the sender's inputs that the receiver has not acknowledged and
    has not been sent since (owner ``""``) and those of other peers it forwards because the receiver
    wants them, at most one span per owner and ``MAX_INPUTS_PER_MESSAGE`` inputs in all; ``want``, the
    peers whose link to the sender is down, whose inputs it asks the receiver to forward. An input that
    is not acknowledged for ``RESEND_MS`` after it was sent goes again (docs/race.md, "A race never
    hangs")."""

    ack: int
    spans: list[InputSpan]
    want: list[Want]


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

    peer: PeerId
    frame: int
    events: list[list[Any]]
    prev: bytes
    signature: bytes

    @classmethod
    def of(cls, peer: PeerId, signed: RaceInput) -> InputRecord:
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
