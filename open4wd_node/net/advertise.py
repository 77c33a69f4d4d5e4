"""The address a node tells its peers to dial: never a wildcard.

Listening on ``0.0.0.0`` or ``::`` accepts links on every interface, but a wildcard in an invitation
would make each joiner dial itself. So the advertised address is the one the user gave
(``--advertise``), else the concrete address the node listens on, else, on a wildcard, the address of
this machine's primary interface: the source address the kernel picks for a route to the internet,
then for a route to a private (LAN) network. A UDP socket's ``connect`` only looks the route up in the
kernel (nothing is sent, no name is resolved), so the guess costs one system call and never blocks.
With no route at all the node falls back to loopback, where only this machine can join, and says so.
"""

from __future__ import annotations

import enum
import ipaddress
import socket
from dataclasses import dataclass

from open4wd_node.runtime.addresses import Address, Advertise

# Route probes: a public address first (the default route), then one in each private range (a LAN
# without a default route). Nothing is ever sent to them.
ROUTE_PROBES = {
    socket.AF_INET: ("8.8.8.8", "192.168.255.255", "10.255.255.255", "172.31.255.255"),
    socket.AF_INET6: ("2001:4860:4860::8888", "fdff:ffff:ffff:ffff::1"),
}
LOOPBACK = {socket.AF_INET: "127.0.0.1", socket.AF_INET6: "::1"}


class Source(enum.Enum):
    """Where the advertised address came from."""

    OPTION = "option"  # --advertise or the advertise key
    LISTEN = "listen"  # the concrete address the node listens on
    PRIMARY_INTERFACE = "primary-interface"  # guessed: listening on a wildcard
    LOOPBACK = "loopback"  # guessed, and no interface has a route: only this machine can join


@dataclass(frozen=True)
class Advertised:
    """The address peers are told to dial, and where it came from."""

    address: Address
    source: Source

    @property
    def guessed(self) -> bool:
        """The node chose it (listening on a wildcard): worth telling the user, who may know better."""
        return self.source in (Source.PRIMARY_INTERFACE, Source.LOOPBACK)


def _dialable(host: str) -> bool:
    ip = ipaddress.ip_address(host.partition("%")[0])
    return not (ip.is_loopback or ip.is_unspecified or ip.is_link_local)


def primary_interface_host(family: socket.AddressFamily) -> tuple[str, Source]:
    """This machine's address that peers are most likely to reach, for IPv4 or IPv6 listeners."""
    for probe in ROUTE_PROBES[family]:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as udp:
                udp.connect((probe, 9))
                host = udp.getsockname()[0]
        except OSError:  # no route to that network: try the next one
            continue
        if _dialable(host):
            return host, Source.PRIMARY_INTERFACE
    return LOOPBACK[family], Source.LOOPBACK


def advertised_address(bound: Address, advertise: Advertise) -> Advertised:
    """What invitations and room announcements carry for a node listening on ``bound``."""
    if not advertise.automatic:
        return Advertised(Address(advertise.host, advertise.port or bound.port), Source.OPTION)
    if not bound.is_wildcard:
        return Advertised(bound, Source.LISTEN)
    host, source = primary_interface_host(socket.AF_INET6 if ":" in bound.host else socket.AF_INET)
    return Advertised(Address(host, bound.port), source)


def is_loopback_host(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; a host name is taken to be another machine."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
