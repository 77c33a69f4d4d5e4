"""A room no member can stall: the host's judgement of a ReadySet that not everyone acknowledged, and the
strikes that remove a member it keeps failing on.

The spec lets any participant stall a round by withholding its ack (spec/rooms.md §4.6: "the way out is to
cancel Ready or leave"): a member that declares Ready with a car the others refuse, again and again, or
refuses every car, or answers nothing, holds everyone else in ``verifying`` for as long as it likes. So
the host decides, and every decision is coded (``StallDecision``), sent to every member
(``room-decision``) and reported:

- Every participant answers a ReadySet within ``ANSWER_TIMEOUT_MS`` (the spec's start-grid phase timeout):
  an ack, or a refusal naming the participants whose declaration it refuses and why (``culprits``). A
  refusal for an asset still being fetched (``asset-missing``) is no answer yet: the member acks once the
  asset is stored, and the host waits for it up to ``FETCH_WAIT_MS``, then takes it as a refusal.
- Once every participant answered (or at the timeout), each refused declaration is judged by the
  participants' answers (``judge``; a participant's own declaration counts as its acceptance of it):
  refused by more of them than accept it, its Ready is withdrawn (``declaration-refused``); accepted by
  more, each refusal of it is overruled and the refuser's Ready is withdrawn (``refusal-overruled``: a car
  every other member accepts counts against the member that refuses it); a tie goes the host's way (the
  host's own seat checked every car too). A refusal that names nobody (the set itself, say) is overruled
  as soon as another participant acked. A participant that did not answer has its Ready withdrawn (``no-answer``), as one
  missing from a start-grid phase does (``grid-timeout``).
- Each withdrawal is a strike (``StrikeBook``). A participant with ``STRIKE_LIMIT`` strikes within
  ``STRIKE_WINDOW_MS`` is removed from the room and refused at the door while it has them; one with a
  strike that is not Ready again within ``READY_AGAIN_MS`` of its last strike (or of its return) is
  removed too (``ready-not-renewed``). The host's own seat is never removed: its strikes are counted and
  reported, and its member does not declare a refused car again by itself.

So a member can cost the room at most ``STRIKE_LIMIT`` failed ceremonies (each over within the answer
timeout, or at once) or ``READY_AGAIN_MS`` of waiting per strike window, and the honest members, whose
Ready survives all of it, start as soon as it is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.identity.keys import PeerId
from protocol.room.messages import Culprit
from protocol.room.states import StallDecision

ANSWER_TIMEOUT_MS = 15_000
"""How long the host waits for every participant's answer to a ReadySet (the spec's
``START_GRID_CEREMONY_PHASE_TIMEOUT_MS``, the bound of the ceremony's other phases)."""
STRIKE_LIMIT = 3
"""Strikes within ``STRIKE_WINDOW_MS`` that remove a participant (the race's three strikes, too)."""
STRIKE_WINDOW_MS = 600_000
"""How long a strike counts: ten minutes, longer than any honest series of failed ceremonies."""
READY_AGAIN_MS = 60_000
"""How long a participant with a strike may stay un-Ready (the spec's ``LOADOUT_SUBMIT_WINDOW_SEC``: the
time a player is given to settle a car)."""
ANSWER_PENDING = frozenset({"asset-missing"})
"""Refusal codes that are not an answer yet: the member is fetching the asset and acks once it is stored."""
FETCH_WAIT_MS = 120_000
"""How long a ReadySet waits, at most, for members still fetching a car's assets (each answer timeout
that ends with only such refusals outstanding extends the wait): a car the others cannot fetch in two
minutes is judged as one they refuse."""


@dataclass(frozen=True)
class Verdict:
    """The host's decision about ``peer``: its Ready is withdrawn for ``decision`` (``code``, ``detail``:
    the refusal's or the timeout's), decided by the answers of ``by``."""

    peer: PeerId
    decision: StallDecision
    code: str
    detail: str
    by: tuple[PeerId, ...]


