"""Network addresses: where a node listens, and the address it tells its peers to dial.

``HOST:PORT`` is read by one parser wherever it comes from: ``--listen`` and the ``listen`` key,
``--advertise`` and the ``advertise`` key, and the address a peer announces in the room (dialled for
the race mesh and host succession). An IPv6 host is written in brackets when a port follows.

Start-up matters (see ``open4wd_node.cli.main``): the configuration reads these rules, so this module
imports nothing heavy (no trio, no sockets).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from open4wd_node.runtime.errors import UserError
from open4wd_base.errors import CodedError
from protocol.signaling.url import check_service_url
from protocol.webrtc.ice import IceServer
from open4wd_node.runtime.values import PORT, Rule, ValueRejected, shown

WILDCARDS = frozenset({"0.0.0.0", "::"})
# A room host keeps at most 64 characters of the address a member announces (protocol/room/host.py);
# an advertised address must fit with any port, or the mesh would dial a truncated one.
MAX_ANNOUNCED_CHARS = 64
PORT_DIGITS = re.compile(r"[0-9]{1,5}")
DNS_NAME = re.compile(
    r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?"
)


@dataclass(frozen=True)
class Address:
    """A host (name, IPv4 or IPv6 without brackets) and a port; ``str()`` is ``HOST:PORT`` (``[V6]:PORT``)."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def is_wildcard(self) -> bool:
        """True for ``0.0.0.0`` and ``::``: every interface, never an address to dial."""
        return self.host in WILDCARDS


def _split(text: str, port_optional: bool) -> tuple[str, int | None]:
    """``HOST:PORT``, ``[V6]:PORT``; with ``port_optional`` also ``HOST``, ``V6`` and ``[V6]``."""
    if port_optional and (text.count(":") > 1 and not text.startswith("[") or text.startswith("[") and text.endswith("]")):
        return text.strip("[]"), None  # an IPv6 host alone
    host, sep, port = text.rpartition(":")
    if not sep and port_optional:
        return port, None
    if not sep or not host or not PORT_DIGITS.fullmatch(port) or int(port) > PORT.hi:
        raise ValueRejected(f"takes HOST:PORT (port 0..65535, an IPv6 host in brackets), got {shown(text)}")
    return host.removeprefix("[").removesuffix("]"), int(port)


def parse_address(text: str, code: str = "address-invalid") -> tuple[str, int]:
    """``HOST:PORT`` as a peer announced it (or a user typed it): a coded ``UserError`` when it is not."""
    try:
        host, port = _split(text, port_optional=False)
    except ValueRejected as exc:
        raise UserError(code, f"an address {exc}") from None
    return host, port  # type: ignore[return-value]


class ListenRule(Rule):
    """Where this node accepts links: ``HOST:PORT``; port 0 picks a free one; ``0.0.0.0`` or ``::``
    listens on every interface."""

    metavar = "HOST:PORT"

    @property
    def rule(self) -> str:
        """What a listen address is, in the words of a refusal."""
        return "HOST:PORT (port 0..65535; 0.0.0.0 or :: listens on every interface)"

    def check(self, value: Any) -> Address:
        """``HOST:PORT`` as an ``Address``; ``ValueRejected`` otherwise."""
        return Address(*_split(self.text_of(value).strip(), port_optional=False))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Advertise:
    """What peers are told to dial. ``host`` empty = automatic (the bound address, or the primary
    interface's when listening on a wildcard); ``port`` None = the port actually bound."""

    host: str = ""
    port: int | None = None

    @property
    def automatic(self) -> bool:
        """No host given: the node picks what it advertises (``open4wd_node.net.advertise``)."""
        return not self.host

    def __str__(self) -> str:
        if self.port is None:
            return f"[{self.host}]" if ":" in self.host else self.host
        return str(Address(self.host, self.port))


AUTOMATIC = Advertise()


