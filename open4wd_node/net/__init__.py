"""Links between nodes over TCP: addresses, the authenticated link and its rules, the listener, outboxes."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Advertised": "advertise",
    "Source": "advertise",
    "advertised_address": "advertise",
    "is_loopback_host": "advertise",
    "primary_interface_host": "advertise",
    "Direction": "impair",
    "Impairment": "impair",
    "ImpairmentProxy": "impair",
    "ProxyStats": "impair",
    "Link": "link",
    "LinkClosed": "link",
    "foreign_protocol": "link",
    "now_ms": "link",
    "open_link": "link",
    "IngressGuard": "link_rules",
    "Keepalive": "link_rules",
    "LinkBuckets": "link_rules",
    "LinkLimits": "link_rules",
    "LinkPing": "link_rules",
    "LinkPong": "link_rules",
    "SendPacer": "link_rules",
    "link_registry": "link_rules",
    "NodeListener": "listener",
    "with_listener": "listener",
    "Outbox": "outbox",
    "flush": "outbox",
    "dial": "transport",
    "serve": "transport",
})
