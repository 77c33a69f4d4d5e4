"""Signaling and TURN: what connects WebRTC peers across NATs. The signaling service (``open4wd-node
signal``: ``SignalingService``, its settings and its process), the client every node uses
(``SignalingClient``), and a local coturn for the demo and tests."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "SignalingClient": "client",
    "SignalSettings": "config",
    "signal_settings": "config",
    "CoturnSettings": "coturn",
    "RunningCoturn": "coturn",
    "local_coturn": "coturn",
    "run_signal": "daemon",
    "SignalMetrics": "metrics",
    "SignalingService": "service",
})
