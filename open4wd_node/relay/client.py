"""A node's side of relays (docs/relay.md): ``dial_relayed`` opens a circuit to a reserved peer and runs
the ordinary Noise handshake through it; ``Reservations`` keeps this node reserved at its relays and hands
every circuit someone opens to it to a ``Door``, exactly like a connection accepted directly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
import trio

from open4wd_node.net.link import Link, LinkClosed

from open4wd_node.net.stream_carrier import detach_stream, open_link
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.net.transport import dial
from open4wd_node.relay.links import RELAY_LINK_LIMITS, RELAY_REGISTRY, relayed_address
from open4wd_node.runtime.addresses import parse_address
from open4wd_node.runtime.errors import UserError
from protocol.encoding.wire import HANDSHAKE, Message
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER
from protocol.relay.messages import RelayAccept, RelayCircuit, RelayConnect, RelayIncoming, RelayRelease, RelayReserve, \
    RelayReserved
from protocol.relay.proof import sign_reservation
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.relay.client")

ANSWER_TIMEOUT_S = 10.0  # a relay's own connect timeout (5 s) plus a handshake
RETRY_FIRST_S = 0.5
RETRY_CAP_S = 5.0
Admit = Callable[[trio.abc.Stream, str, str], Awaitable[None]]
"""Where a circuit someone opened to this node goes: ``(stream, address for logs, source)`` (a ``Door``)."""


async def open_circuit(relay: str, identity: Identity, first: Message, expected_peer: str | None) -> tuple[trio.abc.Stream, str]:
    """Dial ``relay``, send ``first`` (a connect or an accept), wait for ``relay-circuit`` and return the raw
    stream and the far end's PeerId; ``LinkClosed`` with the relay's code when it refuses."""
    try:
        host, port = parse_address(relay)
    except UserError as exc:
        raise LinkClosed("relay-address-invalid", exc.message) from None
    link = await dial(host, port, identity, limits=RELAY_LINK_LIMITS, registry=RELAY_REGISTRY)
    return await request_circuit(link, relay, first, expected_peer)


async def request_circuit(link: Link, relay: str, first: Message, expected_peer: str | None) -> tuple[trio.abc.Stream, str]:
    """``open_circuit`` on a link to ``relay`` already open (the fuzzer's door to a relay's answers)."""
    try:
        await link.send(first)
        with trio.fail_after(ANSWER_TIMEOUT_S):
            answer = await link.peek_first(HANDSHAKE.max_frame_bytes)  # read exactly: the circuit's bytes follow
        await link.receive()
    except trio.TooSlowError:
        await link.aclose("relay-timeout", "the relay did not answer")
        raise LinkClosed("relay-timeout", f"relay {relay} did not open the circuit within {ANSWER_TIMEOUT_S:g} s") from None
    except BaseException:
        with trio.CancelScope(shield=True):
            await link.aclose()
        raise
    if not isinstance(answer, RelayCircuit) or (expected_peer is not None and answer.peer != expected_peer):
        await link.aclose("relay-unexpected", "the relay answered with something else than the circuit asked for")
        raise LinkClosed("relay-unexpected", f"relay {relay} answered {answer.TYPE} for another peer")
    return detach_stream(link, "the link became a relay circuit"), answer.peer


async def dial_relayed(
    relay: str,
    identity: Identity,
    target: PeerId,
    *,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
) -> Link:
    """A link to reserved ``target`` through ``relay`` (``HOST:PORT``): end-to-end Noise, ``target``
    authenticated as with ``dial``. Raises ``LinkClosed``: the relay's refusal code (``peer-not-reserved``,
    ``circuit-limit``, …), ``dial-failed``, or a handshake code."""
    stream, _ = await open_circuit(relay, identity, RelayConnect(target=target), target)
    return await open_link(stream, identity, DIALER, expected_peer=target, expensive=expensive, limits=limits,
                           registry=registry)


class Reservations:
    """Keeps this node reserved at each relay of ``relays`` while ``run`` runs: dials, proves its identity,
    refreshes at half the TTL, re-dials a lost relay with backoff (0.5 s doubling to 5 s), answers every
    ``relay-incoming`` with a connection whose circuit goes to ``admit``, and releases on exit."""

    def __init__(self, identity: Identity, relays: tuple[str, ...], admit: Admit) -> None:
        self.identity = identity
        self.relays = relays
        self.admit = admit
        self.held: set[str] = set()
        """The relays where this node holds a reservation now."""
        self.tried = trio.Event()
        """Set once every relay was tried at least once (reserved or refused): a host waits for it before
        it hands out invitations naming its relays."""
        self._attempted: set[str] = set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Keep every reservation until cancelled; ``nursery.start`` returns at once."""
        async with trio.open_nursery() as nursery:
            for relay in self.relays:
                nursery.start_soon(self._keep, relay, nursery)
            if not self.relays:
                self.tried.set()
            task_status.started()

    def _attempt_done(self, relay: str) -> None:
        self._attempted.add(relay)
        if self._attempted >= set(self.relays):
            self.tried.set()

    async def _keep(self, relay: str, nursery: trio.Nursery) -> None:
        delay = RETRY_FIRST_S
        while True:
            try:
                host, port = parse_address(relay)
                link = await dial(host, port, self.identity, limits=RELAY_LINK_LIMITS, registry=RELAY_REGISTRY)
            except (LinkClosed, UserError) as exc:
                log.warning("relay-unreachable", relay=relay, code=exc.code, reason=exc.message, retry_in_s=delay)
                self._attempt_done(relay)
                await trio.sleep(delay)
                delay = min(RETRY_CAP_S, delay * 2)
                continue
            try:
                await self._hold(relay, link, nursery)
                delay = RETRY_FIRST_S  # it was reserved: come back quickly
            except LinkClosed as exc:
                log.warning("relay-reservation-lost", relay=relay, code=exc.code, reason=exc.message, retry_in_s=delay)
            finally:
                self.held.discard(relay)
                self._attempt_done(relay)
                with trio.CancelScope(shield=True):
                    await link.aclose()
            await trio.sleep(delay)
            delay = min(RETRY_CAP_S, delay * 2)

    async def _hold(self, relay: str, link: Link, nursery: trio.Nursery) -> None:
        """Reserve on ``link`` and keep it (refreshing, answering) until it ends (``LinkClosed``)."""
        proof = sign_reservation(self.identity, link.peer_id, link.transcript)
        await link.send(RelayReserve(proof=proof))
        granted = await link.receive()
        if not isinstance(granted, RelayReserved):
            await link.aclose("relay-unexpected", f"expected relay-reserved, got {granted.TYPE}")
            raise LinkClosed("relay-unexpected", f"relay {relay} answered {granted.TYPE}")
        self.held.add(relay)
        self._attempt_done(relay)
        log.info("relay-reserved", relay=relay, relay_peer=link.peer_id, ttl_ms=granted.ttlMs)
        ended: LinkClosed | None = None
        try:
            async with trio.open_nursery() as holding:
                holding.start_soon(self._refresh, link, granted.ttlMs, proof)
                try:
                    async for message in link:
                        if isinstance(message, RelayIncoming):
                            nursery.start_soon(self._answer, relay, message)
                        elif not isinstance(message, RelayReserved):  # a refresh's answer needs nothing more
                            await link.aclose("relay-unexpected", f"a control link carries no {message.TYPE}")
                except LinkClosed as exc:
                    ended = exc
                holding.cancel_scope.cancel()
        except BaseException:  # cancelled: this node is leaving, tell the relay
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                if link.closed is None:
                    await link.send(RelayRelease(reason="the node is leaving"))
            raise
        if ended is not None:
            raise ended

    @staticmethod
    async def _refresh(link: Link, ttl_ms: int, proof: bytes) -> None:
        while True:
            await trio.sleep(ttl_ms / 2000)
            try:
                await link.send(RelayReserve(proof=proof))
            except LinkClosed:
                return

    async def _answer(self, relay: str, incoming: RelayIncoming) -> None:
        try:
            stream, peer = await open_circuit(relay, self.identity, RelayAccept(circuit=incoming.circuit), incoming.source)
        except LinkClosed as exc:
            log.info("relay-answer-failed", relay=relay, source=incoming.source, code=exc.code, reason=exc.message)
            return
        await self.admit(stream, relayed_address(relay), f"relay/{peer}")
