"""``SyncLayer``: the world of one round and its saved pre-step states (GGRS's ``SyncLayer``).

The session decides *what* to step (inputs, predictions, when to roll back); the sync layer owns the
world's saved states: it saves the pre-step state of every stepped frame in a ring of
``STATE_BUFFER_FRAMES``, restores one of them for a rollback, keeps selected states past the ring (the
checksum votes' states, until released), and replaces everything by a peer's snapshot. The ring holds the
world's own states (``save_own``: copies of its integers, not bytes), turned into the canonical bytes only
for what needs bytes (a vote's hash, a catch-up offer): a session saves every frame but hashes one in
``VOTE_INTERVAL_FRAMES``. A rollback re-steps from the very state it restored without saving it again.
Trust is explicit: a rollback restores the world's own states with ``restore_own`` (no validation: they
never left this node), a peer's snapshot goes through the validating ``load_state``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from open4wd_base.errors import SimError
from protocol.errors import LocalError, ProtocolError
from protocol.race.inputs import STATE_BUFFER_FRAMES
from protocol.race.setup import RaceWorld
from protocol.race.signing import Event

_EMPTY: tuple[int, object] = (-1, None)


class SyncLayer:
    """The world of one round, the frame it is at, and its saved pre-step states."""

    __slots__ = ("world", "_current", "_ring", "_loaded", "_kept")

    def __init__(self, world: RaceWorld) -> None:
        self.world = world
        self._current = world.frame
        self._ring: list[tuple[int, object]] = [_EMPTY] * STATE_BUFFER_FRAMES  # (frame, the world's own state)
        self._loaded: int | None = None  # the frame whose saved state the world was just loaded from
        self._kept: dict[int, bytes] = {}

    @property
    def current_frame(self) -> int:
        """The frame the next step computes (= frames stepped so far)."""
        return self._current

    def step(self, inputs: Mapping[int, Sequence[Event]]) -> None:
        """Save the pre-step state of ``current_frame`` (unless the world was just loaded from it for a
        rollback: the ring holds that very state), then step the world once."""
        frame = self._current
        if self._loaded != frame:
            self._ring[frame % STATE_BUFFER_FRAMES] = (frame, self.world.save_own())
        self._loaded = None
        self.world.step(inputs)
        self._current = frame + 1

    def saved(self, frame: int) -> bytes | None:
        """The pre-step state of ``frame``: the world's own for ``current_frame``, else the ring's, or None
        once it left the ring."""
        if frame == self._current:
            return self.world.save_state()
        state = self._in_ring(frame)
        return None if state is None else self.world.pack_own(state)

    def _in_ring(self, frame: int) -> object | None:
        """The world's own pre-step state of ``frame`` from the ring, or None once it left the ring."""
        kept, state = self._ring[frame % STATE_BUFFER_FRAMES]
        return state if kept == frame else None

    def state(self, frame: int) -> bytes:
        """The pre-step state of a frame the caller knows is held (a final frame at most
        ``STATE_BUFFER_FRAMES`` back). Raises ``LocalError`` ``race-state-not-saved`` otherwise: a bug."""
        state = self.saved(frame)
        if state is None:
            raise LocalError("race-state-not-saved", f"the pre-step state of frame {frame} is no longer saved")
        return state

    def rollback_to(self, frame: int) -> bool:
        """Load the saved pre-step state of ``frame`` so that frames restart there; False (nothing
        changed) when it is older than the saved states."""
        if frame == self._current:
            return True  # the world is at that frame's pre-step state already
        state = self._in_ring(frame)
        if state is None:
            return False
        self.world.restore_own(state)  # a state this world saved itself: no validation
        self._current = frame
        self._loaded = frame
        return True

    # ---- states kept past the ring ------------------------------------------------------------------

    def keep(self, frame: int) -> bytes:
        """Keep the pre-step state of ``frame`` until ``release_before`` passes it, and return it.
        Raises ``LocalError`` as ``state`` does."""
        state = self.state(frame)
        self._kept[frame] = state
        return state

    def kept(self, frame: int) -> bytes:
        """A state kept by ``keep`` (KeyError if it was not kept or is released)."""
        return self._kept[frame]

    def release_before(self, frame: int) -> None:
        """Forget the kept states of frames before ``frame``."""
        for old in [f for f in self._kept if f < frame]:
            del self._kept[old]

    # ---- snapshots ----------------------------------------------------------------------------------

    def load_snapshot(self, state: bytes, frame: int) -> None:
        """Replace the world by a peer's ``state``, which must be the pre-step state of ``frame``; every
        saved and kept state is dropped and frames restart at ``frame``.

        Raises ``ProtocolError`` ``race-snapshot-invalid`` when the world refuses the bytes (its declared
        ``SimError``) or they hold another frame (the world then may hold the refused frame's state: the
        session steps nothing while it waits for a snapshot, and the next one replaces it). Any other
        exception of the world is a bug of this node, never the peer's fault, and propagates.
        """
        try:
            self.world.load_state(state)  # a peer's bytes: validated by the world
        except SimError as exc:  # the world's refusal of the bytes; the snapshot came from a peer
            raise ProtocolError("race-snapshot-invalid", f"the world refused the snapshot ({exc.code})") from exc
        if self.world.frame != frame:
            raise ProtocolError("race-snapshot-invalid", "the snapshot's frame differs from its label")
        self._current = frame
        self._ring = [_EMPTY] * STATE_BUFFER_FRAMES
        self._loaded = None
        self._kept.clear()
