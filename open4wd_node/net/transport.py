"""Links over real TCP: ``dial`` a listener, or ``serve`` and hand every authenticated link to a handler.

The listener runs the handshake on each accepted connection in its own task; a connection that fails
the handshake, or a handler that ends by ``LinkClosed`` or a coded ``ProtocolError``, costs only that
connection, never the listener. At most ``max_handshakes`` connections may be mid-handshake at once;
more are closed on arrival, so a burst of silent connections cannot pile up tasks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
import trio

from protocol.errors import ProtocolError
from protocol.link.handshake import DIALER, LISTENER
from protocol.identity.keys import Identity
from protocol.encoding.wire import Message
from open4wd_node.runtime.addresses import Address
from open4wd_node.net.link import Link, LinkClosed, open_link
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits

__all__ = ["Link", "LinkClosed", "LinkLimits", "dial", "serve"]

log = structlog.get_logger("open4wd_node.transport")
MAX_HANDSHAKES = 64

LinkHandler = Callable[[Link], Awaitable[None]]


async def dial(
    host: str,
    port: int,
    identity: Identity,
    *,
    expected_peer: str | None = None,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
) -> Link:
    """Connect and authenticate; ``expected_peer`` (from an invitation) refuses any other listener.

    Raises ``LinkClosed``: ``dial-failed`` when no connection is made within the handshake timeout,
    else a handshake code (docs/transport.md)."""
    try:
        with trio.fail_after(limits.handshake_timeout_ms / 1000):
            stream = await trio.open_tcp_stream(host, port)
    except (OSError, trio.TooSlowError) as exc:
        reason = "timed out" if isinstance(exc, trio.TooSlowError) else (exc.strerror or str(exc))
        raise LinkClosed("dial-failed", f"cannot connect to {Address(host, port)}: {reason}") from None
    try:
        return await open_link(
            stream, identity, DIALER, expected_peer=expected_peer, expensive=expensive, limits=limits, registry=registry
        )
    except LinkClosed as exc:
        if exc.code == "peer-not-open4wd":  # say which address that was: usually a mistyped port
            raise LinkClosed(exc.code, f"{Address(host, port)}: {exc.message}", by_peer=exc.by_peer) from None
        raise


async def serve(
    handler: LinkHandler,
    identity: Identity,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    expensive: frozenset[str] = frozenset(),
    limits: LinkLimits = ROOM_LIMITS,
    registry: dict[str, type[Message]] | None = None,
    max_handshakes: int = MAX_HANDSHAKES,
    task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``host:port`` until cancelled; use ``await nursery.start(serve, ...)`` to get the
    bound ``Address`` (the real port, also when 0 was asked for). Each authenticated link goes to
    ``handler(link)`` and is closed when it returns."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound_host, bound_port = listeners[0].socket.getsockname()[:2]
    pending = 0

    async def on_connection(stream: trio.SocketStream) -> None:
        nonlocal pending
        address = _address(stream)
        if pending >= max_handshakes:
            log.info("link-refused", code="listener-busy", reason=f"{pending} handshakes in progress", address=address)
            await trio.aclose_forcefully(stream)
            return
        pending += 1
        try:
            link = await open_link(stream, identity, LISTENER, expensive=expensive, limits=limits, registry=registry)
        except LinkClosed as exc:
            log.info("link-refused", code=exc.code, reason=exc.message, address=address)
            return
        finally:
            pending -= 1
        try:
            await handler(link)
        except LinkClosed as exc:
            log.info("link-closed", code=exc.code, reason=exc.message, peer=link.peer_id, by_peer=exc.by_peer)
        except ProtocolError as exc:
            log.info("link-rejected", code=exc.code, reason=exc.message, peer=link.peer_id)
            await link.aclose(exc.code, exc.message)
        finally:
            await link.aclose()

    task_status.started(Address(bound_host, bound_port))
    await trio.serve_listeners(on_connection, listeners)


def _address(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
    except OSError:
        return "unknown"
    return str(Address(host, port))
