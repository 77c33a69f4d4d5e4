"""Room invitations and role proofs (spec/rooms.md §4.3, §7.3): an HMAC proof over the link transcript stands in
for the spec's OPAQUE, which with 192-bit random secrets protects against guessing no better.

A role secret is 192 random bits in canonical form: exactly 32 characters of unpadded base64url.
The secret never crosses the wire; a joiner proves it knows the secret with an HMAC over the
authenticated link transcript, which binds the proof to this link, room, role and both peers.

Invitation text: ``open4wd://HOST:PORT/ROOM_ID?host=HOST_PEER_ID#ROLE=SECRET``; the host PeerId lets
the joiner authenticate the host during the link handshake. A host that answers WebRTC offers at
signaling services (docs/webrtc.md) adds ``&signal=URL`` for each (``ws://`` or ``wss://``, at most 4, in
its order of preference). The room's signaling scope is ``room:`` + the room id (a lowercase UUID v4), so
the invitation carries it without a parameter of its own. A host without a direct address leaves it out:
``open4wd:///ROOM_ID?host=…&signal=…#…``; every invitation names at least one way in. An invitation of an
older node naming a circuit relay (``&relay=HOST:PORT``) is refused with ``invitation-relay-retired``:
signaling services and TURN replaced those relays, and a joiner cannot reach a host through one; the host
hands out a new invitation.

Invitations, secrets and room ids reach this code from the user or from this node itself, never from a
peer, so refusing one is a ``LocalError`` (the command line reports its code).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import uuid
from dataclasses import dataclass

from protocol.errors import LocalError, ProtocolError
from protocol.identity.keys import is_valid_peer_id
from protocol.link.contact import Contact, check_signals
from protocol.signaling.scope import ROOM_PREFIX
from protocol.identity.keys import PeerId

SECRET_BYTES = 24
SECRET_CHARS = 32
ROLES = ("participant", "spectator")
ROLE_PROOF_DOMAIN = b"open4wd-node-role-proof-v1"
_SECRET_RE = re.compile(r"[A-Za-z0-9_-]{32}")
_INVITE_RE = re.compile(
    r"open4wd://(?:(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(?P<port>[0-9]{1,5}))?/(?P<room>[0-9a-f-]{36})"
    r"\?host=(?P<peer>z[1-9A-HJ-NP-Za-km-z]+)(?P<relays>(?:&relay=[^&#\s]+)*)(?P<signals>(?:&signal=[^&#\s]+)*)"
    r"#(?P<role>[a-z]+)=(?P<secret>[A-Za-z0-9_-]+)"
)


def new_secret() -> str:
    """A fresh role secret in its canonical text form (32 characters of unpadded base64url)."""
    return base64.urlsafe_b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii").rstrip("=")


def parse_secret(text: object) -> bytes:
    """The 24 secret bytes; weak, padded or non-canonical text is refused (fail closed).

    Raises ``LocalError`` (``invitation-invalid``).
    """
    if not isinstance(text, str) or not _SECRET_RE.fullmatch(text):
        raise LocalError(
            "invitation-invalid", "an invitation secret is exactly 32 characters of unpadded base64url (192 bits)"
        )
    return base64.urlsafe_b64decode(text)


def new_room_id() -> str:
    """A fresh room id (a random UUIDv4 in its canonical text form)."""
    return str(uuid.uuid4())


def check_room_id(room_id: object) -> str:
    """``room_id`` if it is a canonical lowercase UUIDv4; raises ``LocalError`` (``room-id-invalid``)."""
    try:
        parsed = uuid.UUID(room_id) if isinstance(room_id, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.version != 4 or str(parsed) != room_id:
        raise LocalError("room-id-invalid", "a room id is a canonical lowercase UUIDv4")
    return room_id


def role_proof(secret: bytes, transcript: bytes, room_id: str, role: str, joiner: str, host: str) -> bytes:
    """The joiner's proof that it knows ``secret``, bound to this link, room, role and both peers."""
    message = b"\0".join(
        [ROLE_PROOF_DOMAIN, transcript, room_id.encode(), role.encode(), joiner.encode(), host.encode()]
    )
    return hmac.new(secret, message, hashlib.sha256).digest()


def check_role_proof(
    proof: bytes, secret: bytes, transcript: bytes, room_id: str, role: str, joiner: str, host: str
) -> bool:
    """Whether ``proof`` is the role proof for these values (compared in constant time)."""
    return hmac.compare_digest(proof, role_proof(secret, transcript, room_id, role, joiner, host))


@dataclass(frozen=True)
class Invitation:
    """Everything a joiner needs: where the host listens (``host`` empty and ``port`` 0: nowhere directly),
    the room, the host's PeerId, a role's secret and the signaling services where it answers in the room's
    scope."""

    host: str
    port: int
    room_id: str
    host_peer_id: PeerId
    role: str
    secret: str
    signals: tuple[str, ...] = ()

    def __str__(self) -> str:
        """The invitation text (IPv6 hosts in brackets)."""
        ways = "".join(f"&signal={url}" for url in self.signals)
        return (f"open4wd://{self._direct or ''}/{self.room_id}?host={self.host_peer_id}{ways}"
                f"#{self.role}={self.secret}")

    @property
    def scope(self) -> str:
        """The room's signaling scope: ``room:<room id>``."""
        return ROOM_PREFIX + self.room_id

    @property
    def _direct(self) -> str | None:
        if not self.host:
            return None
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def contact(self) -> str:
        """How to reach the host, as a contact's text (``protocol.link.contact``): in the room's scope at its
        signaling services."""
        return str(Contact(self._direct, self.signals, self.scope if self.signals else None))

    @classmethod
    def parse(cls, text: object) -> Invitation:
        """Parse invitation text strictly. Raises ``LocalError``: ``invitation-invalid`` or ``room-id-invalid``."""
        match = _INVITE_RE.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise LocalError(
                "invitation-invalid", "an invitation looks like open4wd://HOST:PORT/ROOM_ID?host=PEER_ID#ROLE=SECRET "
                "(with &signal=URL after the host's PeerId when it answers at signaling services)"
            )
        port = int(match["port"] or 0)
        if match["host"] is not None and not 0 < port < 65536:
            raise LocalError("invitation-invalid", f"port {port} is out of range")
        if match["relays"]:
            raise LocalError("invitation-relay-retired", "this invitation names a relay (&relay=), which this node no "
                             "longer uses: relays were replaced by signaling services (&signal=) and TURN; ask the "
                             "host for a new invitation")
        signals = tuple(match["signals"].split("&signal=")[1:])
        try:
            check_signals(signals)
        except ProtocolError as exc:
            raise LocalError("invitation-invalid", f"the signaling services of the invitation: {exc.message}") from None
        if match["host"] is None and not signals:
            raise LocalError("invitation-invalid", "an invitation needs the host's address or a signaling service")
        if match["role"] not in ROLES:
            raise LocalError("invitation-invalid", f"role must be one of {', '.join(ROLES)}")
        if not is_valid_peer_id(match["peer"]):
            raise LocalError("invitation-invalid", "the host PeerId in the invitation is malformed")
        parse_secret(match["secret"])
        host = (match["host"] or "").strip("[]")
        return cls(host, port, check_room_id(match["room"]), match["peer"], match["role"], match["secret"], signals)
