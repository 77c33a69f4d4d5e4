"""How to reach a node: a direct address and the signaling services where it answers WebRTC offers
(docs/network.md, "Contacts").

The text form is what a room member's ``listen`` field, the host's succession and the race mesh carry:
space-separated tokens,

- ``HOST:PORT``: the direct address (TCP + Noise), at most one;
- ``signal=URL``: a signaling service (``ws://`` or ``wss://``, ``protocol.signaling.url``), at most
  ``MAX_SIGNALS``, in the node's order of preference;
- ``scope=SCOPE``: the signaling scope the node answers in (``room:<uuid>`` or ``match:<64 hex>``), at
  most one, only beside a ``signal=``.

A member announces its services without a scope: the scope is where the link is wanted (the room's for a
host's succession, ``match:<matchId>`` for the race mesh), and whoever dials puts it in (``in_scope``).
The text is at most ``MAX_CONTACT_CHARS`` (what a room keeps of a member's contact). A node that is only
directly reachable announces exactly ``HOST:PORT``. A ``relay=`` token (a circuit relay of an older node;
TURN replaced it) is refused as ``contact-invalid``, saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from protocol.errors import ProtocolError
from protocol.signaling.scope import is_scope
from protocol.signaling.url import check_service_url

MAX_SIGNALS = 4
MAX_CONTACT_CHARS = 256
RETIRED_RELAY_PREFIX = "relay="
SIGNAL_PREFIX = "signal="
SCOPE_PREFIX = "scope="
CONTACT_INVALID = "contact-invalid"
_ADDRESS = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})")


def check_address(text: str) -> str:
    """``text`` if it is ``HOST:PORT`` (an IPv6 host in brackets) with a port in 1..65535;
    ``ProtocolError`` ``contact-invalid`` otherwise."""
    match = _ADDRESS.fullmatch(text)
    if match is None or not 0 < int(match[2]) < 65536:
        raise ProtocolError(CONTACT_INVALID, f"{text[:80]!r} is not HOST:PORT")
    return text


def check_signals(urls: tuple[str, ...]) -> tuple[str, ...]:
    """``urls`` when each is a signaling URL and there are at most ``MAX_SIGNALS``, all different;
    ``ProtocolError`` ``contact-invalid`` otherwise."""
    for url in urls:
        try:
            check_service_url(url)
        except ProtocolError as exc:
            raise ProtocolError(CONTACT_INVALID, exc.message) from None
    if len(urls) > MAX_SIGNALS or len(set(urls)) != len(urls):
        raise ProtocolError(CONTACT_INVALID, f"a contact names at most {MAX_SIGNALS} distinct signaling services")
    return urls


@dataclass(frozen=True)
class Contact:
    """A node's direct address (None: it accepts no direct links), its signaling services (in preference
    order) and the scope it answers in there (None: given by where the link is wanted)."""

    direct: str | None = None
    signals: tuple[str, ...] = ()
    scope: str | None = None

    def __str__(self) -> str:
        """The text form (see the module docstring)."""
        return " ".join(([self.direct] if self.direct else []) + [SIGNAL_PREFIX + s for s in self.signals]
                        + ([SCOPE_PREFIX + self.scope] if self.scope else []))

    @property
    def reachable(self) -> bool:
        """Whether there is any way at all to dial this node."""
        return self.direct is not None or bool(self.signals)

    def in_scope(self, scope: str) -> Contact:
        """This contact, answering in ``scope`` at its signaling services (where the link is wanted)."""
        return replace(self, scope=scope) if self.signals else self

    @classmethod
    def parse(cls, text: str) -> Contact:
        """Parse a contact; ``ProtocolError`` ``contact-invalid`` when it is malformed (it came from a peer).
        The empty text is the contact of a node that cannot be dialled (a spectator)."""
        if len(text) > MAX_CONTACT_CHARS:
            raise ProtocolError(CONTACT_INVALID, f"a contact is at most {MAX_CONTACT_CHARS} characters")
        direct: str | None = None
        scope: str | None = None
        signals: list[str] = []
        for token in text.split():
            if token.startswith(RETIRED_RELAY_PREFIX):
                raise ProtocolError(CONTACT_INVALID, "a contact names a relay (relay=): circuit relays were replaced by "
                                                     "signaling services (signal=) and TURN")
            if token.startswith(SIGNAL_PREFIX):
                signals.append(token[len(SIGNAL_PREFIX):])
            elif token.startswith(SCOPE_PREFIX):
                if scope is not None or not is_scope(token[len(SCOPE_PREFIX):]):
                    raise ProtocolError(CONTACT_INVALID, "a contact has at most one scope, room:<uuid> or match:<64 hex>")
                scope = token[len(SCOPE_PREFIX):]
            elif direct is None:
                direct = check_address(token)
            else:
                raise ProtocolError(CONTACT_INVALID, "a contact has at most one direct address")
        check_signals(tuple(signals))
        if scope is not None and not signals:
            raise ProtocolError(CONTACT_INVALID, "a contact's scope needs a signaling service to answer there")
        return cls(direct, tuple(signals), scope)
