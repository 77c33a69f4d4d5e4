"""Sans-IO version collection (spec/rooms.md §3): every member asks every other member for its record.

Request/answer, ``1 + retries`` attempts of ``timeout_ms`` each, ending early once every peer has
answered. The first valid answer per peer wins; an answer whose claimed sender is not the link's
authenticated peer is dropped. A node never starts on a partial set: ``verdict`` fails closed.

A collector may start with the records it already holds (``collected``): when the member set changes
only the peers still missing are asked (a broadcast when that is everyone, one request each
otherwise), so a join costs each member one request and one answer instead of a new round with
everyone. A node's record does not change while it runs, and the ReadySet re-checks the versions
inside the signed declarations anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ProtocolError
from protocol.versions import ClientVersionInfo, check_compatibility, describe_incompatibility, short_peer
from protocol.wire import Message, message

VERSION_COLLECT_TIMEOUT_MS = 3_000
VERSION_COLLECT_RETRY = 1


@message("version-request")
class VersionRequest(Message):
    sender: str


@message("version-info")
class VersionInfoMessage(Message):
    sender: str
    payload: dict[str, Any]


def answer_version_request(
    request: VersionRequest, from_peer: str, me: str, info: ClientVersionInfo
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

    peer: str
    message: Message


@dataclass(frozen=True)
class ArmTimer:
    deadline_ms: int


@dataclass(frozen=True)
class CollectionFinished:
    collected: dict[str, ClientVersionInfo]
    missing: list[str]


@dataclass
class VersionCollector:
    me: str
    my_info: ClientVersionInfo
    members: list[str]
    timeout_ms: int = VERSION_COLLECT_TIMEOUT_MS
    retries: int = VERSION_COLLECT_RETRY
    collected: dict[str, ClientVersionInfo] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)  # peer -> code of its malformed record
    attempts: int = 0
    deadline_ms: int | None = None
    finished: bool = False

    @property
    def expected(self) -> list[str]:
        return [m for m in dict.fromkeys(self.members) if m != self.me]

    @property
    def missing(self) -> list[str]:
        return [m for m in self.expected if m not in self.collected]

    def _attempt(self, now_ms: int) -> list[object]:
        """Ask the peers still missing: a broadcast when that is everyone, one request each otherwise."""
        self.attempts += 1
        self.deadline_ms = now_ms + self.timeout_ms
        request = VersionRequest(sender=self.me)
        missing = self.missing
        asks = [Broadcast(request)] if missing == self.expected else [Unicast(peer, request) for peer in missing]
        return [*asks, ArmTimer(self.deadline_ms)]

    def _finish(self) -> list[object]:
        self.finished = True
        self.deadline_ms = None
        return [CollectionFinished(self.result(), self.missing)]

    def result(self) -> dict[str, ClientVersionInfo]:
        """Own record plus every collected one (seeded with our own, as the spec says)."""
        return {self.me: self.my_info, **self.collected}

    def start(self, now_ms: int) -> list[object]:
        if self.attempts:
            raise ProtocolError("collector-misuse", "a version collection starts only once")
        if not self.missing:
            return self._finish()
        return self._attempt(now_ms)

    def receive(self, from_peer: str, msg: VersionInfoMessage, now_ms: int) -> list[object]:
        """An answer arrived on the link of ``from_peer`` (the authenticated identity)."""
        if self.finished or msg.sender != from_peer or from_peer not in self.expected or from_peer in self.collected:
            return []
        try:
            self.collected[from_peer] = ClientVersionInfo.from_wire(msg.payload)
        except ProtocolError as exc:
            self.rejected[from_peer] = exc.code
            return []
        self.rejected.pop(from_peer, None)
        return self._finish() if not self.missing else []

    def timer_fired(self, now_ms: int) -> list[object]:
        if self.finished or self.deadline_ms is None or now_ms < self.deadline_ms:
            return []
        if self.attempts <= self.retries:
            return self._attempt(now_ms)
        return self._finish()

    def verdict(self) -> None:
        """Raise unless every peer answered and every peer is compatible with this node."""
        if self.missing:
            names = ", ".join(short_peer(p) for p in self.missing)
            raise ProtocolError("version-collection-failed", f"version collection failed, missing: {names}")
        report = check_compatibility(self.my_info, self.collected)
        if not report.compatible:
            raise ProtocolError("version-incompatible", describe_incompatibility(report))
