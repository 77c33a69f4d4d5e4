"""How to reach a node: its direct address and the relays where it holds reservations (docs/relay.md).

The text form is what a room member's ``listen`` field and the host's succession carry: space-separated
tokens, ``HOST:PORT`` for the direct address (at most one) and ``relay=HOST:PORT`` for each relay (at most
``MAX_RELAYS``). A node that is only directly reachable therefore announces exactly what it did before
relays existed, and a node reachable only through relays announces no direct address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from protocol.errors import ProtocolError

MAX_RELAYS = 4
MAX_CONTACT_CHARS = 256
RELAY_PREFIX = "relay="
_ADDRESS = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})")


def check_address(text: str) -> str:
    """``text`` if it is ``HOST:PORT`` (an IPv6 host in brackets) with a port in 1..65535;
    ``ProtocolError`` ``contact-invalid`` otherwise."""
    match = _ADDRESS.fullmatch(text)
    if match is None or not 0 < int(match[2]) < 65536:
        raise ProtocolError("contact-invalid", f"{text[:80]!r} is not HOST:PORT")
    return text


@dataclass(frozen=True)
class Contact:
    """A node's direct address (None: it accepts no direct links) and its relays, in preference order."""

    direct: str | None = None
    relays: tuple[str, ...] = ()

    def __str__(self) -> str:
        """The text form (see the module docstring)."""
        return " ".join(([self.direct] if self.direct else []) + [RELAY_PREFIX + r for r in self.relays])

    @property
    def reachable(self) -> bool:
        """Whether there is any way at all to dial this node."""
        return self.direct is not None or bool(self.relays)

    @classmethod
    def parse(cls, text: str) -> Contact:
        """Parse a contact; ``ProtocolError`` ``contact-invalid`` when it is malformed (it came from a peer).
        The empty text is the contact of a node that cannot be dialled (a spectator)."""
        if len(text) > MAX_CONTACT_CHARS:
            raise ProtocolError("contact-invalid", f"a contact is at most {MAX_CONTACT_CHARS} characters")
        direct: str | None = None
        relays: list[str] = []
        for token in text.split():
            if token.startswith(RELAY_PREFIX):
                relays.append(check_address(token[len(RELAY_PREFIX):]))
            elif direct is None:
                direct = check_address(token)
            else:
                raise ProtocolError("contact-invalid", "a contact has at most one direct address")
        if len(relays) > MAX_RELAYS or len(set(relays)) != len(relays):
            raise ProtocolError("contact-invalid", f"a contact names at most {MAX_RELAYS} distinct relays")
        return cls(direct, tuple(relays))
