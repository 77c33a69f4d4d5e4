"""Sans-IO link handshake: Noise XX whose payloads bind each side's Ed25519 identity to its Noise key.

After TCP connect the dialer is the Noise initiator (``Noise_XX_25519_ChaChaPoly_SHA256``,
``protocol.link.noise``). Each XX message travels in a ``link-noise`` frame; the payloads are modelled
on libp2p's Noise handshake payload:

    dialer   → e               payload ``link-version {protocolVersion}``        (in the clear, hashed)
    listener ← e, ee, s, es    payload ``link-identity {protocolVersion, peerId, signature}`` (encrypted)
    dialer   → s, se           payload ``link-identity {protocolVersion, peerId, signature}`` (encrypted)

``signature`` is the sender's Ed25519 master-key signature over ``"open4wd-node-noise-static-key-v1:" ‖
its static Noise public key`` (libp2p signs ``"noise-libp2p-static-key:" ‖ key``), so the PeerId is
bound to the key whose private half the Noise handshake proves. Each side checks, in order: the
protocol version, a valid PeerId, not our own PeerId, the dialer's expected PeerId, the signature. The
dialer checks the listener before it writes its own identity, so it reveals and signs nothing for an
impostor. A fresh static key is made for every link (nothing to store; the signature is then unique
to the link too).

The link's ``transcript`` (what the room layer's HMAC role proof covers) is derived from the final
Noise handshake hash, which covers both ephemeral and static keys and every payload: it is the same on
both sides and different for every session, so a role proof cannot be replayed into another link.

Faults: what the other side sends (or fails to send in time) is a ``ProtocolError`` whose code the
shell tells the peer in a ``link-close`` before it hangs up: in the clear, as nothing is keyed yet,
except for a listener refusing the identity in a message 3 that Noise accepted: the dialer's link is
open by then, so that refusal is sealed with ``refusal_cipher``;
constructing or driving a ``Handshake`` wrongly from this node's own code is a ``LocalError``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeVar

import msgpack

from protocol.encoding import dagcbor
from protocol.encoding.wire import Message, decode_message, encode_message, message
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.keys import Identity, is_valid_peer_id, verify_signature
from protocol.link.noise import DHLEN, NoiseXX, Role
from protocol.versions.record import PROTOCOL_VERSION
from protocol.identity.keys import PeerId

TRANSCRIPT_DOMAIN = "open4wd-node-link-v2"
STATIC_KEY_DOMAIN = b"open4wd-node-noise-static-key-v1:"
HANDSHAKE_TIMEOUT_MS = 5_000


class LinkRole(StrEnum):
    """Which end of the link this side is: the dialer is the Noise initiator; the value is part of the
    transcript map."""

    DIALER = "dialer"
    LISTENER = "listener"


class HandshakeState(StrEnum):
    """Where one side's handshake stands: the XX message it waits for (named in ``handshake-unexpected``)."""

    NEW = "new"
    AWAIT_FIRST = "await-message-1"
    AWAIT_SECOND = "await-message-2"
    AWAIT_THIRD = "await-message-3"
    DONE = "done"
    FAILED = "failed"


DIALER = LinkRole.DIALER
LISTENER = LinkRole.LISTENER
MAX_VERSION_CHARS = 64
MAX_CLOSE_TEXT = 200
CLOSE_CODE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@message("link-noise")
class LinkNoise(Message):
    """One message of the Noise XX handshake (``noise``: its bytes exactly as Noise writes them)."""

    noise: bytes


@message("link-close")
class LinkClose(Message):
    """Sent before a side hangs up, so the other side learns why: in the clear during the handshake,
    sealed like every other frame once the link is open."""

    code: str
    message: str


@message("link-version")
class LinkVersion(Message):
    """The payload of XX message 1 (the dialer's ``e``): its protocol version, so a listener of another
    version refuses with ``handshake-version-mismatch`` before anything else."""

    protocolVersion: str


@message("link-identity")
class LinkIdentity(Message):
    """The payload of XX messages 2 and 3: the sender's protocol version, its PeerId (its Ed25519 public
    key) and its signature over its static Noise key (``static_key_message``)."""

    protocolVersion: str
    peerId: PeerId
    signature: bytes


