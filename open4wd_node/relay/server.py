"""``RelayServer``: the relay daemon's trio shell (docs/relay.md) around the sans-IO ``RelayBook``.

Every connection comes through the listener's door (``open4wd_node.net.transport.Door``: per-source and
total opening places, the handshake timeout, a capped first frame, 5 s for the first message) and is a
Noise link to the relay; its first message says what it is for:

- ``relay-reserve``: a control link. The reservation lives while the link does and its TTL runs; the node
  refreshes it on the same link, and hears ``relay-incoming`` there when someone connects.
- ``relay-connect``: the relay tells the reserved target (``relay-incoming``), waits up to
  ``connect_timeout_ms`` for the target's answering connection (``relay-accept``), sends ``relay-circuit``
  on both, detaches both streams from their links and copies raw bytes between them (``splice``). The two
  ends then run their own Noise handshake through the circuit: the relay learns the two PeerIds and byte
  counts, nothing else.

A refusal closes the link with its code (counted). ``drain`` stops accepting, sends every reserved node
``relay-draining`` and lets circuits run for up to a grace period.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import structlog
import trio

from open4wd_node.net.link import Link, LinkClosed, now_ms

from open4wd_node.net.stream_carrier import detach_stream, peer_endpoint
from open4wd_node.net.admission import LISTENER_LIMITS, ListenerLimits, source_of
from open4wd_node.net.transport import Door
from open4wd_node.relay.links import RELAY_LINK_LIMITS, RELAY_REGISTRY, source_of_link
from open4wd_node.relay.metrics import RelayMetrics
from open4wd_node.relay.splice import splice
from open4wd_node.runtime.addresses import Address
from protocol.identity.keys import Identity
from protocol.relay.book import Circuit, RelayBook
from protocol.relay.limits import CircuitEnd, Refusal, RelayLimits, RelayRefused
from protocol.relay.messages import CIRCUIT_ID_BYTES, RelayAccept, RelayCircuit, RelayConnect, RelayIncoming, RelayRelease, \
    RelayReserve, RelayReserved
from protocol.relay.meter import CircuitMeter, total_bucket
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.relay")
DEFAULT_LIMITS = RelayLimits()


@dataclass
class _Pending:
    """A circuit waiting for its target's answering connection."""

    circuit: Circuit
    answer: trio.abc.Stream | None = None
    answered: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)


