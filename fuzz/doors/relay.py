"""Relays, both ways, over real Noise links on in-memory streams (trio's autojump clock: every timeout of
the relay and the node passes in no real time):

- ``relay-server``: what a relay receives from nodes. The real ``RelayServer`` admits every connection
  through its own door (handshake, first message, containment); node ``A`` opens a control link and an
  answering link, node ``B`` a connecting link, and each frame of the input is a body one of them seals
  and sends (first byte: which link). Its handler is watched: an exception other than the link's end or
  a peer's coded refusal is a finding even though the door contains it (``internal-error``).
- ``relay-client``: what a node receives from a relay. The node's real reservation keeper
  (``Reservations``) holds a control link and its real ``request_circuit`` waits on a connecting link;
  each frame is a body the relay seals and sends on one of them.

An honest message cannot be guessed by a mutator (a proof signs the link's transcript; a circuit id is
random), so a first byte with ``HONEST`` set sends the honest message of that link instead of the body:
the reservation proof of this link, the accept of the newest ``relay-incoming`` heard, the relay's
grant or notice. The seeds mix both, so mutations reach what follows a granted reservation.

Only an input's first ``MAX_FRAMES`` frames are sent (``_fuzzed_frames``): a relay's conversations are a
few messages deep, and a link's closing rules (3 violations, 16 consecutive drops) act well within them, so
a longer input only repeats states a shorter one reaches while its cost grows with every frame. Uncapped,
the corpora of the first day-long campaigns grew to 77–105 frames an input on average, and the doors ran at
78–79 executions per CPU second.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import structlog.testing
import trio
import trio.testing

from fuzz.harness import Target, frames
from open4wd_base.errors import PeerError
from open4wd_node.net.link import Lane, Link, LinkClosed
from open4wd_node.net.stream_carrier import open_link
from open4wd_node.relay.client import Reservations, request_circuit
from open4wd_node.relay.links import RELAY_LINK_LIMITS, RELAY_REGISTRY
from open4wd_node.relay.server import RelayServer
from protocol.encoding.wire import Message, encode_message
from protocol.identity.keys import Identity
from protocol.link.handshake import DIALER, LISTENER
from protocol.relay.messages import CIRCUIT_ID_BYTES, RelayAccept, RelayCircuit, RelayConnect, RelayIncoming, \
    RelayReserve, RelayReserved
from protocol.relay.proof import sign_reservation

RELAY, NODE_A, NODE_B = (Identity(bytes([i]) * 32) for i in (31, 32, 33))
RELAY_ADDRESS = "fuzz-relay"  # no HOST:PORT: a node's answering dial is refused at once (relay-address-invalid), no socket
HONEST = 0x80  # the first byte's flag for the honest message (module docstring); the other bits choose the link
NOTICE = 0x40  # relay-client: the honest message on the control link is a relay-incoming, not a grant
SETTLE_S = 0.05  # virtual seconds between two frames
AFTER_S = 12.0  # virtual seconds after the last frame: the relay's connect timeout (5 s) and the node's (10 s) pass
MAX_FRAMES = 24  # the frames of an input that are sent (module docstring)


@dataclass
class _End:
    """One fuzzed link end: its link and the messages it received."""

    link: Link
    heard: list[Message] = field(default_factory=list)

    async def read(self) -> None:
        try:
            async for message in self.link:
                self.heard.append(message)
        except LinkClosed:
            return

    async def send_body(self, body: bytes) -> None:
        """``body`` sealed by this end as it is, whatever it holds (what a modified peer can send)."""
        try:
            await self.link.carrier.send(body, Lane.CONTROL)
        except LinkClosed:
            return


async def _quietly(work: Awaitable[object]) -> None:
    """Run ``work``; its link's end (``LinkClosed``) is how it is meant to stop."""
    try:
        await work
    except LinkClosed:
        return


async def _dial(stream: trio.abc.Stream, identity: Identity) -> Link | None:
    try:
        return await open_link(stream, identity, DIALER, expected_peer=RELAY.peer_id, limits=RELAY_LINK_LIMITS,
                               registry=RELAY_REGISTRY)
    except LinkClosed:
        return None


def _fuzzed_frames(data: bytes) -> Iterator[bytes]:
    """The non-empty frames among the first ``MAX_FRAMES`` of ``data``."""
    return (part for part in islice(frames(data), MAX_FRAMES) if part)


def run_logged(session: Callable[[bytes], Awaitable[None]], data: bytes) -> list[MutableMapping[str, Any]]:
    """Run ``session`` on ``data`` on the autojump clock; the logs it wrote (kept out of a campaign's output)."""
    with structlog.testing.capture_logs() as logs:
        trio.run(session, data, clock=trio.testing.MockClock(autojump_threshold=0))
    return logs


# ---- relay-server --------------------------------------------------------------------------------------

CONNECTIONS = ((NODE_A, "127.0.0.1"), (NODE_B, "127.0.0.2"), (NODE_A, "127.0.0.1"))
"""The fuzzed nodes' links to the relay, by the first byte of a frame (without ``HONEST``) modulo 3: A's control link, B's
connecting link, A's answering link (each dialled when its first frame comes)."""


