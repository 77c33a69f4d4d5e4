"""Sans-IO mutual authentication of a link: both sides prove their master identity over one transcript.

Dialer → ``link-hello``; listener → ``link-hello`` + ``link-auth``; dialer → ``link-auth``, only after
it has checked the listener's proof (so it signs nothing for an impostor, and a stream without any
buffering cannot deadlock with both sides sending). Each
``link-auth`` signs a role-tagged message over the transcript digest: SHA-256 of the canonical DAG-CBOR
map of the domain, the protocol version and both sides' PeerId and fresh 32-byte nonce, each under its
fixed role. Fresh nonces make every digest unique, so a signature cannot be replayed into another link,
and the roles in both the map and the signed message stop it from being reflected. Both sides end with
the same digest, which the room layer binds its role proofs to (docs/transport.md).

Faults: what the other side sends (or fails to send in time) is a ``ProtocolError`` whose code the
shell tells the peer before it hangs up; constructing or driving a ``Handshake`` wrongly from this
node's own code is a ``LocalError``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum

from protocol.encoding import dagcbor
from protocol.errors import LocalError, ProtocolError
from protocol.identity.keys import Identity, is_valid_peer_id, verify_signature
from protocol.versions.record import PROTOCOL_VERSION
from protocol.encoding.wire import Message, decode_message, message

TRANSCRIPT_DOMAIN = "open4wd-node-link-v1"
AUTH_DOMAIN = "open4wd-node-link-auth-v1"
NONCE_BYTES = 32
HANDSHAKE_TIMEOUT_MS = 5_000


class LinkRole(StrEnum):
    """Which end of the link this side is; the value is part of the transcript and the signed bytes."""

    DIALER = "dialer"
    LISTENER = "listener"


class HandshakeState(StrEnum):
    """Where one side's handshake stands (named in ``handshake-unexpected`` messages)."""

    NEW = "new"
    AWAIT_HELLO = "await-hello"
    AWAIT_AUTH = "await-auth"
    DONE = "done"
    FAILED = "failed"


DIALER = LinkRole.DIALER
LISTENER = LinkRole.LISTENER
MAX_VERSION_CHARS = 64
MAX_CLOSE_TEXT = 200
CLOSE_CODE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@message("link-hello")
class LinkHello(Message):
    """Each side's opening: its protocol version, its PeerId and a fresh nonce for the transcript."""

    protocolVersion: str
    peerId: str
    nonce: bytes


@message("link-auth")
class LinkAuth(Message):
    """The sender's signature over its role and the transcript digest (``auth_message``)."""

    signature: bytes


@message("link-close")
class LinkClose(Message):
    """Sent before a side hangs up, in the handshake or later, so the other side learns why."""

    code: str
    message: str


HANDSHAKE_MESSAGES: dict[str, type[Message]] = {cls.TYPE: cls for cls in (LinkHello, LinkAuth, LinkClose)}


def decode_handshake_message(body: bytes) -> Message:
    """Decode a handshake frame; any other message type is out of order. Raises ``ProtocolError``
    (``handshake-unexpected``, or the decoder's own code)."""
    try:
        return decode_message(body, HANDSHAKE_MESSAGES)
    except ProtocolError as exc:
        if exc.code == "unknown-message-type":
            raise ProtocolError(
                "handshake-unexpected", f"only link-hello, link-auth and link-close may open a link; {exc.message}"
            ) from None
        raise


def close_reason(msg: LinkClose) -> tuple[str, str]:
    """A peer's close reason made safe to show: a kebab-case code (else ``link-closed``), short text."""
    code = msg.code if len(msg.code) <= 64 and CLOSE_CODE.fullmatch(msg.code) else "link-closed"
    text = "".join(c if c.isprintable() else "?" for c in msg.message[:MAX_CLOSE_TEXT])
    return code, text


def transcript_digest(
    protocol_version: str, dialer_peer: str, dialer_nonce: bytes, listener_peer: str, listener_nonce: bytes
) -> bytes:
    """SHA-256 of the canonical DAG-CBOR transcript map (layout frozen by a test vector)."""
    transcript = {
        "domain": TRANSCRIPT_DOMAIN,
        "protocolVersion": protocol_version,
        DIALER: {"peerId": dialer_peer, "nonce": dialer_nonce},
        LISTENER: {"peerId": listener_peer, "nonce": listener_nonce},
    }
    return hashlib.sha256(dagcbor.encode(transcript)).digest()


def auth_message(role: str, transcript: bytes) -> bytes:
    """The bytes a ``link-auth`` signature covers: the transcript digest tagged with the signer's role."""
    return dagcbor.encode({"domain": AUTH_DOMAIN, "role": role, "transcript": transcript})


@dataclass(frozen=True)
class HandshakeResult:
    """What a finished handshake proved: who the other side is, and the link's transcript digest."""

    peer_id: str  # the authenticated PeerId of the other side
    transcript: bytes  # 32-byte digest, identical on both sides and unique per link
    role: LinkRole  # this side's role


