"""The live page: the race picture served to a browser on this machine while the race runs.

``GET /`` is the page (self-contained: inline SVG, style sheet and script; its Content-Security-Policy
lets it connect to nothing but this server). ``GET /events`` is a stream of server-sent events:
``round`` (the track's SVG with one marker per car, ``data-car="<slot>"``, and the cars' labels) first
and whenever the round changes, then ``frame`` (round, frame, the header line, each car's slot, plan
position, rank and laps) at most ``RATE_HZ`` times a second. Server-sent events rather than a WebSocket:
the stream goes one way, and a browser's ``EventSource`` reconnects by itself.

Bounded: at most ``MAX_CLIENTS`` streams at once (more get 503); a request must arrive whole within
``REQUEST_TIMEOUT_S`` and ``MAX_REQUEST_BYTES``; one task reads the picture for every client, once per
tick and only while a client watches (without a browser the race pays nothing); each client is sent
only the newest picture, never a queue, and one whose socket does not take it within
``SEND_TIMEOUT_S`` is dropped. Reading the picture happens in trio between two frames, as the terminal
view does, so it sees a consistent world.

``Host`` must name this machine (``localhost``, a loopback address, or the address served): a web page
elsewhere cannot read the race through a name it rebinds to 127.0.0.1. Serving beyond loopback is the
caller's explicit choice (``allow_any_host``): the page has no authentication and no encryption.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from itertools import count

import h11
import structlog
import trio

from open4wd_node.view.page_parts import MARKERS_SCRIPT, map_svg, page_head
from open4wd_node.view.race_picture import RacePicture, car_colour, marker_text

log = structlog.get_logger("open4wd_node.live_web")

RATE_HZ = 10  # frames a second to each browser: smooth enough to follow a car, 0.1 s of reading the world
MAX_CLIENTS = 8
REQUEST_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 5.0
KEEPALIVE_S = 15.0  # a comment line when no picture changes (a proxy or the browser keeps the stream open)
MAX_REQUEST_BYTES = 8 * 1024
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) stays on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class LiveState:
    """What the live page shows now: the picture and the header line above it."""

    picture: RacePicture
    header: str


LiveSource = Callable[[], "LiveState | None"]  # None: no race to show yet (the room, or between rounds)


LIVE_SCRIPT = """
const status = document.querySelector('[data-status]');
const host = document.querySelector('[data-map]');
const legend = document.querySelector('[data-legend]');
let markers = {};
const source = new EventSource('/events');
source.addEventListener('round', (e) => {
  const round = JSON.parse(e.data);
  host.innerHTML = round.svg;
  markers = o4wCarMarkers(host.querySelector('svg'));
  legend.innerHTML = round.legend;
  document.body.dataset.round = round.round;
});
source.addEventListener('frame', (e) => {
  const frame = JSON.parse(e.data);
  for (const [slot, x, y] of frame.cars) { if (markers[slot]) o4wPlaceCar(markers[slot], x, y); }
  status.textContent = frame.header;
  document.body.dataset.frame = frame.frame;
});
source.addEventListener('error', () => {
  status.textContent = 'the stream stopped (the race is over, or the node went away); retrying…';
});
"""


def live_page(title: str) -> str:
    """The live page's HTML (the same for every race: what it shows arrives on ``/events``)."""
    return (page_head(title, CSP) + "<body data-live>"
            + f"<h1>{escape(title)}</h1><p data-status class=\"dim\">waiting for the race to start…</p>"
            + "<section><div data-map></div><p data-legend class=\"dim\"></p></section>"
            + f"<script>{MARKERS_SCRIPT}{LIVE_SCRIPT}</script></body></html>\n")


def _event(name: str, data: object) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


@dataclass(frozen=True)
class _Snapshot:
    """One tick's picture, encoded once for every client."""

    seq: int
    round_key: tuple[object, ...]
    round_event: bytes
    frame_event: bytes


