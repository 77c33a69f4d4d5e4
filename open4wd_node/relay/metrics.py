"""The relay's Prometheus metrics (``prometheus-client``) and its small HTTP endpoint: ``/metrics`` in the
text exposition format, ``/healthz`` (``200 ok`` while serving, ``503 draining`` during a drain).

Reservations, circuits and refusals are read from the relay's own book when scraped (one source of
truth); bytes, circuit ends and the forwarding delay are counted as they happen. The series are listed in
docs/relay.md, "Metrics".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import structlog
import trio
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from open4wd_node.runtime.addresses import Address
from protocol.relay.book import RelayBook
from protocol.relay.limits import CircuitEnd, Refusal

log = structlog.get_logger("open4wd_node.relay.metrics")

DELAY_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
REQUEST_TIMEOUT_S = 5.0
MAX_REQUEST_BYTES = 8 * 1024


class _BookCollector(Collector):
    """Reservations, circuits and refusals as the book holds them at scrape time."""

    def __init__(self, book: RelayBook, draining: Callable[[], bool]) -> None:
        self.book = book
        self.draining = draining

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        yield GaugeMetricFamily("open4wd_relay_reservations", "Reservations held now", value=len(self.book.reservations))
        yield GaugeMetricFamily("open4wd_relay_circuits_active", "Circuits open or opening now", value=len(self.book.circuits))
        yield GaugeMetricFamily("open4wd_relay_draining", "1 while the relay drains after SIGTERM", value=int(self.draining()))
        refusals = CounterMetricFamily("open4wd_relay_refusals", "Requests refused, by code", labels=["code"])
        for refusal in Refusal:
            refusals.add_metric([refusal.value], self.book.refusals[refusal])
        yield refusals


class RelayMetrics:
    """Every series of one relay, in its own registry (so tests and several relays in one process never
    share counters)."""

    def __init__(self, book: RelayBook, draining: Callable[[], bool]) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_BookCollector(book, draining))
        self.circuits = Counter("open4wd_relay_circuits", "Circuits opened", registry=self.registry)
        self.circuit_ends = Counter("open4wd_relay_circuit_ends", "Circuits ended, by reason", ["reason"],
                                    registry=self.registry)
        for end in CircuitEnd:  # every reason is exported from the start, at 0
            self.circuit_ends.labels(reason=end.value)
        self.reservations = Counter("open4wd_relay_reservations_granted", "Reservations granted or refreshed",
                                    registry=self.registry)
        self.bytes = Counter("open4wd_relay_bytes_forwarded", "Bytes copied between circuit ends", registry=self.registry)
        self.delay = Histogram("open4wd_relay_forwarding_delay_seconds",
                               "From a chunk's arrival at the relay to its write to the other end",
                               buckets=DELAY_BUCKETS, registry=self.registry)

    def forwarded(self, size: int, seconds: float) -> None:
        """One chunk copied: its bytes and how long the relay held it."""
        self.bytes.inc(size)
        self.delay.observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition of every series (what ``/metrics`` serves)."""
        return generate_latest(self.registry)


async def serve_metrics(
    metrics: RelayMetrics, host: str, port: int, healthy: Callable[[], bool],
    *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Answer ``GET /metrics`` and ``GET /healthz`` on ``host:port`` until cancelled (HTTP/1.0, one
    request per connection, 5 s and 8 KiB per request)."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[:2]

    async def answer(stream: trio.SocketStream) -> None:
        request = b""
        with trio.move_on_after(REQUEST_TIMEOUT_S):
            try:
                while b"\r\n\r\n" not in request and b"\n\n" not in request and len(request) < MAX_REQUEST_BYTES:
                    chunk = await stream.receive_some(MAX_REQUEST_BYTES)
                    if not chunk:
                        break
                    request += chunk
                await stream.send_all(_response(request, metrics, healthy))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the scraper went away: nothing to answer
        await trio.aclose_forcefully(stream)

    task_status.started(Address(bound[0], bound[1]))
    await trio.serve_listeners(answer, listeners)


def _response(request: bytes, metrics: RelayMetrics, healthy: Callable[[], bool]) -> bytes:
    line = request.split(b"\n", 1)[0].decode("latin-1").split()
    path = line[1].split("?", 1)[0] if len(line) >= 2 else ""
    if len(line) < 2 or line[0] not in ("GET", "HEAD"):
        return _http(405, "text/plain", b"only GET /metrics and GET /healthz\n")
    with_body = line[0] == "GET"  # HEAD: the same headers, no body (RFC 9110 §9.3.2)
    if path == "/metrics":
        return _http(200, CONTENT_TYPE_LATEST, metrics.exposition(), with_body)
    if path == "/healthz":
        return (_http(200, "text/plain", b"ok\n", with_body) if healthy()
                else _http(503, "text/plain", b"draining\n", with_body))
    return _http(404, "text/plain", b"not found: GET /metrics or /healthz\n", with_body)


def _http(status: int, content_type: str, body: bytes, with_body: bool = True) -> bytes:
    reason = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}[status]
    head = (f"HTTP/1.0 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("latin-1") + (body if with_body else b"")