HANDSHAKE_MESSAGES: dict[str, type[Message]] = {cls.TYPE: cls for cls in (LinkNoise, LinkClose)}
PAYLOAD_MESSAGES: dict[str, type[Message]] = {cls.TYPE: cls for cls in (LinkVersion, LinkIdentity)}
HANDSHAKE_TYPES = frozenset(HANDSHAKE_MESSAGES) | frozenset(PAYLOAD_MESSAGES)  # never valid on an open link

P = TypeVar("P", bound=Message)


class FrameCipher(Protocol):
    """One direction of an open link's frame protection: ``seal`` what this side sends, ``open`` what it
    receives (``PeerError`` ``link-tampered`` when a frame does not authenticate). A ``Link`` gets two
    by composition (``protocol.link.noise.TransportCipher`` in the product)."""

    @property
    def overhead(self) -> int:
        """Bytes a sealed frame adds to its plaintext (16 for ChaCha20-Poly1305's tag)."""
        ...

    def seal(self, plaintext: bytes) -> bytes:
        """The next frame of this direction, sealed."""
        ...

    def open(self, ciphertext: bytes) -> bytes:
        """The plaintext of the next frame of this direction; ``PeerError`` (``link-tampered``) otherwise."""
        ...


def peek_protocol_version(body: bytes) -> str | None:
    """The text ``protocolVersion`` of a msgpack map, without checking anything else, or None. Every
    protocol version opens with such a field (protocol 1 in its ``link-hello`` frame, protocol 2 in the
    ``link-version`` payload), so versions can tell each other apart whatever else changed."""
    try:
        value = msgpack.unpackb(body, raw=False, strict_map_key=True, ext_hook=lambda code, data: None, timestamp=0)
    except (ValueError, TypeError, msgpack.exceptions.UnpackException):
        return None
    version = value.get("protocolVersion") if isinstance(value, dict) else None
    return version[:MAX_VERSION_CHARS] if isinstance(version, str) else None


def _version_mismatch(mine: str, mine_role: str, theirs: str, their_role: str) -> ProtocolError:
    # Messages name roles, not "this node" and "the peer": the other side reads them too (link-close).
    return ProtocolError(
        "handshake-version-mismatch",
        f"protocol versions differ: {mine_role} {mine!r}, {their_role} {theirs!r}; "
        "both sides must run the same protocol version",
    )


def decode_handshake_message(body: bytes, protocol_version: str = PROTOCOL_VERSION) -> Message:
    """Decode a handshake frame (``link-noise`` or ``link-close``); any other message type is out of
    order. Raises ``ProtocolError``: ``handshake-version-mismatch`` for an opening frame of another
    protocol version that names it, such as protocol 1's ``link-hello`` (so an old dialer learns why),
    else ``handshake-unexpected``, or the decoder's own code."""
    try:
        return decode_message(body, HANDSHAKE_MESSAGES)
    except ProtocolError as exc:
        if exc.code == "unknown-message-type":
            legacy = peek_protocol_version(body)
            if legacy is not None and legacy != protocol_version:
                raise _version_mismatch(protocol_version, "this side", legacy, "the other side (no Noise)") from None
            raise ProtocolError(
                "handshake-unexpected", f"only link-noise and link-close may open a link; {exc.message}"
            ) from None
        raise


def close_reason(msg: LinkClose) -> tuple[str, str]:
    """A peer's close reason made safe to show: a kebab-case code (else ``link-closed``), short text."""
    code = msg.code if len(msg.code) <= 64 and CLOSE_CODE.fullmatch(msg.code) else "link-closed"
    text = "".join(c if c.isprintable() else "?" for c in msg.message[:MAX_CLOSE_TEXT])
    return code, text


def static_key_message(static_public_key: bytes) -> bytes:
    """What a ``link-identity`` signature covers: the domain string, then the sender's 32-byte static
    Noise public key."""
    return STATIC_KEY_DOMAIN + static_public_key


def transcript_digest(protocol_version: str, handshake_hash: bytes, dialer_peer: str, listener_peer: str) -> bytes:
    """The link's transcript: SHA-256 of the canonical DAG-CBOR map of the domain, the protocol version,
    the final Noise handshake hash and both PeerIds in their roles (layout frozen by a test vector)."""
    transcript = {
        "domain": TRANSCRIPT_DOMAIN,
        "protocolVersion": protocol_version,
        "handshakeHash": handshake_hash,
        DIALER: dialer_peer,
        LISTENER: listener_peer,
    }
    return hashlib.sha256(dagcbor.encode(transcript)).digest()