class RelayServer:
    """One relay: its book of reservations and circuits, its control links, its metrics."""

    def __init__(self, identity: Identity, limits: RelayLimits = DEFAULT_LIMITS, door: ListenerLimits = LISTENER_LIMITS) -> None:
        self.identity = identity
        self.limits = limits
        self.book = RelayBook(identity.peer_id, limits)
        self.metrics = RelayMetrics(self.book, lambda: self.book.draining)
        self.door = Door(self._on_link, identity, limits=RELAY_LINK_LIMITS, registry=RELAY_REGISTRY, door=door)
        self.address: Address | None = None
        self._controls: dict[str, Link] = {}
        self._pending: dict[bytes, _Pending] = {}
        self._total = total_bucket(limits, now_ms())
        self._accepting: trio.CancelScope | None = None
        self._circuits: trio.CancelScope | None = None

    @property
    def healthy(self) -> bool:
        """Serving (not draining): what ``/healthz`` says."""
        return not self.book.draining

    async def run(self, host: str, port: int, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve on ``host:port`` until cancelled or drained; ``nursery.start`` gives the bound address.
        ``OSError`` when the address cannot be bound."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound = listeners[0].socket.getsockname()[:2]
        self.address = Address(bound[0], bound[1])

        async def on_connection(stream: trio.SocketStream) -> None:
            endpoint = peer_endpoint(stream)
            address = "unknown" if endpoint is None else str(endpoint)
            await self.door.admit(stream, address, "unknown" if endpoint is None else source_of(endpoint.host))

        with trio.CancelScope() as self._circuits:
            async with trio.open_nursery() as links:
                with trio.CancelScope() as self._accepting:
                    log.info("relay-listening", address=str(self.address), peer=self.identity.peer_id)
                    task_status.started(self.address)
                    await trio.serve_listeners(on_connection, listeners, handler_nursery=links)
                # drained: stop accepting (the listening sockets are closed); the links in ``links`` run on

    async def drain(self, grace_s: float) -> None:
        """Stop accepting, refuse every new reservation and circuit (``relay-draining``), close every control
        link with that code (reserved nodes move to another relay), let circuits run for up to ``grace_s``,
        then end the rest."""
        self.book.draining = True
        if self._accepting is not None:
            self._accepting.cancel()
        log.info("relay-draining", circuits=len(self.book.circuits), reservations=len(self.book.reservations),
                 grace_s=grace_s)
        async with trio.open_nursery() as nursery:
            for link in list(self._controls.values()):
                nursery.start_soon(link.aclose, Refusal.RELAY_DRAINING.value,
                                   "this relay is shutting down; reserve at another relay")
        with trio.move_on_after(grace_s):
            while self.book.circuits:
                await trio.sleep(0.05)  # a drain waits on many circuits' ends: poll the book
        left = len(self.book.circuits)
        if self._circuits is not None:
            self._circuits.cancel()
        log.info("relay-drained", circuits_cut=left)

    # ---- links -----------------------------------------------------------------------------------

    async def _on_link(self, link: Link) -> None:
        first = await link.receive()
        source = source_of_link(link.address)
        if isinstance(first, RelayReserve):
            await self._control(link, first, source)
        elif isinstance(first, RelayConnect):
            await self._connect(link, first, source)
        elif isinstance(first, RelayAccept):
            await self._answer(link, first)
        else:
            await link.aclose("relay-unexpected", f"a link to a relay opens with relay-reserve, relay-connect or "
                                                  f"relay-accept, not {first.TYPE}")

    async def _refused(self, link: Link, exc: RelayRefused) -> None:
        log.info("relay-refused", code=exc.code, reason=exc.message, peer=link.peer_id, address=link.address)
        await link.aclose(exc.code, exc.message)

    async def _control(self, link: Link, first: RelayReserve, source: str) -> None:
        peer = link.peer_id
        if not await self._reserve(link, first, source):
            return
        old = self._controls.get(peer)
        self._controls[peer] = link
        try:
            async with trio.open_nursery() as nursery:
                if old is not None:
                    nursery.start_soon(old.aclose, "reservation-replaced", "a newer control link holds this reservation")
                nursery.start_soon(self._expire, link)
                try:
                    async for message in link:
                        if isinstance(message, RelayReserve):
                            if not await self._reserve(link, message, source):
                                break
                        elif isinstance(message, RelayRelease):
                            log.info("relay-released", peer=peer, reason=message.reason[:200])
                            break
                        else:
                            await link.aclose("relay-unexpected", f"a control link carries no {message.TYPE}")
                except LinkClosed as exc:
                    log.info("relay-control-ended", peer=peer, code=exc.code, reason=exc.message)
                nursery.cancel_scope.cancel()
        finally:
            if self._controls.get(peer) is link:
                del self._controls[peer]
                self.book.release(peer)

    async def _reserve(self, link: Link, request: RelayReserve, source: str) -> bool:
        try:
            reservation = self.book.reserve(link.peer_id, source, request.proof, link.transcript, now_ms())
        except RelayRefused as exc:
            await self._refused(link, exc)
            return False
        self.metrics.reservations.inc()
        log.info("relay-reserved", peer=link.peer_id, address=link.address, expires_ms=reservation.expires_ms)
        await link.send(RelayReserved(ttlMs=self.limits.reservation_ttl_ms, circuitMs=self.limits.circuit_duration_ms,
                                      circuitBytes=self.limits.circuit_bytes))
        return True

    async def _expire(self, link: Link) -> None:
        """Close ``link`` once its peer's reservation has run out without a refresh."""
        while True:
            reservation = self.book.reservations.get(link.peer_id)
            if reservation is None or self._controls.get(link.peer_id) is not link:
                return
            if now_ms() >= reservation.expires_ms:
                self.book.refuse(Refusal.RESERVATION_EXPIRED, "not refreshed")
                await link.aclose(Refusal.RESERVATION_EXPIRED.value,
                                  f"the reservation was not refreshed within {self.limits.reservation_ttl_ms} ms")
                return
            await trio.sleep_until(reservation.expires_ms / 1000)

    async def _connect(self, link: Link, request: RelayConnect, source: str) -> None:
        circuit_id = secrets.token_bytes(CIRCUIT_ID_BYTES)
        try:
            circuit = self.book.open_circuit(circuit_id, link.peer_id, source, PeerId(request.target), now_ms())
        except RelayRefused as exc:
            await self._refused(link, exc)
            return
        pending = self._pending[circuit_id] = _Pending(circuit)
        answer: trio.abc.Stream | None = None
        try:
            control = self._controls.get(circuit.target)
            if control is not None:
                try:
                    await control.send(RelayIncoming(circuit=circuit_id, source=link.peer_id))
                except LinkClosed:
                    pass  # the target's control link just ended: the wait below times out
                with trio.move_on_after(self.limits.connect_timeout_ms / 1000):
                    await pending.answered.wait()
            answer = pending.answer
            if answer is None:
                pending.done.set()
                await self._refused(link, self.book.refuse(
                    Refusal.CIRCUIT_TIMEOUT, f"{circuit.target} did not answer within {self.limits.connect_timeout_ms} ms"))
                return
            await link.send(RelayCircuit(peer=circuit.target))
            dialer = detach_stream(link, "the link became a relay circuit")
            await self._carry(circuit, dialer, answer)
        finally:
            self._pending.pop(circuit_id, None)
            self.book.close_circuit(circuit_id)
            pending.done.set()
            if answer is not None:
                await trio.aclose_forcefully(answer)

    async def _answer(self, link: Link, request: RelayAccept) -> None:
        pending = self._pending.get(request.circuit)
        try:
            circuit = self.book.answer(request.circuit, link.peer_id)
            if pending is None or pending.answered.is_set() or pending.done.is_set():
                raise self.book.refuse(Refusal.CIRCUIT_UNKNOWN, "that circuit is already answered or over")
        except RelayRefused as exc:
            await self._refused(link, exc)
            return
        await link.send(RelayCircuit(peer=circuit.dialer))
        stream = pending.answer = detach_stream(link, "the link became a relay circuit")
        pending.answered.set()
        try:
            await pending.done.wait()  # the connecting side's task carries the circuit
        finally:  # and closes this stream too, unless it gave up on the circuit just before the answer
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(stream)

    async def _carry(self, circuit: Circuit, dialer: trio.abc.Stream, target: trio.abc.Stream) -> None:
        self.metrics.circuits.inc()
        log.info("relay-circuit-opened", dialer=circuit.dialer, target=circuit.target, circuits=len(self.book.circuits))
        meter = CircuitMeter(self.limits, self._total, now_ms())
        end, why = CircuitEnd.DRAINED, "the drain's grace period ended"
        try:
            end, why = await splice(dialer, target, meter, self.metrics.forwarded)
        finally:
            self.metrics.circuit_ends.labels(reason=end.value).inc()
            log.info("relay-circuit-ended", dialer=circuit.dialer, target=circuit.target, reason=end.value, detail=why,
                     bytes=meter.bytes, seconds=round((now_ms() - meter.opened_ms) / 1000, 3))
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(dialer)