class LiveWeb:
    """Serves ``source``'s picture (``serve``); ``title`` heads the page."""

    def __init__(self, source: LiveSource, title: str = "open4wd-node: live race", *, max_clients: int = MAX_CLIENTS,
                 rate_hz: float = RATE_HZ, allow_any_host: bool = False) -> None:
        self.source, self.max_clients, self.period_s = source, max_clients, 1 / rate_hz
        self.allow_any_host = allow_any_host
        self.page = live_page(title).encode()
        self.clients = 0
        self.refused = 0  # streams refused for want of a free place
        self._names = set(LOOPBACK_NAMES)
        self._snapshot: _Snapshot | None = None
        self._tick = trio.Event()
        self._watched = trio.Event()
        self._seq = count()
        self._round: tuple[tuple[object, ...], bytes] | None = None

    async def serve(self, host: str, port: int, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on ``host:port`` (port 0: any free one, reported through ``task_status``) until cancelled.
        ``OSError`` when the address cannot be bound."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        self._names.add(host)
        task_status.started(listeners[0].socket.getsockname()[1])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._ticker)
            await trio.serve_listeners(self._connection, listeners, handler_nursery=nursery)

    # ---- the picture, read once per tick for every client ----------------------------------------------

    async def _ticker(self) -> None:
        while True:
            await self._watched.wait()
            state = self.source()
            if state is not None:
                self._snapshot = self.encode(state)
            self._tick.set()
            self._tick = trio.Event()
            await trio.sleep(self.period_s)  # the rate bound: a tick, not a poll (the pump tells nobody)

    def encode(self, state: LiveState) -> _Snapshot:
        """One tick's work for every client: the frame event, and the round event when the round changed."""
        picture = state.picture
        key = (picture.round_index, id(picture.track), tuple((c.slot, c.label) for c in picture.cars))
        if self._round is None or self._round[0] != key:
            legend = " · ".join(f'<span style="color:{car_colour(c.slot)}">{marker_text(c.slot)}</span> {escape(c.label)}'
                                for c in picture.cars)
            svg = map_svg(picture.track, ((c.slot, c.label, c.x, c.y) for c in picture.cars))
            self._round = (key, _event("round", {"round": picture.round_index, "svg": svg, "legend": legend}))
        cars = [[c.slot, round(c.x, 2), round(c.y, 2), c.rank, c.laps] for c in picture.cars]
        frame = _event("frame", {"round": picture.round_index, "frame": picture.frame, "header": state.header, "cars": cars})
        return _Snapshot(next(self._seq), key, self._round[1], frame)

    # ---- HTTP ------------------------------------------------------------------------------------------

    async def _connection(self, stream: trio.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_BYTES)
        try:
            request = None
            with trio.move_on_after(REQUEST_TIMEOUT_S):
                request = await _read_request(conn, stream)
            if request is not None:
                await self._answer(conn, stream, request)
        except h11.RemoteProtocolError as exc:
            log.debug("live-web-bad-request", error=str(exc))
            await _send_simple(conn, stream, exc.error_status_hint, f"{exc}\n".encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError):
            log.debug("live-web-client-gone")  # a browser that closed or stalled: nothing to answer
        finally:
            await trio.aclose_forcefully(stream)

    async def _answer(self, conn: h11.Connection, stream: trio.SocketStream, request: h11.Request) -> None:
        path = request.target.split(b"?", 1)[0]
        if request.method != b"GET":
            await _send_simple(conn, stream, 405, b"only GET / and GET /events\n")
        elif not self._host_allowed(request):
            await _send_simple(conn, stream, 421, b"this page answers only to this machine's own names\n")
        elif path == b"/":
            await _send(conn, stream, 200, "text/html; charset=utf-8", self.page)
        elif path == b"/events":
            if self.clients >= self.max_clients:
                self.refused += 1
                await _send_simple(conn, stream, 503, b"too many viewers; try again later\n")
                return
            await self._stream(conn, stream)
        else:
            await _send_simple(conn, stream, 404, b"not found: GET / or GET /events\n")

    def _host_allowed(self, request: h11.Request) -> bool:
        if self.allow_any_host:
            return True
        value = dict(request.headers).get(b"host", b"").decode("latin-1")
        name = value[1:].split("]", 1)[0] if value.startswith("[") else value.rsplit(":", 1)[0]
        return name in self._names

    async def _stream(self, conn: h11.Connection, stream: trio.SocketStream) -> None:
        self.clients += 1
        self._watched.set()
        try:
            await stream.send_all(conn.send(h11.Response(status_code=200, headers=[
                ("content-type", "text/event-stream"), ("cache-control", "no-store"), ("x-content-type-options", "nosniff")])))
            sent_seq, sent_round = -1, None
            while True:
                tick, snapshot = self._tick, self._snapshot
                if snapshot is not None and snapshot.seq != sent_seq:
                    data = snapshot.frame_event
                    if snapshot.round_key != sent_round:
                        data = snapshot.round_event + data
                    await _send_data(conn, stream, data)
                    sent_seq, sent_round = snapshot.seq, snapshot.round_key
                with trio.move_on_after(KEEPALIVE_S) as idle:
                    await tick.wait()
                if idle.cancelled_caught:
                    await _send_data(conn, stream, b": keepalive\n\n")
        finally:
            self.clients -= 1
            if self.clients == 0:
                self._watched = trio.Event()


async def _read_request(conn: h11.Connection, stream: trio.SocketStream) -> h11.Request | None:
    """The request's head, or None when the client closed first; ``h11.RemoteProtocolError`` if it is
    malformed or longer than ``MAX_REQUEST_BYTES`` (h11 bounds only a head still incomplete)."""
    received = 0
    while True:
        event = conn.next_event()
        if isinstance(event, h11.Request):
            return event
        if event is not h11.NEED_DATA:
            return None
        data = await stream.receive_some(MAX_REQUEST_BYTES)
        received += len(data)
        if received > MAX_REQUEST_BYTES:
            raise h11.RemoteProtocolError("the request head is too large", error_status_hint=431)
        conn.receive_data(data)
        if not data:
            return None


async def _send_data(conn: h11.Connection, stream: trio.SocketStream, data: bytes) -> None:
    with trio.fail_after(SEND_TIMEOUT_S):  # a browser that stops reading is dropped, never queued for
        await stream.send_all(conn.send(h11.Data(data=data)))


async def _send(conn: h11.Connection, stream: trio.SocketStream, status: int, content_type: str, body: bytes) -> None:
    headers = [("content-type", content_type), ("content-length", str(len(body))), ("connection", "close"),
               ("cache-control", "no-store"), ("x-content-type-options", "nosniff"), ("content-security-policy", CSP)]
    with trio.fail_after(SEND_TIMEOUT_S):
        await stream.send_all(conn.send(h11.Response(status_code=status, headers=headers))
                              + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))


async def _send_simple(conn: h11.Connection, stream: trio.SocketStream, status: int, text: bytes) -> None:
    """A short plain answer, when the connection can still take one (after a malformed request it may not)."""
    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
        await _send(conn, stream, status, "text/plain; charset=utf-8", text)
