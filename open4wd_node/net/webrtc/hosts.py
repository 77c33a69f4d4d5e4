"""Which local addresses aioice gathers host candidates on, per negotiation.

aioice (aiortc's ICE) enumerates every interface of the machine and offers each address but loopback
as a host candidate, with no option to choose. A node must choose: a test offers only loopback (or the
addresses of the network namespace it made), never the machine's real interfaces, and a node can be
told which interface to offer. ``gathering_on(hosts)`` sets, for the asyncio tasks a negotiation starts
inside it, the ``HostAddresses`` that aioice's host-address lookup returns; outside one, aioice's own
lookup runs unchanged. The lookup is replaced once per process (``install``), through the module
attribute aioice's gathering calls, and a test checks that aioice still calls it that way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import aioice.ice

from protocol.webrtc.ice import HostAddresses

_HOSTS: ContextVar[HostAddresses | None] = ContextVar("open4wd_webrtc_hosts", default=None)
_AIOICE_LOOKUP: Callable[[bool, bool], list[str]] = aioice.ice.get_host_addresses


def _host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
    """aioice's host-address lookup, answered from the negotiation's ``HostAddresses`` when one is set."""
    hosts = _HOSTS.get()
    if hosts is None or hosts.interfaces:
        return _AIOICE_LOOKUP(use_ipv4, use_ipv6)
    return [a for a in hosts.addresses if (":" in a and use_ipv6) or (":" not in a and use_ipv4)]


def install() -> None:
    """Route aioice's host-address lookup through ``gathering_on`` (idempotent)."""
    aioice.ice.get_host_addresses = _host_addresses


@contextmanager
def gathering_on(hosts: HostAddresses) -> Iterator[None]:
    """Inside the block (and the asyncio tasks started in it), aioice gathers host candidates on ``hosts``."""
    install()
    token = _HOSTS.set(hosts)
    try:
        yield
    finally:
        _HOSTS.reset(token)