def _honest_to_relay(which: int, end: _End, ends: dict[int, _End]) -> Message:
    if which == 1:
        return RelayConnect(target=NODE_A.peer_id)
    control = ends.get(0)
    incoming = [m for m in (control.heard if control else []) if isinstance(m, RelayIncoming)]
    if which == 2 and incoming:
        return RelayAccept(circuit=incoming[-1].circuit)
    return RelayReserve(proof=sign_reservation(CONNECTIONS[which][0], RELAY.peer_id, end.link.transcript))


async def relay_session(data: bytes) -> None:
    """What a relay receives from nodes (module docstring)."""
    server = RelayServer(RELAY)
    escaped: list[BaseException] = []
    handle = server.door.handler

    async def watched(link: Link) -> None:
        try:
            await handle(link)
        except (LinkClosed, PeerError):
            raise
        except Exception as exc:  # the door contains it; the fuzzer reports it
            escaped.append(exc)
            raise

    server.door.handler = watched
    ends: dict[int, _End] = {}
    async with trio.open_nursery() as nursery:
        for part in _fuzzed_frames(data):
            which = (part[0] & ~HONEST) % len(CONNECTIONS)
            if which not in ends:
                identity, host = CONNECTIONS[which]
                theirs, ours = trio.testing.memory_stream_pair()
                nursery.start_soon(server.door.admit, theirs, f"{host}:40000", host)
                link = await _dial(ours, identity)
                if link is None:
                    continue
                ends[which] = _End(link)
                nursery.start_soon(ends[which].read)
            end = ends[which]
            await end.send_body(encode_message(_honest_to_relay(which, end, ends)) if part[0] & HONEST else part[1:])
            await trio.sleep(SETTLE_S)
        await trio.sleep(AFTER_S)
        nursery.cancel_scope.cancel()
    if escaped:
        raise escaped[0]


# ---- relay-client --------------------------------------------------------------------------------------

GRANT = RelayReserved(ttlMs=3_600_000, circuitMs=14_400_000, circuitBytes=1 << 30)


async def _pair(identity: Identity) -> tuple[Link, _End]:
    """A link between ``identity`` (the node's end, returned first) and the relay (the fuzzed end)."""
    node_stream, relay_stream = trio.testing.memory_stream_pair()
    relay_end: list[Link] = []

    async def relay_side() -> None:
        relay_end.append(await open_link(relay_stream, RELAY, LISTENER, limits=RELAY_LINK_LIMITS, registry=RELAY_REGISTRY))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay_side)
        node = await open_link(node_stream, identity, DIALER, expected_peer=RELAY.peer_id, limits=RELAY_LINK_LIMITS,
                               registry=RELAY_REGISTRY)
    return node, _End(relay_end[0])


def _honest_from_relay(which: int, part: bytes) -> Message:
    if which == 1:
        return RelayCircuit(peer=NODE_A.peer_id)
    if part[0] & NOTICE:
        return RelayIncoming(circuit=bytes(CIRCUIT_ID_BYTES), source=NODE_B.peer_id)
    return GRANT


async def _never_admitted(stream: trio.abc.Stream, address: str, source: str) -> None:
    await trio.aclose_forcefully(stream)


async def client_session(data: bytes) -> None:
    """What a node receives from a relay (module docstring)."""
    keeper = Reservations(NODE_A, (RELAY_ADDRESS,), _never_admitted)
    async with trio.open_nursery() as nursery:
        control, control_relay = await _pair(NODE_A)
        connecting, connecting_relay = await _pair(NODE_B)
        nursery.start_soon(_quietly, keeper._hold(RELAY_ADDRESS, control, nursery))
        nursery.start_soon(_quietly, request_circuit(connecting, RELAY_ADDRESS, RelayConnect(target=NODE_A.peer_id),
                                                     NODE_A.peer_id))
        relay_ends = (control_relay, connecting_relay)
        for end in relay_ends:
            nursery.start_soon(end.read)
        for part in _fuzzed_frames(data):
            which = (part[0] & ~(HONEST | NOTICE)) % 2
            body = encode_message(_honest_from_relay(which, part)) if part[0] & HONEST else part[1:]
            await relay_ends[which].send_body(body)
            await trio.sleep(SETTLE_S)
        await trio.sleep(AFTER_S)
        nursery.cancel_scope.cancel()


def relay_server_once(data: bytes) -> None:
    """What a relay receives from nodes (module docstring)."""
    run_logged(relay_session, data)


def relay_client_once(data: bytes) -> None:
    """What a node receives from a relay (module docstring)."""
    run_logged(client_session, data)


TARGETS = {
    "relay-server": Target("relay-server", relay_server_once, "what a relay receives: reservations, proofs, connects, accepts"),
    "relay-client": Target("relay-client", relay_client_once, "what a node receives from a relay: grants, notices, circuits"),
}
