"""The relay (docs/relay.md): the ``open4wd-node relay`` daemon (reservations, circuits, byte copying under
limits, metrics, drain) and a node's side of it (reservations kept, circuits dialled)."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Reservations": "client",
    "dial_relayed": "client",
    "open_circuit": "client",
    "RELAY_LINK_LIMITS": "links",
    "RELAY_REGISTRY": "links",
    "relayed_address": "links",
    "source_of_link": "links",
    "RelayMetrics": "metrics",
    "serve_metrics": "metrics",
    "RelayServer": "server",
    "splice": "splice",
})
