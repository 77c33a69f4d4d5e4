"""``POST /turn-token``: coturn REST credentials (``use-auth-secret``) for a peer that proves its PeerId
(spec/signaling.md §9), both sides, sans-IO.

    username   = "<expiry>:<peerId>"   expiry = floor(now_ms / 1000) + 300 (unix seconds)
    credential = base64(HMAC-SHA1(key = UTF-8 secret, msg = UTF-8 username))

The request is exactly ``{"peerId", "proof": {timestamp, nonce, signatureHex}}``, the proof the register
proof bound to the room ``/turn-token``. ``TurnDesk`` answers it in the spec's order: 413 body too large,
400 bad shape (no rate budget spent), 429 the source's rate, 403 ``invalid-proof``, 409
``nonce-replayed``, 200 with ``{urls, username, credential, ttlSec}``. Every error has a JSON body
``{"error": code}`` (the spec's Node server sends some empty: a client reads the status only).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from protocol.errors import LocalError, ProtocolError
from protocol.identity.keys import Identity
from protocol.identity.signed import NonceSet
from protocol.signaling.codes import Refusal
from protocol.signaling.limits import TIMESTAMP_TOLERANCE_MS, TURN_BODY_MAX_BYTES, TURN_NONCE_CAPACITY, \
    TURN_REPLY_MAX_BYTES, TURN_TTL_S
from protocol.signaling.proof import TURN_TOKEN_ROOM, RegisterProof, build_proof, check_proof
from protocol.signaling.rates import FixedWindows
from protocol.signaling.values import dumps, parse_object, safe_integer, text
from protocol.identity.keys import PeerId

TURN_SCHEMES = ("turn:", "turns:")
MAX_REPLY_URLS = 16
MAX_REPLY_TEXT = 1024
MAX_TTL_S = 86_400


@dataclass(frozen=True)
class TurnCredentials:
    """TURN servers and the short-lived REST credential to use them with (an ``RTCIceServer``)."""

    urls: tuple[str, ...]
    username: str
    credential: str
    ttl_s: int

    def to_json(self) -> dict[str, Any]:
        """The reply's JSON object, keys in the spec's order."""
        return {"urls": list(self.urls), "username": self.username, "credential": self.credential, "ttlSec": self.ttl_s}

    @property
    def expires_s(self) -> int | None:
        """The expiry (unix seconds) in the username, or None when it has none."""
        head = self.username.split(":", 1)[0]
        return int(head) if head.isdigit() and len(head) < 16 else None


def turn_credential(secret: str, username: str) -> str:
    """coturn's REST credential for ``username``: base64 of HMAC-SHA1 keyed by the shared secret."""
    digest = hmac.new(secret.encode("utf-8"), username.encode("utf-8"), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def mint(secret: str, peer_id: PeerId, now_ms: int, urls: tuple[str, ...], ttl_s: int = TURN_TTL_S) -> TurnCredentials:
    """Credentials for ``peer_id`` valid ``ttl_s`` from ``now_ms`` (module docstring)."""
    username = f"{now_ms // 1000 + ttl_s}:{peer_id}"
    return TurnCredentials(urls, username, turn_credential(secret, username), ttl_s)


def turn_request_body(identity: Identity, now_ms: int) -> bytes:
    """A client's request body: its PeerId and a fresh proof bound to ``/turn-token``."""
    proof = build_proof(identity, TURN_TOKEN_ROOM, now_ms)
    return dumps({"peerId": identity.peer_id, "proof": proof.to_json()}).encode()


def decode_turn_request(body: bytes) -> tuple[PeerId, RegisterProof]:
    """(peerId, proof) of a request body, exactly as the spec's server takes it; ``ProtocolError``
    ``turn-request-invalid`` (not JSON, not UTF-8, other keys, a bad proof shape)."""
    try:
        wire = parse_object(body.decode("utf-8"))
    except (UnicodeDecodeError, ProtocolError):
        raise ProtocolError(Refusal.TURN_REQUEST_INVALID, "the body is not a JSON object") from None
    peer_id = wire.get("peerId")
    if set(wire) != {"peerId", "proof"} or not isinstance(peer_id, str) or not peer_id:
        raise ProtocolError(Refusal.TURN_REQUEST_INVALID, "the body is exactly {peerId, proof}")
    return PeerId(peer_id), RegisterProof.from_turn_request(wire["proof"])  # the proof binds it


def decode_turn_reply(body: bytes) -> TurnCredentials:
    """A server's 200 reply, with bounds (32 KiB, at most 16 URLs of ``turn:``/``turns:`` or ``stun:``,
    texts of at most 1024 characters, a TTL of 1 s to a day); ``ProtocolError`` ``turn-reply-invalid``.
    Keys beyond the four are ignored."""
    refused = ProtocolError("turn-reply-invalid", "the /turn-token reply is not {urls, username, credential, ttlSec}")
    if len(body) > TURN_REPLY_MAX_BYTES:
        raise ProtocolError("turn-reply-invalid", f"the /turn-token reply is over {TURN_REPLY_MAX_BYTES} bytes")
    try:
        wire = parse_object(body.decode("utf-8"))
    except (UnicodeDecodeError, ProtocolError):
        raise refused from None
    urls, ttl = wire.get("urls"), safe_integer(wire.get("ttlSec"))
    username, credential = text(wire.get("username"), MAX_REPLY_TEXT), text(wire.get("credential"), MAX_REPLY_TEXT)
    if (not isinstance(urls, list) or not 1 <= len(urls) <= MAX_REPLY_URLS or username is None or credential is None
            or ttl is None or not 1 <= ttl <= MAX_TTL_S):
        raise refused
    for url in urls:
        if text(url, MAX_REPLY_TEXT) is None or not url.startswith((*TURN_SCHEMES, "stun:")):
            raise refused
    return TurnCredentials(tuple(urls), username, credential, ttl)


@dataclass(frozen=True)
class TurnAnswer:
    """The HTTP answer to one request: ``status``, JSON ``body``, and what was refused (None for a 200) or
    minted for whom (``peer``)."""

    status: int
    body: bytes
    refusal: Refusal | None = None
    peer: PeerId | None = None


def _error(status: int, code: str, refusal: Refusal) -> TurnAnswer:
    return TurnAnswer(status, dumps({"error": code}).encode(), refusal)


class TurnDesk:
    """The server's side of ``/turn-token``: the shared secret, the URLs it hands out, the per-source rate
    and the process-wide cache of used nonces (fail closed when full: 503)."""

    def __init__(self, secret: str, urls: tuple[str, ...], rate_per_min: int, max_sources: int,
                 ttl_s: int = TURN_TTL_S) -> None:
        """A desk minting for ``urls`` (``turn:`` or ``turns:`` only) with ``secret``; ``LocalError``
        ``turn-config-invalid`` for an empty secret or URL list, or another scheme."""
        if not secret or not urls or not all(u.startswith(TURN_SCHEMES) for u in urls):
            raise LocalError("turn-config-invalid", "TURN needs a secret and at least one turn: or turns: URL")
        self._secret = secret
        self.urls = urls
        self.ttl_s = ttl_s
        self._rates = FixedWindows(rate_per_min, max_sources)
        self._nonces = NonceSet(TURN_NONCE_CAPACITY, TIMESTAMP_TOLERANCE_MS)

    def answer(self, body: bytes, source: str, now_ms: int) -> TurnAnswer:
        """The answer to a request from ``source`` with ``body`` (module docstring for the order)."""
        if len(body) > TURN_BODY_MAX_BYTES:
            return _error(413, "body-too-large", Refusal.TURN_BODY_TOO_LARGE)
        try:
            peer_id, proof = decode_turn_request(body)
        except ProtocolError:
            return _error(400, "invalid-request", Refusal.TURN_REQUEST_INVALID)
        if not self._rates.allow(source, now_ms):
            return _error(429, "rate-limited", Refusal.TURN_RATE)
        try:
            check_proof(peer_id, TURN_TOKEN_ROOM, proof, now_ms, Refusal.TURN_PROOF_INVALID)
        except ProtocolError:
            return _error(403, "invalid-proof", Refusal.TURN_PROOF_INVALID)
        key = (peer_id, proof.nonce)
        if self._nonces.seen(key, now_ms):
            return _error(409, "nonce-replayed", Refusal.TURN_REPLAYED)
        if len(self._nonces) >= self._nonces.capacity:
            return _error(503, "unavailable", Refusal.SERVER_BUSY)
        self._nonces.add(key, int(proof.timestamp), now_ms)
        minted = mint(self._secret, peer_id, now_ms, self.urls, self.ttl_s)
        return TurnAnswer(200, dumps(minted.to_json()).encode(), None, peer_id)

    def sweep(self, now_ms: int) -> None:
        """Forget ended rate windows and nonces past the window."""
        self._rates.sweep(now_ms)
        self._nonces.prune(now_ms)
