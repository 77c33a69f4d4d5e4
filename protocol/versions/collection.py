"""Sans-IO version collection (spec/rooms.md §3): every member asks every other member for its record.

Request/answer, ``1 + retries`` attempts of ``timeout_ms`` each, ending early once every peer has
answered. The first valid answer per peer wins; an answer whose claimed sender is not the link's
authenticated peer is dropped. A node never starts on a partial set: ``verdict`` fails closed.

One collector lives as long as the room: when the member set changes (``update_members``) it keeps
the records of the members still present and asks only peers it holds no record of and has not asked
in the current attempt (a broadcast when that is everyone, one request each otherwise), so a join
costs each member one request and one answer instead of a new round with everyone, even while joins
overlap. A node's record does not change while it runs, and the ReadySet re-checks the versions inside
the signed declarations anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeAlias

from protocol.errors import LocalError, ProtocolError
from protocol.versions.record import ClientVersionInfo, check_compatibility, describe_incompatibility, short_peer
from protocol.encoding.wire import Message, message
from protocol.identity.keys import PeerId

VERSION_COLLECT_TIMEOUT_MS = 3_000
VERSION_COLLECT_RETRY = 1


@message("version-request")
class VersionRequest(Message):
    """``sender`` asks for the receiver's version record (its claim is checked against the link)."""

    sender: PeerId


@message("version-info")
class VersionInfoMessage(Message):
    """``sender``'s version record (``ClientVersionInfo.to_wire``), checked strictly on receipt."""

    sender: PeerId
    payload: dict[str, Any]


def answer_version_request(
    request: VersionRequest, from_peer: PeerId, me: PeerId, info: ClientVersionInfo
) -> VersionInfoMessage | None:
    """The reply to a request, or None for an impersonated request or our own."""
    if request.sender != from_peer or request.sender == me:
        return None
    return VersionInfoMessage(sender=me, payload=info.to_wire())


@dataclass(frozen=True)
class Broadcast:
    """Send ``message`` to every other member."""

    message: Message


@dataclass(frozen=True)
class Unicast:
    """Send ``message`` to ``peer`` only."""

    peer: PeerId
    message: Message


@dataclass(frozen=True)
class ArmTimer:
    """Call ``timer_fired`` at ``deadline_ms`` (also readable as ``VersionCollector.deadline_ms``)."""

    deadline_ms: int


@dataclass(frozen=True)
class CollectionFinished:
    """The collection ended: every record it holds (this node's own included) and who never answered."""

    collected: dict[PeerId, ClientVersionInfo]
    missing: list[PeerId]


CollectorAction: TypeAlias = Broadcast | Unicast | ArmTimer | CollectionFinished
"""Everything ``VersionCollector`` returns."""


@dataclass
class VersionCollector:
    """The sans-IO version collection of one member, for the life of its room (see the module text)."""

    me: PeerId
    my_info: ClientVersionInfo
    members: list[PeerId]
    timeout_ms: int = VERSION_COLLECT_TIMEOUT_MS
    retries: int = VERSION_COLLECT_RETRY
    collected: dict[PeerId, ClientVersionInfo] = field(default_factory=dict)
    rejected: dict[PeerId, str] = field(default_factory=dict)  # peer -> code of its malformed record
    attempts: int = 0
    asked: set[PeerId] = field(default_factory=set)  # peers asked in the current attempt
    deadline_ms: int | None = None
    finished: bool = False

    @property
    def expected(self) -> list[PeerId]:
        """The peers whose records are wanted: every member but this node, once each."""
        return [m for m in dict.fromkeys(self.members) if m != self.me]

    @property
    def missing(self) -> list[PeerId]:
        """Expected peers with no valid record yet."""
        return [m for m in self.expected if m not in self.collected]

    def _attempt(self, now_ms: int) -> list[CollectorAction]:
        self.attempts += 1
        self.asked = set()
        return self._ask(self.missing, now_ms)

    def _ask(self, peers: list[PeerId], now_ms: int) -> list[CollectorAction]:
        """Ask ``peers`` (a broadcast when that is everyone); each gets a whole timeout to answer."""
        self.asked.update(peers)
        self.deadline_ms = now_ms + self.timeout_ms
        request = VersionRequest(sender=self.me)
        asks: list[CollectorAction] = (
            [Broadcast(request)] if peers == self.expected else [Unicast(peer, request) for peer in peers]
        )
        return [*asks, ArmTimer(self.deadline_ms)]

    def _finish(self) -> list[CollectorAction]:
        self.finished = True
        self.deadline_ms = None
        return [CollectionFinished(self.result(), self.missing)]

    def result(self) -> dict[PeerId, ClientVersionInfo]:
        """Own record plus every collected one (seeded with our own, as the spec says)."""
        return {self.me: self.my_info, **self.collected}

    def start(self, now_ms: int) -> list[CollectorAction]:
        """Ask every expected peer (or finish at once when there is none).

        Raises ``LocalError`` (``collector-misuse``) when called twice: a collection starts only once.
        """
        if self.attempts:
            raise LocalError("collector-misuse", "a version collection starts only once")
        if not self.missing:
            return self._finish()
        return self._attempt(now_ms)

    def update_members(self, members: list[PeerId], now_ms: int) -> list[CollectorAction]:
        """The member set changed: forget who left, keep the other records, ask whoever is new.

        A finished collection starts a new one over the new set (its peers still missing are asked
        again); one in progress asks only the peers it has not asked in this attempt.
        """
        self.members = list(members)
        self.collected = {p: info for p, info in self.collected.items() if p in self.expected}
        self.rejected = {p: code for p, code in self.rejected.items() if p in self.expected}
        if self.finished:
            self.finished, self.attempts = False, 0
            return self.start(now_ms)
        if not self.missing:
            return self._finish()
        new = [p for p in self.missing if p not in self.asked]
        return self._ask(new, now_ms) if new else []

    def receive(self, from_peer: PeerId, msg: VersionInfoMessage, now_ms: int) -> list[CollectorAction]:
        """An answer arrived on the link of ``from_peer`` (the authenticated identity). Never raises for
        what the peer sent: a malformed record counts as missing (its code is kept in ``rejected``)."""
        if self.finished or msg.sender != from_peer or from_peer not in self.expected or from_peer in self.collected:
            return []
        try:
            self.collected[from_peer] = ClientVersionInfo.from_wire(msg.payload)
        except ProtocolError as exc:
            self.rejected[from_peer] = exc.code
            return []
        self.rejected.pop(from_peer, None)
        return self._finish() if not self.missing else []

    def timer_fired(self, now_ms: int) -> list[CollectorAction]:
        """Timer event: past the deadline, retry the peers still missing once, then finish."""
        if self.finished or self.deadline_ms is None or now_ms < self.deadline_ms:
            return []
        if self.attempts <= self.retries:
            return self._attempt(now_ms)
        return self._finish()

    def verdict(self) -> None:
        """Raise unless every peer answered and every peer is compatible with this node.

        Raises ``ProtocolError``: ``version-collection-failed`` (naming the peers that never answered)
        or ``version-incompatible`` (naming each peer's reasons): the peers' side of the rule failed.
        """
        if self.missing:
            names = ", ".join(short_peer(p) for p in self.missing)
            raise ProtocolError("version-collection-failed", f"version collection failed, missing: {names}")
        report = check_compatibility(self.my_info, self.collected)
        if not report.compatible:
            raise ProtocolError("version-incompatible", describe_incompatibility(report))
