"""Sans-IO ICE rules of a WebRTC link: which servers, which local addresses, how many remote candidates,
what path a nominated pair took, and the TURN REST credentials coturn accepts.

- ICE servers are always given explicitly (``IceServer.parse``: ``stun:HOST:PORT``, ``turn:HOST:PORT``
  with a username and credential). An empty list means no server: a link never falls back to a public
  STUN server of anyone's choosing.
- ``HostAddresses`` names the local addresses whose host candidates a link may offer: an explicit list
  (loopback in tests, a chosen interface), or every address of the machine's interfaces. ``offered_outside``
  finds any candidate a local description offers outside them, so a link refuses to send one.
- ``CandidateBudget`` bounds the remote candidates one negotiation accepts (a flood is refused, not stored).
- ``link_path`` reads the path of a nominated candidate pair: ``relay`` when either end is a TURN
  relay, else ``prflx`` or ``srflx`` when either end was learned through a NAT, else ``host``.
- ``turn_rest_credentials``: coturn's ``use-auth-secret`` scheme (username ``<expiry>:<peerId>``,
  credential base64(HMAC-SHA1(secret, username))), as the signaling service's ``/turn-token`` mints them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from protocol.errors import LocalError, PeerError
from protocol.webrtc.sdp import Candidate, CandidateType
from protocol.identity.keys import PeerId

TURN_TOKEN_TTL_S = 300  # what the signaling service's /turn-token grants
MAX_REMOTE_CANDIDATES = 64


class IceScheme(StrEnum):
    """The ICE server URL schemes a link uses (no TLS variants: coturn's DTLS hides nothing DTLS does not)."""

    STUN = "stun"
    TURN = "turn"


class IceTransportPolicy(StrEnum):
    """Which local candidates a link offers: ``all``, or ``relay`` (TURN only: the peer never learns an
    address of this machine)."""

    ALL = "all"
    RELAY = "relay"


class LinkPath(StrEnum):
    """How a link is connected, from its nominated candidate pair."""

    HOST = "host"
    SRFLX = "srflx"
    PRFLX = "prflx"
    RELAY = "relay"


@dataclass(frozen=True)
class IceServer:
    """One STUN or TURN server: ``url`` as given (``stun:HOST:PORT``, ``turn:HOST:PORT[?transport=udp|tcp]``)
    and, for TURN, its credentials."""

    url: str
    username: str | None = None
    credential: str | None = None

    @property
    def scheme(self) -> IceScheme:
        """STUN or TURN."""
        return IceScheme(self.url.split(":", 1)[0])

    @property
    def host(self) -> str:
        """The server's host (an IPv6 literal without its brackets)."""
        return _split_url(self.url)[1]

    @property
    def port(self) -> int:
        """The server's port."""
        return _split_url(self.url)[2]

    @classmethod
    def parse(cls, url: str, username: str | None = None, credential: str | None = None) -> "IceServer":
        """Check ``url`` and the credentials. ``LocalError`` ``ice-server-invalid``: a scheme other than
        stun/turn, no host or port, a port out of range, a STUN server with credentials or a TURN server
        without them."""
        scheme, _, _ = _split_url(url)
        if (scheme == IceScheme.TURN) != (username is not None and credential is not None):
            need = "needs a username and a credential" if scheme == IceScheme.TURN else "takes no credentials"
            raise LocalError("ice-server-invalid", f"{url}: a {scheme} server {need}")
        return cls(url, username, credential)


def _split_url(url: str) -> tuple[IceScheme, str, int]:
    scheme, _, rest = url.partition(":")
    where, _, query = rest.partition("?")
    try:
        kind = IceScheme(scheme)
        if query and (kind != IceScheme.TURN or query not in ("transport=udp", "transport=tcp")):
            raise ValueError
        host, _, port_text = where.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        port = int(port_text)
        if not host or "/" in host or not 0 < port < 65536:
            raise ValueError
    except ValueError:
        raise LocalError("ice-server-invalid", f"{url!r} is not stun:HOST:PORT or turn:HOST:PORT[?transport=udp|tcp]") \
            from None
    return kind, host, port


@dataclass(frozen=True)
class TurnCredentials:
    """coturn REST credentials: ``username`` is ``<expiry>:<peerId>``, valid until ``expires_s`` (unix s)."""

    username: str
    credential: str
    expires_s: int


def turn_rest_credentials(secret: str, peer_id: PeerId, now_s: int, ttl_s: int = TURN_TOKEN_TTL_S) -> TurnCredentials:
    """Credentials coturn's ``use-auth-secret`` accepts until ``now_s + ttl_s``: the username
    ``<expiry>:<peerId>`` and base64(HMAC-SHA1(secret, username)), as the signaling service's
    ``/turn-token`` answers them."""
    expires = now_s + ttl_s
    username = f"{expires}:{peer_id}"
    digest = hmac.new(secret.encode(), username.encode(), hashlib.sha1).digest()
    return TurnCredentials(username, base64.b64encode(digest).decode(), expires)


@dataclass(frozen=True)
class HostAddresses:
    """The local addresses whose host candidates a link offers: ``addresses`` (IP literals), or every
    address of this machine's interfaces when ``interfaces`` is set (how a player's node finds its LAN
    address; tests never use it)."""

    addresses: tuple[str, ...] = ()
    interfaces: bool = False

    def __post_init__(self) -> None:
        for address in self.addresses:
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise LocalError("host-address-invalid", f"{address!r} is not an IP address") from None

    @classmethod
    def only(cls, *addresses: str) -> "HostAddresses":
        """Exactly these addresses."""
        return cls(tuple(addresses))

    def allows(self, address: str) -> bool:
        """Whether a host candidate on ``address`` may be offered (``interfaces``: any)."""
        return self.interfaces or _normal(address) in {_normal(a) for a in self.addresses}


def _normal(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


def offered_outside(candidates: Iterable[Candidate], hosts: HostAddresses, servers: Sequence[IceServer]) -> list[Candidate]:
    """The candidates a local description offers that it must not: a host or reflexive candidate on an
    address ``hosts`` does not allow (a reflexive address is what a STUN server saw, so it is allowed
    when that server is one of ``servers`` reached from an allowed address: its related host address is
    checked by its own host candidate), a relay candidate whose address is not a TURN server's, or any
    candidate that is not an IP literal."""
    turn_hosts = {_normal(s.host) for s in servers if s.scheme == IceScheme.TURN}
    stun_given = any(s.scheme in (IceScheme.STUN, IceScheme.TURN) for s in servers)
    wrong = []
    for candidate in candidates:
        if not candidate.is_ip:
            wrong.append(candidate)
        elif candidate.type == CandidateType.HOST and not hosts.allows(candidate.address):
            wrong.append(candidate)
        elif candidate.type in (CandidateType.SRFLX, CandidateType.PRFLX) and not stun_given:
            wrong.append(candidate)
        elif candidate.type == CandidateType.RELAY and _normal(candidate.address) not in turn_hosts:
            wrong.append(candidate)
    return wrong


class CandidateBudget:
    """Counts one negotiation's remote candidates (from the SDP and trickled); past ``limit`` the
    negotiation is refused with ``ice-candidate-flood``, so a flood costs a count, never memory."""

    def __init__(self, limit: int = MAX_REMOTE_CANDIDATES) -> None:
        self.limit = limit
        self.count = 0

    def take(self, count: int = 1) -> None:
        """Charge ``count`` candidates; ``PeerError`` ``ice-candidate-flood`` past the limit."""
        self.count += count
        if self.count > self.limit:
            raise PeerError("ice-candidate-flood", f"the peer offered more than {self.limit} ICE candidates")


def link_path(local: CandidateType | str, remote: CandidateType | str) -> LinkPath:
    """The path of a nominated pair of a ``local`` and a ``remote`` candidate type."""
    kinds = {CandidateType(local), CandidateType(remote)}
    for kind in (CandidateType.RELAY, CandidateType.PRFLX, CandidateType.SRFLX):
        if kind in kinds:
            return LinkPath(kind.value)
    return LinkPath.HOST
