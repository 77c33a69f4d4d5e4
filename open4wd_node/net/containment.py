"""Containment: what one peer sent may end that peer's link, never the room, the race or the node.

Every place where the shell hands a peer's message (or a link's whole life) to the code that handles
it runs that code inside ``contained``. A ``PeerError`` that reaches it is the peer's fault and closes
the link with the error's own code (logged at info, like any refusal); any other exception is this
node's bug, triggered by what the peer sent: it is logged at error level with its traceback and the
link is closed with ``internal-error``, so the peer learns that the fault is ours, not its. Either way
the exception stops there: the tasks of the other links, the room, the race and the node go on.
``LinkClosed`` (the link ended), cancellation and other ``BaseException`` pass through untouched.
A machine that met such a bug says what it is now (``MachineFault``: back to its state before the
message, or broken and ended, protocol/transaction.py); the log record carries both that and the link's
close.

Work done for a peer that has no link of its own here (an asset fetched through the host's relay) is
contained the same way with another ``close``: it reports the end instead of closing a link.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import structlog

from open4wd_base.errors import PeerError
from open4wd_node.net.link import Link, LinkClosed
from protocol.transaction import MachineFault
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.containment")

INTERNAL_ERROR = "internal-error"
INTERNAL_ERROR_TEXT = (
    "the receiving node failed while handling a message from this peer (its own bug, logged there with a traceback)"
)

Close = Callable[[str, str], Awaitable[None]]  # (code, text): end what the peer's input was handled on


@asynccontextmanager
async def contained(peer: PeerId, doing: str, close: Close) -> AsyncIterator[None]:
    """Run the body, which handles what ``peer`` sent (``doing`` says what, for the log); an exception
    other than ``LinkClosed`` ends there and calls ``close(code, text)`` (module docstring)."""
    try:
        yield
    except LinkClosed:
        raise
    except Exception as exc:  # the one place a bug triggered by a peer is caught, logged and contained
        await contain(peer, doing, close, exc)


async def contain(peer: PeerId, doing: str, close: Close, exc: Exception) -> None:
    """What ``contained`` does with an exception (not ``LinkClosed``) that handling ``peer``'s input
    raised: log it and ``close`` with its code, or ``internal-error`` for a bug. For a hot path that
    handles many messages synchronously (the race mesh): a ``try`` there costs nothing until it
    catches, where entering ``contained`` costs an async context manager per message."""
    if isinstance(exc, PeerError):
        log.info("peer-refused", peer=peer, doing=doing, code=exc.code, reason=exc.message)
        await close(exc.code, exc.message)
    elif isinstance(exc, MachineFault):  # both reasons: what the machine is now, and why the link closes
        bug = exc.__cause__ or exc
        log.error(INTERNAL_ERROR, peer=peer, doing=doing, machine=exc.machine, machine_outcome=exc.outcome.value,
                  error=f"{type(bug).__name__}: {bug}", link_closed=INTERNAL_ERROR, exc_info=exc)
        await close(INTERNAL_ERROR, INTERNAL_ERROR_TEXT)
    else:
        log.error(INTERNAL_ERROR, peer=peer, doing=doing, error=f"{type(exc).__name__}: {exc}", exc_info=exc)
        await close(INTERNAL_ERROR, INTERNAL_ERROR_TEXT)


def contained_link(link: Link, doing: str) -> AbstractAsyncContextManager[None]:
    """``contained`` for work on what arrived over ``link``: a fault closes that link."""
    return contained(link.peer_id, doing, link.aclose)