@dataclass(frozen=True)
class HandshakeResult:
    """What a finished handshake proved and set up: who the other side is, the link's transcript, and the
    two frame ciphers of the open link."""

    peer_id: PeerId  # the authenticated PeerId of the other side
    transcript: bytes  # 32-byte digest, identical on both sides and unique per session
    role: LinkRole  # this side's role
    handshake_hash: bytes  # the final Noise handshake hash the transcript is derived from
    send: FrameCipher  # seals what this side sends
    receive: FrameCipher  # opens what the other side sends


class Handshake:
    """One side of the handshake. ``start()`` and ``receive()`` return the frames to send next;
    any ``ProtocolError`` they raise ends the attempt (the shell closes the connection with its code)."""

    def __init__(
        self,
        identity: Identity,
        role: str,
        now_ms: int,
        *,
        expected_peer: str | None = None,
        protocol_version: str = PROTOCOL_VERSION,
        static_key: bytes | None = None,
        ephemeral_key: bytes | None = None,
        timeout_ms: int = HANDSHAKE_TIMEOUT_MS,
    ) -> None:
        """One side, as ``role`` (a ``LinkRole``), due to finish by ``now_ms + timeout_ms``; a dialer may
        insist on ``expected_peer`` (the PeerId of an invitation or a race-mesh peer). ``static_key`` and
        ``ephemeral_key`` (32-byte X25519 private keys) are fresh random keys unless given (test vectors).

        Raises ``LocalError`` (``handshake-misuse``) for a role that is neither end, an ``expected_peer``
        given to a listener, or a key that is not 32 bytes, and ``ProtocolError`` (``peer-id-invalid``)
        when ``expected_peer`` is malformed: that PeerId may come from a peer's room state.
        """
        if role not in tuple(LinkRole):
            raise LocalError("handshake-misuse", f"role must be {DIALER!r} or {LISTENER!r}")
        if expected_peer is not None and role != DIALER:
            raise LocalError("handshake-misuse", "only a dialer expects a peer")
        if expected_peer is not None and not is_valid_peer_id(expected_peer):
            raise ProtocolError("peer-id-invalid", "an expected peer must be a valid PeerId")
        static_key = secrets.token_bytes(DHLEN) if static_key is None else static_key
        if len(static_key) != DHLEN or (ephemeral_key is not None and len(ephemeral_key) != DHLEN):
            raise LocalError("handshake-misuse", f"a Noise private key has {DHLEN} bytes")
        self.identity = identity
        self.role = LinkRole(role)
        self.expected_peer = expected_peer
        self.protocol_version = protocol_version
        self.timeout_ms = timeout_ms
        self.deadline_ms = now_ms + timeout_ms
        self.result: HandshakeResult | None = None
        # Seals this side's refusal when the other side already holds an open link: a listener that
        # read a valid message 3 whose identity it refuses (None otherwise: the refusal goes in the clear).
        self.refusal_cipher: FrameCipher | None = None
        self._noise = NoiseXX(Role.INITIATOR if self.role == DIALER else Role.RESPONDER, static_key,
                              ephemeral_private=ephemeral_key)
        self._state = HandshakeState.NEW

    @property
    def done(self) -> bool:
        """Whether the other side is authenticated (``result`` is set)."""
        return self.result is not None

    @property
    def state(self) -> HandshakeState:
        """Where this side stands."""
        return self._state

    @property
    def _peer_role(self) -> LinkRole:
        return LISTENER if self.role == DIALER else DIALER

    def _fail(self, code: str, text: str) -> ProtocolError:
        self._state = HandshakeState.FAILED
        return ProtocolError(code, text)

    def _identity(self) -> LinkIdentity:
        signature = self.identity.sign(static_key_message(self._noise.static_public))
        return LinkIdentity(protocolVersion=self.protocol_version, peerId=self.identity.peer_id, signature=signature)

    def start(self) -> list[Message]:
        """Opening frames: the dialer writes XX message 1, the listener waits for it.

        Raises ``LocalError`` (``handshake-unexpected``) when called twice (the attempt fails).
        """
        if self._state != HandshakeState.NEW:
            self._state = HandshakeState.FAILED
            raise LocalError("handshake-unexpected", "the handshake was already started")
        if self.role == LISTENER:
            self._state = HandshakeState.AWAIT_FIRST
            return []
        self._state = HandshakeState.AWAIT_SECOND
        return [self._write(LinkVersion(self.protocol_version))]

    def expire(self, now_ms: int) -> None:
        """Timer event: past the deadline the attempt fails (raises ``ProtocolError`` ``handshake-timeout``)."""
        if not self.done and now_ms >= self.deadline_ms:
            raise self._fail("handshake-timeout", f"the handshake did not finish within {self.timeout_ms} ms")

    def receive(self, msg: Message, now_ms: int) -> list[Message]:
        """The other side's next frame; returns what to send back. Raises ``ProtocolError`` for a late,
        out-of-order, malformed, forged or altered message (the attempt fails with that code)."""
        self.expire(now_ms)
        waiting = self._state in (HandshakeState.AWAIT_FIRST, HandshakeState.AWAIT_SECOND, HandshakeState.AWAIT_THIRD)
        if not waiting or not isinstance(msg, LinkNoise):
            raise self._fail("handshake-unexpected", f"{msg.TYPE} is out of order (handshake state: {self._state})")
        payload = self._read(msg.noise)
        if self._state == HandshakeState.AWAIT_FIRST:
            self._payload(payload, LinkVersion)
            self._state = HandshakeState.AWAIT_THIRD
            return [self._write(self._identity())]
        try:
            peer = self._check_identity(self._payload(payload, LinkIdentity))
        except ProtocolError:
            if self._noise.complete:  # the listener refusing message 3: the dialer's link is open already
                self.refusal_cipher = self._noise.split()[0]
            raise
        reply: list[Message] = [self._write(self._identity())] if self.role == DIALER else []
        self._finish(PeerId(peer))
        return reply

    def _read(self, noise_message: bytes) -> bytes:
        try:
            return self._noise.read_message(noise_message)
        except PeerError as exc:  # too short, an invalid key, or a message that does not authenticate
            raise self._fail(exc.code, f"the {self._peer_role}'s handshake message: {exc.message}") from None

    def _write(self, payload: Message) -> LinkNoise:
        try:
            return LinkNoise(self._noise.write_message(encode_message(payload)))
        except PeerError as exc:  # the Diffie-Hellman with the peer's ephemeral key: a low-order point
            raise self._fail(exc.code, f"the {self._peer_role}'s handshake message: {exc.message}") from None

    def _payload(self, payload: bytes, kind: type[P]) -> P:
        """The peer's payload as ``kind``; its protocol version is checked before anything else."""
        theirs = peek_protocol_version(payload)
        if theirs is not None and theirs != self.protocol_version:
            self._state = HandshakeState.FAILED
            raise _version_mismatch(self.protocol_version, self.role, theirs, self._peer_role)
        try:
            decoded = decode_message(payload, {kind.TYPE: kind})
        except ProtocolError as exc:
            raise self._fail("handshake-malformed", f"the {self._peer_role}'s {kind.TYPE} payload: {exc.message}") from None
        assert isinstance(decoded, kind)
        return decoded

    def _check_identity(self, payload: LinkIdentity) -> str:
        """The peer's PeerId, once its identity payload passed every check (in the documented order)."""
        if not is_valid_peer_id(payload.peerId):
            raise self._fail("handshake-malformed", f"the {self._peer_role}'s identity payload carries an invalid PeerId")
        if payload.peerId == self.identity.peer_id:
            raise self._fail("handshake-self", f"both sides present PeerId {payload.peerId} (a self-dial or a reflection)")
        if self.expected_peer is not None and payload.peerId != self.expected_peer:
            raise self._fail(
                "handshake-wrong-peer",
                f"expected peer {self.expected_peer}, the listener is {payload.peerId}; the invitation does not match this host",
            )
        remote_static = self._noise.remote_static
        assert remote_static is not None  # read_message of XX message 2 or 3 has set it
        if not verify_signature(payload.peerId, static_key_message(remote_static), payload.signature):
            raise self._fail(
                "handshake-invalid-signature",
                f"the {self._peer_role}'s static Noise key is not signed by {payload.peerId}",
            )
        return payload.peerId

    def _finish(self, peer: PeerId) -> None:
        handshake_hash = self._noise.handshake_hash
        dialer, listener = (self.identity.peer_id, peer) if self.role == DIALER else (peer, self.identity.peer_id)
        send, receive = self._noise.split()
        self._state = HandshakeState.DONE
        self.result = HandshakeResult(
            peer_id=peer,
            transcript=transcript_digest(self.protocol_version, handshake_hash, dialer, listener),
            role=self.role,
            handshake_hash=handshake_hash,
            send=send,
            receive=receive,
        )