def judge(participants: Iterable[PeerId], host: PeerId, acks: Iterable[PeerId],
          refusals: Mapping[PeerId, tuple[str, str, list[Culprit]]]) -> list[Verdict]:
    """The verdicts on a ReadySet that some participant refused or did not answer (module docstring), in
    participant order. ``refusals``: refuser → (code, detail, culprits) of its last refusal."""
    roster = list(participants)
    acked = set(acks)
    named = {r: {c.peer: c for c in culprits if c.peer in roster and c.peer != r}
             for r, (_, _, culprits) in refusals.items()}
    verdicts: dict[PeerId, Verdict] = {}

    def accepts(voter: PeerId, peer: PeerId) -> bool | None:
        """``voter``'s view of ``peer``'s declaration: True, False, or None (no answer). A participant's
        own declaration counts as its acceptance of it (it declared that car and build)."""
        if voter == peer or voter in acked:
            return True
        if voter in named:
            return peer not in named[voter]
        return None

    for peer in roster:
        refusers = [r for r in roster if accepts(r, peer) is False]
        if not refusers:
            continue
        acceptors = [a for a in roster if accepts(a, peer) is True]
        refused = len(refusers) > len(acceptors) or (len(refusers) == len(acceptors) and accepts(host, peer) is False)
        if refused:
            culprit = named[refusers[0]][peer]
            verdicts.setdefault(peer, Verdict(peer, StallDecision.DECLARATION_REFUSED, culprit.code, culprit.detail,
                                              tuple(refusers)))
        else:
            for refuser in refusers:
                culprit = named[refuser][peer]
                verdicts.setdefault(refuser, Verdict(refuser, StallDecision.REFUSAL_OVERRULED, culprit.code,
                                                     f"refused {peer[-4:]}'s declaration, which the room accepts: "
                                                     f"{culprit.detail}", tuple(acceptors)))
    for refuser, (code, detail, _) in refusals.items():
        if refuser in roster and not named[refuser] and acked - {refuser} and refuser not in verdicts:
            verdicts[refuser] = Verdict(refuser, StallDecision.REFUSAL_OVERRULED, code,
                                        f"refused the ReadySet, which others acknowledged: {detail}",
                                        tuple(sorted(acked - {refuser})))
    for peer in roster:
        if peer not in acked and peer not in refusals and peer not in verdicts:
            verdicts[peer] = Verdict(peer, StallDecision.NO_ANSWER, "ready-set-timeout",
                                     f"no answer to the ReadySet within {ANSWER_TIMEOUT_MS // 1000} s", ())
    return [verdicts[p] for p in roster if p in verdicts]


class StrikeBook:
    """Each participant's strikes (the times of its withdrawals), kept by PeerId for the room's life so
    that leaving and joining again forgets nothing, and when each must be Ready again."""

    def __init__(self) -> None:
        self._strikes: dict[PeerId, list[int]] = {}
        self._since: dict[PeerId, int] = {}  # peer -> its last strike or return, while it has a strike

    def strike(self, peer: PeerId, now_ms: int) -> int:
        """One more strike for ``peer``; returns how many it has within the window."""
        self._strikes.setdefault(peer, []).append(now_ms)
        self._since[peer] = now_ms
        return self.count(peer, now_ms)

    def count(self, peer: PeerId, now_ms: int) -> int:
        """``peer``'s strikes within ``STRIKE_WINDOW_MS`` of ``now_ms``."""
        kept = [t for t in self._strikes.get(peer, []) if now_ms - t < STRIKE_WINDOW_MS]
        if kept:
            self._strikes[peer] = kept
        else:
            self._strikes.pop(peer, None)
            self._since.pop(peer, None)
        return len(kept)

    def barred(self, peer: PeerId, now_ms: int) -> bool:
        """Whether ``peer`` has the strikes that keep it out of the room."""
        return self.count(peer, now_ms) >= STRIKE_LIMIT

    def returned(self, peer: PeerId, now_ms: int) -> None:
        """``peer`` joined again: a participant with a strike has ``READY_AGAIN_MS`` from now to be Ready."""
        if self.count(peer, now_ms):
            self._since[peer] = now_ms

    def ready(self, peer: PeerId) -> None:
        """``peer`` declared Ready: no deadline runs for it until its next strike."""
        self._since.pop(peer, None)

    def deadlines(self) -> dict[PeerId, int]:
        """Each participant with a strike that must be Ready again, and by when."""
        return {peer: since + READY_AGAIN_MS for peer, since in self._since.items()}

    def forget(self, peer: PeerId) -> None:
        """No deadline runs for ``peer`` any more (it left); its strikes stay."""
        self._since.pop(peer, None)