class Handshake:
    """One side of the handshake. ``start()`` and ``receive()`` return the messages to send next;
    any ``ProtocolError`` they raise ends the attempt (the shell closes the connection with its code)."""

    def __init__(
        self,
        identity: Identity,
        role: str,
        now_ms: int,
        *,
        expected_peer: str | None = None,
        protocol_version: str = PROTOCOL_VERSION,
        nonce: bytes | None = None,
        timeout_ms: int = HANDSHAKE_TIMEOUT_MS,
    ) -> None:
        """One side, as ``role`` (a ``LinkRole``), due to finish by ``now_ms + timeout_ms``; a dialer may
        insist on ``expected_peer`` (the PeerId of an invitation or a room state).

        Raises ``LocalError`` (``handshake-misuse``) for a role that is neither end or a nonce that is
        not 32 bytes, and ``ProtocolError`` (``peer-id-invalid``) when ``expected_peer`` is malformed or
        given to a listener: that PeerId may come from a peer's room state.
        """
        if role not in tuple(LinkRole):
            raise LocalError("handshake-misuse", f"role must be {DIALER!r} or {LISTENER!r}")
        if expected_peer is not None and (role != DIALER or not is_valid_peer_id(expected_peer)):
            raise ProtocolError("peer-id-invalid", "only a dialer expects a peer, and it must be a valid PeerId")
        self.identity = identity
        self.role = LinkRole(role)
        self.expected_peer = expected_peer
        self.protocol_version = protocol_version
        self.nonce = secrets.token_bytes(NONCE_BYTES) if nonce is None else nonce
        if len(self.nonce) != NONCE_BYTES:
            raise LocalError("handshake-misuse", f"a handshake nonce has {NONCE_BYTES} bytes")
        self.timeout_ms = timeout_ms
        self.deadline_ms = now_ms + timeout_ms
        self.result: HandshakeResult | None = None
        self._peer: LinkHello | None = None
        self._transcript: bytes | None = None
        self._state = HandshakeState.NEW

    @property
    def done(self) -> bool:
        """Whether the other side is authenticated (``result`` is set)."""
        return self.result is not None

    def _hello(self) -> LinkHello:
        return LinkHello(protocolVersion=self.protocol_version, peerId=self.identity.peer_id, nonce=self.nonce)

    def _auth(self) -> LinkAuth:
        assert self._transcript is not None
        return LinkAuth(signature=self.identity.sign(auth_message(self.role, self._transcript)))

    def _fail(self, code: str, text: str) -> ProtocolError:
        self._state = HandshakeState.FAILED
        return ProtocolError(code, text)

    def start(self) -> list[Message]:
        """Opening messages: the dialer speaks first, the listener waits for the dialer's hello.

        Raises ``LocalError`` (``handshake-unexpected``) when called twice (the attempt fails).
        """
        if self._state != HandshakeState.NEW:
            self._state = HandshakeState.FAILED
            raise LocalError("handshake-unexpected", "the handshake was already started")
        self._state = HandshakeState.AWAIT_HELLO
        return [self._hello()] if self.role == DIALER else []

    def expire(self, now_ms: int) -> None:
        """Timer event: past the deadline the attempt fails (raises ``ProtocolError`` ``handshake-timeout``)."""
        if not self.done and now_ms >= self.deadline_ms:
            raise self._fail("handshake-timeout", f"the handshake did not finish within {self.timeout_ms} ms")

    def receive(self, msg: Message, now_ms: int) -> list[Message]:
        """The other side's next message; returns what to send back. Raises ``ProtocolError`` for a
        late, out-of-order, malformed or forged message (the attempt fails with that code)."""
        self.expire(now_ms)
        if self._state == HandshakeState.AWAIT_HELLO and isinstance(msg, LinkHello):
            return self._on_hello(msg)
        if self._state == HandshakeState.AWAIT_AUTH and isinstance(msg, LinkAuth):
            return self._on_auth(msg)
        raise self._fail("handshake-unexpected", f"{msg.TYPE} is out of order (handshake state: {self._state})")

    @property
    def _peer_role(self) -> LinkRole:
        return LISTENER if self.role == DIALER else DIALER

    def _on_hello(self, hello: LinkHello) -> list[Message]:
        # Messages name roles, not "this node" and "the peer": the other side reads them too (link-close).
        if hello.protocolVersion != self.protocol_version:
            theirs = hello.protocolVersion[:MAX_VERSION_CHARS]
            raise self._fail(
                "handshake-version-mismatch",
                f"protocol versions differ: {self.role} {self.protocol_version!r}, {self._peer_role} {theirs!r}; "
                "both sides must run the same protocol version",
            )
        if not is_valid_peer_id(hello.peerId):
            raise self._fail("handshake-malformed", f"the {self._peer_role}'s hello carries an invalid PeerId")
        if len(hello.nonce) != NONCE_BYTES:
            raise self._fail(
                "handshake-malformed", f"a hello nonce has {NONCE_BYTES} bytes, the {self._peer_role} sent {len(hello.nonce)}"
            )
        if hello.peerId == self.identity.peer_id:
            raise self._fail("handshake-self", f"both sides present PeerId {hello.peerId} (a self-dial or a reflection)")
        if self.expected_peer is not None and hello.peerId != self.expected_peer:
            raise self._fail(
                "handshake-wrong-peer",
                f"expected peer {self.expected_peer}, the listener is {hello.peerId}; the invitation does not match this host",
            )
        self._peer = hello
        if self.role == DIALER:
            self._transcript = transcript_digest(
                self.protocol_version, self.identity.peer_id, self.nonce, hello.peerId, hello.nonce
            )
        else:
            self._transcript = transcript_digest(
                self.protocol_version, hello.peerId, hello.nonce, self.identity.peer_id, self.nonce
            )
        self._state = HandshakeState.AWAIT_AUTH
        return [] if self.role == DIALER else [self._hello(), self._auth()]

    def _on_auth(self, auth: LinkAuth) -> list[Message]:
        assert self._peer is not None and self._transcript is not None
        if not verify_signature(self._peer.peerId, auth_message(self._peer_role, self._transcript), auth.signature):
            raise self._fail(
                "handshake-invalid-signature",
                f"the {self._peer_role}'s link-auth is not a valid signature by {self._peer.peerId}",
            )
        self._state = HandshakeState.DONE
        self.result = HandshakeResult(peer_id=self._peer.peerId, transcript=self._transcript, role=self.role)
        return [self._auth()] if self.role == DIALER else []
