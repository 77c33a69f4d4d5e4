"""``open4wd-node signal``'s settings: the ``[signal]`` table of the configuration file
(``configs/signal.toml`` documents every key with its default), each key also a flag of the command
(``--turn-url`` for ``turn_urls`` …), a flag winning over the file. Every value is checked by one rule
(``open4wd_node.runtime.values``) on both edges: a refused value names the key and the rule
(``config-invalid`` in the file, a usage error on the command line).

This module imports nothing heavy: the command declares its options from ``KEYS``.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from open4wd_node.runtime.addresses import LISTEN, METRICS_ADDRESS, Address
from open4wd_node.runtime.config import SIGNAL_TABLE as SIGNAL_TABLE  # the command reads the table by it
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.values import IntRange, ListOf, Rule, Text, ValueRejected
from protocol.signaling.limits import MAX_PEERS, HubLimits

TURN_URL = re.compile(r"turns?:[^\s,]{1,250}")
ORIGIN = re.compile(r"\*|https?://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|https?://\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?")


@dataclass(frozen=True)
class Matching(Rule):
    """A string that matches ``pattern`` as a whole (``words`` say what that is, in a refusal)."""

    pattern: re.Pattern[str]
    words: str
    metavar: str | None = None

    @property
    def rule(self) -> str:
        """What the value is, in the words of a refusal."""
        return self.words

    def check(self, value: Any) -> str:
        """The value, stripped, or ``ValueRejected``."""
        text = self.text_of(value).strip()
        if not self.pattern.fullmatch(text):
            raise self.refused(value)
        return text


TURN_URL_RULE = Matching(TURN_URL, "a turn: or turns: URL (turn:HOST:PORT[?transport=udp|tcp])", "URL")
ORIGIN_RULE = Matching(ORIGIN, "* or an origin such as https://game.example[:PORT] (scheme and host, no path)", "ORIGIN")


class BoolRule(Rule):
    """``true`` or ``false`` (a TOML boolean; the words on the command line)."""

    metavar = "true|false"

    @property
    def rule(self) -> str:
        """``true or false``."""
        return "true or false"

    def check(self, value: Any) -> bool:
        """A TOML boolean, or ``ValueRejected``."""
        if not isinstance(value, bool):
            raise self.refused(value)
        return value

    def parse(self, text: str) -> bool:
        """``true`` or ``false`` typed on the command line."""
        if text.strip().lower() not in ("true", "false"):
            raise self.refused(text)
        return text.strip().lower() == "true"


@dataclass(frozen=True)
class Key:
    """One setting: its rule, its built-in default (in the key's unit), its flag and its help."""

    rule: Rule
    default: Any
    flag: str
    help: str
    metavar: str | None = None


REPLACED = frozenset({"cors_origins"})  # a flag replaces the file's list (the default * would make any addition moot)
SECONDS = IntRange(1, 24 * 3600)
COUNT = IntRange(1, 10_000_000)
KEYS: dict[str, Key] = {
    "listen": Key(LISTEN, "0.0.0.0:8790", "--listen", "where the service listens: /ws, /turn-token, /healthz (HTTP; "
                  "put TLS in front of it)", "HOST:PORT"),
    "metrics": Key(METRICS_ADDRESS, "127.0.0.1:9465", "--metrics", "Prometheus /metrics and /healthz; empty = off "
                   "(keep it on a private address)", "HOST:PORT"),
    "turn_secret_file": Key(Text(), "", "--turn-secret-file", "file holding coturn's static-auth-secret (mode 0600 "
                            "or stricter); with turn_urls it enables POST /turn-token", "PATH"),
    "turn_urls": Key(ListOf(TURN_URL_RULE), [], "--turn-url", "TURN URLs handed out with the credentials, in order "
                     "(repeatable, adds to the file's)", "URL"),
    "turn_ttl_s": Key(IntRange(60, 86_400), 300, "--turn-ttl", "life of a TURN credential, seconds", "S"),
    "cors_origins": Key(ListOf(ORIGIN_RULE), ["*"], "--cors-origin", "page origins that may read /turn-token (and "
                        "open /ws from a browser); * = any (repeatable; replaces the file's list)", "ORIGIN"),
    "trust_proxy": Key(BoolRule(), False, "--trust-proxy", "take the client address from the first X-Forwarded-For "
                       "entry (only behind a proxy that sets it)"),
    "max_peers": Key(IntRange(1, MAX_PEERS), MAX_PEERS, "--max-peers", "registered peers per room", "N"),
    "message_rate_per_min": Key(COUNT, 1200, "--message-rate", "frames per socket per minute; excess dropped", "N"),
    "connect_rate_per_min": Key(COUNT, 60, "--connect-rate", "WebSocket upgrades per client address per minute "
                                "(HTTP 429 beyond)", "N"),
    "turn_rate_per_min": Key(COUNT, 60, "--turn-rate", "/turn-token requests per client address per minute", "N"),
    "register_deadline_s": Key(SECONDS, 10, "--register-deadline", "seconds a socket has to register", "S"),
    "peer_timeout_s": Key(SECONDS, 90, "--peer-timeout", "seconds without a pong before a peer is reaped "
                          "(pinged every third of it)", "S"),
    "max_connections": Key(COUNT, 10_000, "--max-connections", "WebSockets open at once", "N"),
    "max_rooms": Key(COUNT, 10_000, "--max-rooms", "rooms held at once", "N"),
    "max_requests": Key(IntRange(1, 100_000), 256, "--max-requests", "connections still sending their HTTP "
                        "request, from everyone", "N"),
    "max_requests_per_source": Key(IntRange(1, 100_000), 16, "--max-requests-per-source", "of which from one "
                                   "client address (an IPv6 /64)", "N"),
    "drain_grace_s": Key(IntRange(0, 3600), 5, "--drain-grace", "after SIGTERM, seconds registered peers keep "
                         "relaying before every socket is closed", "S"),
}


@dataclass(frozen=True)
class SignalSettings:
    """Everything ``open4wd-node signal`` runs with."""

    listen: Address = Address("0.0.0.0", 8790)
    metrics: Address | None = Address("127.0.0.1", 9465)
    turn_secret_file: str = ""
    turn_urls: tuple[str, ...] = ()
    turn_ttl_s: int = 300
    cors_origins: tuple[str, ...] = ("*",)
    trust_proxy: bool = False
    limits: HubLimits = field(default_factory=HubLimits)
    max_requests: int = 256
    max_requests_per_source: int = 16
    drain_grace_s: int = 5

    def turn_secret(self) -> str | None:
        """The shared secret from ``turn_secret_file`` (None when TURN is off); ``UserError``
        ``turn-secret-unreadable``, ``turn-secret-insecure`` (readable by others) or ``turn-secret-empty``."""
        if not self.turn_secret_file:
            return None
        path = Path(self.turn_secret_file)
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                raise UserError("turn-secret-unreadable", f"{path} is not a regular file")
            if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise UserError("turn-secret-insecure", f"{path} is readable by other users; run 'chmod 600 {path}'")
            secret = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UserError("turn-secret-unreadable", f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UserError("turn-secret-unreadable", f"{path} is not UTF-8 text") from None
        if not secret:
            raise UserError("turn-secret-empty", f"{path} holds no secret")
        return secret


LIMIT_KEYS = {"max_peers": ("max_peers", 1), "message_rate_per_min": ("message_rate_per_min", 1),
              "connect_rate_per_min": ("connect_rate_per_min", 1), "turn_rate_per_min": ("turn_rate_per_min", 1),
              "register_deadline_s": ("register_deadline_ms", 1000), "peer_timeout_s": ("peer_timeout_ms", 1000),
              "max_connections": ("max_connections", 1), "max_rooms": ("max_rooms", 1)}


def checked(table: dict[str, Any]) -> dict[str, Any]:
    """The keys of a ``[signal]`` table, each checked by its rule; ``UserError`` ``config-invalid`` naming
    the key for an unknown key or a refused value."""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise UserError("config-invalid", f"unknown [signal] option(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    values = {}
    for key, value in table.items():
        try:
            values[key] = KEYS[key].rule.check(value)
        except ValueRejected as exc:
            raise UserError("config-invalid", f"[signal] option {key!r} {exc}") from None
    return values


def signal_settings(table: dict[str, Any], given: dict[str, Any] | None = None) -> SignalSettings:
    """The settings of a ``[signal]`` table (missing keys keep their defaults) with the command line's
    ``given`` values (checked by the same rules; a list adds to the file's; None, as an empty ``--metrics``
    gives: off). ``UserError`` ``config-invalid`` as ``checked``, and when only one of the secret and the URLs
    is given."""
    values = checked(table)
    for key, value in (given or {}).items():
        rule = KEYS[key].rule
        values[key] = value if key in REPLACED or value is None else rule.merge(
            values.get(key, rule.check(KEYS[key].default)), value)
    every = {key: values.get(key, KEYS[key].rule.check(KEYS[key].default)) for key in KEYS}
    if bool(every["turn_secret_file"]) != bool(every["turn_urls"]):
        only = "turn_secret_file" if every["turn_secret_file"] else "turn_urls"
        raise UserError("config-invalid", "POST /turn-token needs both turn_secret_file and turn_urls "
                                          f"(--turn-secret-file and --turn-url); only {only} is set")
    limits = HubLimits(**{name: every[key] * unit for key, (name, unit) in LIMIT_KEYS.items()})
    return SignalSettings(
        listen=every["listen"], metrics=every["metrics"], turn_secret_file=every["turn_secret_file"],
        turn_urls=tuple(every["turn_urls"]), turn_ttl_s=every["turn_ttl_s"], cors_origins=tuple(every["cors_origins"]),
        trust_proxy=every["trust_proxy"], limits=limits, max_requests=every["max_requests"],
        max_requests_per_source=min(every["max_requests_per_source"], every["max_requests"]),
        drain_grace_s=every["drain_grace_s"])