def _advertisable_host(host: str, text: str) -> str:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if not DNS_NAME.fullmatch(host) or host.replace(".", "").isdigit():
            raise ValueRejected(f"takes a host name or an IP address peers can dial, got {shown(text)}") from None
        return host.rstrip(".")
    if ip.is_unspecified:
        raise ValueRejected(f"takes an address peers can dial, got the wildcard {text!r}: give this machine's address or name")
    if ip.is_multicast or ip.version == 6 and (ip.is_link_local or "%" in host):
        raise ValueRejected(f"takes an address peers can dial, got {shown(text)} (multicast, or IPv6 link-local)")
    return ip.compressed


class AdvertiseRule(Rule):
    """``HOST`` or ``HOST:PORT`` put in invitations and announced to the room; empty = automatic."""

    metavar = "HOST[:PORT]"

    @property
    def rule(self) -> str:
        """What an advertised address is, in the words of a refusal."""
        return "HOST or HOST:PORT that peers can dial (port 1..65535; an IPv6 host in brackets; empty = automatic)"

    def check(self, value: Any) -> Advertise:
        """``HOST`` or ``HOST:PORT`` peers can dial as an ``Advertise`` (empty: automatic); ``ValueRejected``
        for a wildcard, multicast or link-local address, port 0, or one too long to announce."""
        text = self.text_of(value).strip()
        if not text:
            return AUTOMATIC
        host, port = _split(text, port_optional=True)
        if port == 0:
            raise ValueRejected(f"takes a port peers can dial (1..65535), got 0 in {shown(text)}")
        host = _advertisable_host(host, text)
        if len(str(Address(host, PORT.hi))) > MAX_ANNOUNCED_CHARS:
            raise ValueRejected(f"takes an address of at most {MAX_ANNOUNCED_CHARS} characters with its port, got {shown(text)}")
        return Advertise(host, port)


class OptionalListenRule(ListenRule):
    """``HOST:PORT`` to listen on, or empty for "off" (the signaling service's metrics endpoint)."""

    @property
    def rule(self) -> str:
        """What the address is, in the words of a refusal."""
        return "HOST:PORT (port 0..65535) or empty for off"

    def check(self, value: Any) -> Address | None:  # type: ignore[override]
        """The address, or None for the empty text."""
        text = self.text_of(value).strip()
        return super().check(text) if text else None


LISTEN = ListenRule()
METRICS_ADDRESS = OptionalListenRule()
ADVERTISE = AdvertiseRule()


@dataclass(frozen=True)
class CheckedText(Rule):
    """Text a checker of its own accepts (``check_text`` returns its canonical form, or raises a coded
    error or ``ValueError``): a signaling URL, an ICE server, an IP address."""

    words: str
    check_text: Callable[[str], str]
    metavar: str | None = None

    @property
    def rule(self) -> str:
        """What the value is, in the words of a refusal."""
        return self.words

    def check(self, value: Any) -> str:
        """The value in canonical text; ``ValueRejected`` when the checker refuses it."""
        try:
            return self.check_text(self.text_of(value).strip())
        except (CodedError, ValueError):
            raise self.refused(value) from None


def _ice_server(text: str) -> str:
    """``text`` if it is a STUN or TURN server URL (its credentials come from elsewhere, never the URL)."""
    IceServer.parse(text, "", "") if text.startswith("turn:") else IceServer.parse(text)
    return text


SIGNAL_URL = CheckedText("ws://HOST[:PORT][/PATH] or wss://HOST[:PORT][/PATH] of a signaling service (at most 128 "
                         "characters)", check_service_url, "URL")
ICE_SERVER = CheckedText("stun:HOST:PORT or turn:HOST:PORT[?transport=udp|tcp]", _ice_server,
                         "stun:HOST:PORT|turn:HOST:PORT")
IP_ADDRESS = CheckedText("an IPv4 or IPv6 address", lambda text: str(ipaddress.ip_address(text)), "IP")
