"""``SignalingService``: the trio shell around the sans-IO ``SignalingHub`` and ``TurnDesk``: one port for
the WebSocket wire (``/ws?room=<scope>``), ``POST /turn-token`` (with CORS) and ``/healthz``; a second,
private one for ``/metrics`` (``prometheus-client``'s exposition) and ``/healthz``.

Per connection: a place among the connections still sending their request (``OpeningPlaces``: a total
and a per-address share, 10 s to send it whole, 8 KiB of head, 4 KiB of body); then the route. A
WebSocket has three tasks: the reader (each message to the hub), the writer (frames queued by the hub, at
most ``OUTBOX_MAX_BYTES`` waiting: a socket that does not read is closed ``peer-timeout``) and the pinger
(a ping every third of the peer timeout; the hub reaps a peer whose pongs stop). One ticker runs the
hub's deadlines and sweeps every second. Every refusal is counted by code and logged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import structlog
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_server_stream

from open4wd_node.net.admission import OpeningPlaces, source_of
from open4wd_node.runtime.addresses import Address
from open4wd_node.runtime.clock import NodeClock
from open4wd_node.signal.config import SignalSettings
from open4wd_node.signal.http import REQUEST_TIMEOUT_S, BadRequest, CorsPolicy, ReplayStream, Request, read_request, \
    response
from open4wd_node.signal.metrics import SignalMetrics
from protocol.errors import ProtocolError
from protocol.signaling.actions import CloseSocket, Departed, HubAction, PeerRegistered, Refused, Relayed, SendText
from protocol.signaling.codes import CLOSE_TOO_BIG, Refusal, WireCode
from protocol.signaling.limits import MAX_FRAME_BYTES, TURN_BODY_MAX_BYTES
from protocol.signaling.server import SignalingHub
from protocol.signaling.turn import TurnDesk

log = structlog.get_logger("open4wd_node.signal")
TICK_S = 1.0
OUTBOX_MAX_BYTES = 1024 * 1024  # frames waiting for one slow socket
CLOSE_TIMEOUT_S = 2.0  # a close handshake the other side does not finish
JSON = "application/json"


@dataclass
class _Live:
    """One open WebSocket: its hub id, its outbox, and the scope its tasks run in."""

    conn: int
    ws: WebSocketConnection
    source: str
    scope: trio.CancelScope
    outbox: trio.MemorySendChannel[str]
    inbox: trio.MemoryReceiveChannel[str]
    queued_bytes: int = 0
    closing: tuple[int, str] | None = None
    rate_logged: bool = False
    done: trio.Event = field(default_factory=trio.Event)


class SignalingService:
    """One signaling service (module docstring). Create it inside ``trio.run`` (its clock starts then)."""

    def __init__(self, settings: SignalSettings, turn_secret: str | None = None,
                 clock: Callable[[], int] | None = None) -> None:
        """A service with ``settings``; TURN credentials are minted when ``turn_secret`` is given."""
        self.settings = settings
        self.hub = SignalingHub(settings.limits)
        self.desk = None if turn_secret is None else TurnDesk(
            turn_secret, settings.turn_urls, settings.limits.turn_rate_per_min, settings.limits.max_sources,
            settings.turn_ttl_s)
        self.cors = CorsPolicy(settings.cors_origins)
        self.draining = False
        self.metrics = SignalMetrics(self.hub, lambda: self.draining)
        self.now_ms = clock or NodeClock().now_ms
        self._requests = OpeningPlaces(settings.max_requests, settings.max_requests_per_source)
        self._live: dict[int, _Live] = {}
        self._no_sockets = trio.Event()  # set when the last socket is gone (what a drain waits for)
        self._accepting = trio.CancelScope()

    # ---- listeners --------------------------------------------------------------------------------

    async def serve(self, host: str, port: int, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the public port on ``host:port`` (0: a free one) until cancelled; the hub's ticker runs
        with it. Reports the bound address."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound = listeners[0].socket.getsockname()[:2]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._ticker)
            task_status.started(Address(bound[0], bound[1]))
            with self._accepting:
                await trio.serve_listeners(lambda s: self._connection(cast(trio.SocketStream, s), public=True), listeners,
                                           handler_nursery=nursery)
            await trio.sleep_forever()  # accepting stopped (a drain); the sockets and the ticker go on

    async def serve_metrics(self, host: str, port: int, *,
                            task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve ``/metrics`` and ``/healthz`` on ``host:port`` until cancelled."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound = listeners[0].socket.getsockname()[:2]
        task_status.started(Address(bound[0], bound[1]))
        await trio.serve_listeners(lambda s: self._connection(cast(trio.SocketStream, s), public=False), listeners)

    async def _ticker(self) -> None:
        while True:
            await trio.sleep(TICK_S)
            now = self.now_ms()
            self._apply(self.hub.tick(now))
            if self.desk is not None:
                self.desk.sweep(now)

    # ---- one connection ---------------------------------------------------------------------------

    async def _connection(self, stream: trio.SocketStream, public: bool) -> None:
        """One accepted connection, whatever it sends: what it costs stays with it (an internal error is
        logged and ends this connection only)."""
        try:
            await self._serve_connection(stream, public)
        except Exception:  # a bug must end one connection, never the service
            log.exception("signal-internal-error")
            await trio.aclose_forcefully(stream)

    async def _serve_connection(self, stream: trio.SocketStream, public: bool) -> None:
        try:
            peer = stream.socket.getpeername()
            source = source_of(str(peer[0]))
        except OSError:  # it already went away
            await trio.aclose_forcefully(stream)
            return
        try:
            self._requests.take(source)
        except ProtocolError:
            self._refused(Refusal.SERVER_BUSY, f"{source} holds its share of connections sending a request")
            await trio.aclose_forcefully(stream)
            return
        try:
            request = await read_request(stream, TURN_BODY_MAX_BYTES)
        except BadRequest as exc:
            if exc.status:
                self._refused(Refusal.TURN_BODY_TOO_LARGE if exc.status == 413 else Refusal.REQUEST_INVALID, str(exc))
                await self._answer(stream, response(exc.status, b'{"error":"%s"}' % (b"body-too-large" if exc.status == 413
                                                    else b"invalid-request"), JSON, self.cors.headers(None)))
            await trio.aclose_forcefully(stream)
            return
        finally:
            self._requests.give_back(source)
        if self.settings.trust_proxy and "x-forwarded-for" in request.headers:
            forwarded = request.headers["x-forwarded-for"].split(",")[0].strip()
            source = source_of(forwarded) if forwarded else source
        try:
            if public and request.path == "/ws" and request.is_websocket:
                await self._websocket(stream, request, source)
            else:
                await self._answer(stream, self._route(request, source, public))
        finally:
            await trio.aclose_forcefully(stream)

    async def _answer(self, stream: trio.abc.Stream, data: bytes | None) -> None:
        if data is None:
            return
        with trio.move_on_after(CLOSE_TIMEOUT_S):
            try:
                await stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the client went away: nothing to answer

    def _route(self, request: Request, source: str, public: bool) -> bytes | None:
        """The answer to a plain HTTP request (None: close without a word, as the spec's server does to an
        upgrade for another path)."""
        method, path, origin = request.method, request.path, request.headers.get("origin")
        head_only = method == "HEAD"
        if path == "/healthz" and method in ("GET", "HEAD"):
            if self.draining:
                return response(503, b"draining\n", "text/plain", head_only=head_only)
            return response(200, b"ok\n", "text/plain", head_only=head_only)
        if not public:
            if path == "/metrics" and method in ("GET", "HEAD"):
                return response(200, self.metrics.exposition(), SignalMetrics.CONTENT_TYPE, head_only=head_only)
            return response(404)
        if request.is_websocket:
            return None
        if path == "/turn-token" and self.desk is not None:
            if method == "OPTIONS":
                return response(204, headers=self.cors.preflight(origin))
            if method == "POST":
                answer = self.desk.answer(request.body, source, self.now_ms())
                if answer.refusal is not None:
                    self._refused(answer.refusal, f"/turn-token from {source}: {answer.status}")
                else:
                    self.metrics.turn_tokens.inc()
                    log.info("signal-turn-token", source=source, peer=answer.peer)
                return response(answer.status, answer.body, JSON, self.cors.headers(origin))
        return response(404)

    # ---- WebSockets -------------------------------------------------------------------------------

    async def _websocket(self, stream: trio.SocketStream, request: Request, source: str) -> None:
        if not self.cors.allows(request.headers.get("origin")):
            self._refused(Refusal.REQUEST_INVALID, f"a WebSocket from origin {request.headers.get('origin')!r}")
            await self._answer(stream, response(403))
            return
        refusal = self.hub.admit(source, self.now_ms())
        if refusal is not None:
            self._refused(refusal, f"an upgrade from {source}")
            await self._answer(stream, response(429 if refusal is Refusal.CONNECT_RATE else 503))
            return
        scope_values = request.query.get("room")
        scope = scope_values[0] if scope_values and len(scope_values) == 1 else None
        async with trio.open_nursery() as nursery:
            with trio.move_on_after(REQUEST_TIMEOUT_S) as handshake:
                ws_request = await wrap_server_stream(nursery, ReplayStream(stream, request.raw),
                                                      max_message_size=MAX_FRAME_BYTES)
                ws = await ws_request.accept()
            if handshake.cancelled_caught:  # the WebSocket library refused the handshake (and answered 400)
                self._refused(Refusal.REQUEST_INVALID, f"a WebSocket handshake from {source} that did not complete")
                nursery.cancel_scope.cancel()
                return
            conn, actions = self.hub.connect(source, scope, self.now_ms())
            outbox, inbox = trio.open_memory_channel[str](math.inf)
            live = _Live(conn, ws, source, nursery.cancel_scope, outbox, inbox)
            self._live[conn] = live
            self.metrics.connections.inc()
            nursery.start_soon(self._writer, live)
            nursery.start_soon(self._pinger, live)
            self._apply(actions)
            await self._reader(live)
            await live.done.wait()
            nursery.cancel_scope.cancel()

    async def _reader(self, live: _Live) -> None:
        try:
            while True:
                message = await live.ws.get_message()
                self._apply(self.hub.receive(live.conn, message, self.now_ms()))
        except ConnectionClosed:
            pass
        reason = live.ws.closed
        refusal = Refusal.FRAME_TOO_LARGE if live.closing is None and reason is not None and \
            reason.code == CLOSE_TOO_BIG else None
        self._apply(self.hub.disconnected(live.conn, self.now_ms(), refusal))
        if live.closing is None:  # the other side ended it: nothing more to send
            live.outbox.close()

    async def _writer(self, live: _Live) -> None:
        try:
            async for text in live.inbox:
                live.queued_bytes -= len(text)
                await live.ws.send_message(text)
        except ConnectionClosed:
            pass
        finally:
            self._live.pop(live.conn, None)
            if not self._live:
                self._no_sockets.set()
            if live.closing is not None:
                with trio.move_on_after(CLOSE_TIMEOUT_S):
                    await live.ws.aclose(*live.closing)
            live.done.set()
            live.scope.cancel()

    async def _pinger(self, live: _Live) -> None:
        interval_s = self.settings.limits.ping_interval_ms / 1000
        try:
            while True:
                await trio.sleep(interval_s)
                with trio.move_on_after(interval_s):
                    await live.ws.ping()
                    self.hub.pong(live.conn, self.now_ms())
        except ConnectionClosed:
            pass

    # ---- what the hub asks ------------------------------------------------------------------------

    def _apply(self, actions: list[HubAction]) -> None:
        for action in actions:
            if isinstance(action, SendText):
                self._send(action.conn, action.text)
            elif isinstance(action, CloseSocket):
                live = self._live.get(action.conn)
                if live is not None and live.closing is None:
                    live.closing = (action.code, str(action.reason))
                    live.outbox.close()  # the writer sends what is queued, then the close
                    # ... within a bound: a socket that does not read would hold its writer forever
                    live.scope.deadline = min(live.scope.deadline, trio.current_time() + 2 * CLOSE_TIMEOUT_S)
            elif isinstance(action, Refused):
                self._note_refusal(action)
            elif isinstance(action, PeerRegistered):
                self.metrics.registrations.inc()
                log.info("signal-registered", conn=action.conn, scope=action.scope, peer=action.peer,
                         replaced=action.replaced)
            elif isinstance(action, Departed):
                self.metrics.departures.labels(reason=str(action.reason)).inc()
                log.info("signal-departed", conn=action.conn, scope=action.scope, peer=action.peer,
                         reason=str(action.reason))
            elif isinstance(action, Relayed):
                self.metrics.relayed.labels(type=action.kind).inc()

    def _send(self, conn: int, text: str) -> None:
        live = self._live.get(conn)
        if live is None or live.closing is not None:
            return
        if live.queued_bytes + len(text) > OUTBOX_MAX_BYTES:
            self._apply(self.hub.kick(conn, Refusal.SLOW_CONSUMER, WireCode.PEER_TIMEOUT))
            return
        live.queued_bytes += len(text)
        try:
            live.outbox.send_nowait(text)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass  # the socket is closing

    def _note_refusal(self, refused: Refused) -> None:
        self.metrics.refused(refused.code)
        live = self._live.get(refused.conn)
        if refused.code is Refusal.MESSAGE_RATE and live is not None:
            if live.rate_logged:
                return  # a flood is counted frame by frame, logged once per socket
            live.rate_logged = True
        log.info("signal-refused", code=refused.code.value, conn=refused.conn,
                 source=live.source if live is not None else None, detail=refused.detail)

    def _refused(self, code: Refusal, detail: str) -> None:
        self.metrics.refused(code)
        log.info("signal-refused", code=code.value, detail=detail)

    # ---- draining ---------------------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        """Whether the service accepts new sockets (not draining)."""
        return not self.draining

    async def drain(self, grace_s: float) -> int:
        """Stop accepting, tell every socket ``room-closed``, let registered peers relay for up to ``grace_s``
        (or until every socket is gone), then close the rest ``room-closed``; how many were closed then."""
        self.draining = True
        self._accepting.cancel()
        self._apply(self.hub.drain())
        with trio.move_on_after(grace_s):
            await self._until_no_sockets()
        remaining = len(self._live)
        self._apply(self.hub.close_all())
        with trio.move_on_after(CLOSE_TIMEOUT_S + 1):
            await self._until_no_sockets()
        return remaining

    async def _until_no_sockets(self) -> None:
        if self._live:
            self._no_sockets = trio.Event()
            await self._no_sockets.wait()
