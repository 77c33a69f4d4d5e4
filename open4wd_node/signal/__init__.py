"""Signaling and TURN: what connects WebRTC peers across NATs (a local coturn for the demo and tests)."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "CoturnSettings": "coturn",
    "RunningCoturn": "coturn",
    "local_coturn": "coturn",
})
