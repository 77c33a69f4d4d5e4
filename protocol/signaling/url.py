"""The URL of a signaling service, as contacts and invitations carry it (docs/network.md, "Contacts").

``ws://HOST[:PORT][/PATH]`` or ``wss://…``: a DNS name, an IPv4 address or an IPv6 address in brackets, a
port in 1..65535, and a path of unreserved characters only (letters, digits, ``.``, ``_``, ``~``, ``-``
between slashes), at most ``MAX_SERVICE_URL_CHARS`` in all. No user, query, fragment or percent-escape:
the URL rides unescaped inside an invitation's query and a contact's space-separated tokens, so none of
``&``, ``#``, ``?``, ``%`` or a space may occur in it. The client finds the socket (``/ws?room=<scope>``)
and ``/turn-token`` from it (``open4wd_node.signal.client``).
"""

from __future__ import annotations

import ipaddress
import re

from protocol.errors import ProtocolError

MAX_SERVICE_URL_CHARS = 128
SCHEMES = ("ws", "wss")
URL_INVALID = "signal-url-invalid"
_URL = re.compile(
    r"(?P<scheme>[a-z]+)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)"
    r"(?::(?P<port>[0-9]{1,5}))?(?P<path>(?:/[A-Za-z0-9._~-]*)*)"
)


def check_service_url(text: str) -> str:
    """``text`` when it is a signaling service URL (module docstring); ``ProtocolError``
    ``signal-url-invalid`` saying what is wrong otherwise."""
    if len(text) > MAX_SERVICE_URL_CHARS:
        raise ProtocolError(URL_INVALID, f"a signaling URL is at most {MAX_SERVICE_URL_CHARS} characters")
    match = _URL.fullmatch(text)
    if match is None:
        raise ProtocolError(URL_INVALID, f"{text[:80]!r} is not ws://HOST[:PORT][/PATH] or wss://HOST[:PORT][/PATH]")
    if match["scheme"] not in SCHEMES:
        raise ProtocolError(URL_INVALID, f"a signaling URL's scheme is ws or wss, not {match['scheme']!r}")
    host = match["host"]
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ProtocolError(URL_INVALID, f"{host!r} is not an IPv6 address") from None
    elif ".." in host:
        raise ProtocolError(URL_INVALID, f"{host!r} is not a host name")
    if match["port"] is not None and not 0 < int(match["port"]) < 65536:
        raise ProtocolError(URL_INVALID, f"port {match['port']} is out of range")
    return text
