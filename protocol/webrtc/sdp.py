"""Sans-IO checks of a peer's SDP and the transcript that binds a WebRTC link to both identities.

A WebRTC link is authenticated by what the signaling layer already proved: the SDP arrived in a
``signal-v1`` envelope signed by the peer's PeerId. The SDP carries the fingerprint of the peer's DTLS
certificate; aiortc (and any browser) refuses a DTLS handshake whose certificate does not match it. So
the chain PeerId → signed SDP → sha-256 fingerprint → DTLS certificate binds the encrypted link to the
PeerId before any room message. This module holds that chain's sans-IO links:

- ``dtls_fingerprint``: the one sha-256 fingerprint of an SDP, refusing an SDP without one, with a
  malformed one or with two different ones;
- ``bound_sdp``: the SDP with every other fingerprint line removed, so that what the DTLS layer checks
  is exactly what the transcript binds (aiortc adds sha-384 and sha-512 lines; browsers send sha-256);
- ``webrtc_transcript``: SHA-256 over the canonical DAG-CBOR map of the domain, protocol version, room
  scope, both PeerIds in their roles and both fingerprints: the same on both sides, different for every
  pair of certificates (each connection makes a fresh certificate), and what role admission's HMAC covers;
- ``sdp_candidates`` and ``parse_candidate``: the ICE candidates an SDP or a trickled message offers.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass
from enum import StrEnum

from protocol.encoding import dagcbor
from protocol.errors import PeerError

TRANSCRIPT_DOMAIN = "open4wd-node-webrtc-link-v1"
MAX_SDP_BYTES = 131_072  # the signaling wire's bound on an SDP
MAX_CANDIDATE_CHARS = 4_096  # and on a candidate line
FINGERPRINT_LINE = re.compile(r"^a=fingerprint:(\S+) (\S+)\s*$", re.MULTILINE)
SHA256_FINGERPRINT = re.compile(r"[0-9A-F]{2}(:[0-9A-F]{2}){31}")


class SdpRole(StrEnum):
    """Which side of the offer/answer exchange a peer took: the names of the transcript map's keys."""

    OFFERER = "offerer"
    ANSWERER = "answerer"


class CandidateType(StrEnum):
    """The ICE candidate types (RFC 8445 §5.1.1)."""

    HOST = "host"
    SRFLX = "srflx"
    PRFLX = "prflx"
    RELAY = "relay"


def check_sdp_size(sdp: str) -> None:
    """``PeerError`` ``sdp-too-large`` for an SDP beyond the signaling wire's bound."""
    if len(sdp.encode("utf-8", "surrogatepass")) > MAX_SDP_BYTES:
        raise PeerError("sdp-too-large", f"an SDP is at most {MAX_SDP_BYTES} bytes")


def dtls_fingerprint(sdp: str) -> str:
    """The SDP's sha-256 DTLS fingerprint (``AB:CD:…``, 32 upper-case pairs). Raises ``PeerError``:
    ``sdp-too-large``, ``sdp-no-fingerprint`` (none at all), ``sdp-fingerprint-not-sha256`` (only other
    algorithms), ``sdp-fingerprint-malformed`` (a sha-256 value of the wrong shape) or
    ``sdp-fingerprint-ambiguous`` (two different sha-256 values)."""
    check_sdp_size(sdp)
    lines = FINGERPRINT_LINE.findall(sdp.replace("\r\n", "\n"))
    if not lines:
        raise PeerError("sdp-no-fingerprint", "the SDP carries no DTLS fingerprint: the link cannot be authenticated")
    values = {value.upper() for algorithm, value in lines if algorithm.lower() == "sha-256"}
    if not values:
        algorithms = sorted({algorithm.lower() for algorithm, _ in lines})
        raise PeerError("sdp-fingerprint-not-sha256", f"the SDP's DTLS fingerprints use {', '.join(algorithms)}; "
                                                      "a link binds only a sha-256 one")
    if len(values) > 1:
        raise PeerError("sdp-fingerprint-ambiguous", "the SDP names two different sha-256 DTLS fingerprints")
    value: str = next(iter(values))
    if not SHA256_FINGERPRINT.fullmatch(value):
        raise PeerError("sdp-fingerprint-malformed", "a sha-256 fingerprint is 32 hex pairs joined by ':'")
    return value


def bound_sdp(sdp: str) -> str:
    """``sdp`` (whose ``dtls_fingerprint`` was taken) without its fingerprint lines of other algorithms."""
    kept = [line for line in sdp.split("\n")
            if not (m := FINGERPRINT_LINE.match(line.rstrip("\r"))) or m.group(1).lower() == "sha-256"]
    return "\n".join(kept)


def webrtc_transcript(protocol_version: str, scope: str, offerer: str, answerer: str, offerer_fingerprint: str,
                      answerer_fingerprint: str) -> bytes:
    """The link's transcript: SHA-256 of the canonical DAG-CBOR map of the domain, the protocol version,
    the signaling scope, both PeerIds and both sha-256 DTLS fingerprints in their roles (frozen by a
    test vector)."""
    transcript = {
        "domain": TRANSCRIPT_DOMAIN,
        "protocolVersion": protocol_version,
        "scope": scope,
        SdpRole.OFFERER.value: offerer,
        SdpRole.ANSWERER.value: answerer,
        "offererFingerprint": offerer_fingerprint,
        "answererFingerprint": answerer_fingerprint,
    }
    return hashlib.sha256(dagcbor.encode(transcript)).digest()


@dataclass(frozen=True)
class Candidate:
    """One ICE candidate as offered: its transport address and type (``address`` is an IP literal, or a
    host name such as a browser's mDNS ``….local``, which ``is_ip`` tells apart)."""

    foundation: str
    component: int
    protocol: str
    priority: int
    address: str
    port: int
    type: CandidateType

    @property
    def is_ip(self) -> bool:
        """Whether ``address`` is an IP literal (the only kind a link resolves: no DNS, no mDNS)."""
        try:
            ipaddress.ip_address(self.address)
        except ValueError:
            return False
        return True


def parse_candidate(text: str) -> Candidate:
    """A candidate line (``candidate:…``, with or without the ``a=``). ``PeerError`` ``ice-candidate-malformed``
    for anything that is not one (RFC 8839 §5.1)."""
    if len(text) > MAX_CANDIDATE_CHARS:
        raise PeerError("ice-candidate-malformed", f"a candidate line is at most {MAX_CANDIDATE_CHARS} characters")
    line = text.strip()
    line = line[2:] if line.startswith("a=") else line
    fields = line.split()
    try:
        if len(fields) < 8 or not fields[0].startswith("candidate:") or fields[6] != "typ":
            raise ValueError
        component, priority, port = int(fields[1]), int(fields[3]), int(fields[5])
        kind = CandidateType(fields[7])
        if not (1 <= component <= 256 and 0 <= priority < 2**32 and 0 <= port <= 65535):
            raise ValueError
    except ValueError:
        raise PeerError("ice-candidate-malformed", f"not an ICE candidate line: {line[:80]!r}") from None
    return Candidate(fields[0][len("candidate:"):], component, fields[2].lower(), priority, fields[4], port, kind)


def sdp_candidates(sdp: str) -> list[Candidate]:
    """Every candidate an SDP offers (``a=candidate:`` lines), parsed."""
    return [parse_candidate(line) for line in sdp.replace("\r\n", "\n").split("\n") if line.startswith("a=candidate:")]
