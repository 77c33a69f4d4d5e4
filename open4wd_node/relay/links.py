"""What every link to or from a relay is: its messages and its limits, shared by the daemon and the nodes
that use it (both ends of a link must pace alike)."""

from __future__ import annotations

from dataclasses import replace

from open4wd_node.net.admission import source_of
from open4wd_node.net.link_rules import ROOM_LIMITS
from protocol.relay.messages import RELAY_MESSAGES

RELAY_LINK_LIMITS = replace(ROOM_LIMITS, ping_interval_ms=20_000, idle_timeout_ms=45_000)
"""A room link's buckets, with pings every 20 s: a connecting or answering link exchanges one message each
way, within the relay's connect timeout (5 s), before it becomes a circuit, so no ping may fall in that
window (it would reach the far end as a stray frame); a control link idles."""

RELAY_REGISTRY = dict(RELAY_MESSAGES)
"""The messages a relay link decodes (the link adds its own ping, pong and close)."""


def relayed_address(relay: str) -> str:
    """How a relayed link's far end shows in logs: ``relay:HOST:PORT``."""
    return f"relay:{relay}"


def source_of_link(address: str | None) -> str:
    """The source key of a link's remote ``HOST:PORT`` as the listener's door counts it."""
    if address is None:
        return "unknown"
    host = address.rpartition(":")[0].removeprefix("[").removesuffix("]")
    return source_of(host)
