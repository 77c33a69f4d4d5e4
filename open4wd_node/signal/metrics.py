"""The signaling service's Prometheus series (``prometheus-client``'s exposition; the list is in
docs/signaling.md, "Metrics and logs"). Rooms, peers and sockets are read from the hub when scraped (one source
of truth); refusals, relayed signals, registrations, departures and minted TURN credentials are counted
as they happen. Every refusal code is exported from the start, at 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from protocol.signaling.codes import Refusal
from protocol.signaling.server import SignalingHub


class _HubCollector(Collector):
    """Sockets, registered peers and rooms as the hub holds them at scrape time."""

    def __init__(self, hub: SignalingHub, draining: Callable[[], bool]) -> None:
        self.hub = hub
        self.draining = draining

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("open4wd_signal_sockets", "WebSockets open now, registered or not", value=self.hub.sockets)
        yield GaugeMetricFamily("open4wd_signal_peers", "Peers registered now, over every room", value=self.hub.registered)
        yield GaugeMetricFamily("open4wd_signal_rooms", "Rooms held now (lingering ones included)", value=self.hub.rooms)
        yield GaugeMetricFamily("open4wd_signal_draining", "1 while the service drains after SIGTERM",
                                value=int(self.draining()))


class SignalMetrics:
    """Every series of one service, in its own registry (tests and several services never share one)."""

    CONTENT_TYPE = CONTENT_TYPE_LATEST

    def __init__(self, hub: SignalingHub, draining: Callable[[], bool]) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_HubCollector(hub, draining))
        self.refusals = Counter("open4wd_signal_refusals", "What the service refused or ignored, by code "
                                "(silent on the wire or not)", ["code"], registry=self.registry)
        for refusal in Refusal:
            self.refusals.labels(code=refusal.value)
        self.relayed = Counter("open4wd_signal_relayed", "Signals delivered, by message type", ["type"],
                               registry=self.registry)
        for kind in ("sdp-offer", "sdp-answer", "ice-candidate"):
            self.relayed.labels(type=kind)
        self.registrations = Counter("open4wd_signal_registrations", "Successful registers (self-replacing ones "
                                     "included)", registry=self.registry)
        self.departures = Counter("open4wd_signal_departures", "Registered peers that left, by reason", ["reason"],
                                  registry=self.registry)
        self.connections = Counter("open4wd_signal_connections", "WebSocket upgrades accepted", registry=self.registry)
        self.turn_tokens = Counter("open4wd_signal_turn_tokens", "TURN credentials minted", registry=self.registry)

    def refused(self, code: Refusal) -> None:
        """Count one refusal."""
        self.refusals.labels(code=code.value).inc()

    def exposition(self) -> bytes:
        """The text exposition of every series (what ``/metrics`` serves)."""
        return generate_latest(self.registry)
