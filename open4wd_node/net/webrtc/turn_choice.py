"""Which of its TURN servers a node's links use: the first, in the order given, that answers now.

aiortc hands aioice only the first TURN server of a configuration (and only the first STUN server): a
node given ``--ice-server turn:A --ice-server turn:B`` whose A is down would gather no relay candidate and
fail every relay-only link (``ice-no-candidates``, after aioice's 5 s allocation timeout) while B is up. So
before a link is negotiated the node asks each of its TURN servers for a STUN Binding (coturn answers one
on its port without credentials) and puts first the first server, in the order given, that answered:
A while A answers, B while A is down, A again once it is back. A server that refuses (an ICMP port
unreachable) is known dead at once; one that stays silent is waited for ``PROBE_WAIT_S``. With fewer than
two TURN servers there is nothing to choose and nothing is asked.
"""

from __future__ import annotations

import socket

import trio

from protocol.webrtc.ice import IceScheme, IceServer
from protocol.webrtc.stun import is_binding_success, stun_binding_request

PROBE_WAIT_S = 1.0  # how long a silent server is waited for
PROBE_INTERVAL_S = 0.05  # between two Binding requests to one server (a datagram may be lost)


async def probe_once(probe: trio.socket.SocketType) -> bool | None:
    """Send one Binding request on a connected UDP socket and wait ``PROBE_INTERVAL_S`` for its answer:
    True when it came, None when the port refused it (nothing listens there now), False otherwise."""
    request, transaction = stun_binding_request()
    await probe.send(request)
    with trio.move_on_after(PROBE_INTERVAL_S):
        while True:
            try:
                answer = await probe.recv(2048)
            except ConnectionRefusedError:  # an ICMP port-unreachable came back
                return None
            if is_binding_success(answer, transaction):
                return True
    return False


async def answers(host: str, port: int, wait_s: float = PROBE_WAIT_S) -> bool:
    """Whether a STUN server answers at ``host:port`` within ``wait_s`` (False at once when it refuses)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with trio.socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            await probe.connect((host, port))
        except OSError:
            return False
        with trio.move_on_after(wait_s):
            while True:
                answered = await probe_once(probe)
                if answered is None:  # refused: nothing listens there
                    return False
                if answered:
                    return True
    return False


async def answering_first(servers: tuple[IceServer, ...], wait_s: float = PROBE_WAIT_S) -> tuple[IceServer, ...]:
    """``servers`` with the first TURN server that answers (in their order) moved to where the first TURN
    server stands; unchanged when fewer than two are TURN servers or none answers (the link then fails with
    aioice's code, as it would have)."""
    turns = [server for server in servers if server.scheme is IceScheme.TURN]
    if len(turns) < 2:
        return servers
    results: list[bool | None] = [None] * len(turns)
    done = [trio.Event() for _ in turns]
    chosen: IceServer | None = None
    async with trio.open_nursery() as nursery:

        async def ask(index: int) -> None:
            try:
                results[index] = await answers(turns[index].host, turns[index].port, wait_s)
            finally:
                done[index].set()

        for index in range(len(turns)):
            nursery.start_soon(ask, index)
        for index, server in enumerate(turns):  # the first in order that answered; no need to wait for later ones
            await done[index].wait()
            if results[index]:
                chosen = server
                break
        nursery.cancel_scope.cancel()
    if chosen is None:
        return servers
    others = [server for server in servers if server is not chosen]
    at = servers.index(turns[0])  # where the first TURN server stood: STUN servers keep their places
    return (*others[:at], chosen, *others[at:])
