"""``SignalingClient``: a node's connection to one signaling service for one scope, over trio-websocket,
around the sans-IO ``SignalingSession`` (what a host, a joiner or a spectator uses to exchange WebRTC
offers, answers and candidates).

    async with SignalingClient.connect(url, scope, identity) as client:
        await client.send(target, Sdp(SdpKind.OFFER, sdp))
        async for event in client.events():      # Registered, PeerJoined, PeerLeft, Signal, Error
            ...
        credentials = await client.turn_credentials()

- ``connect`` returns once registered (a fresh signed proof), or raises ``UserError``
  ``signal-unreachable`` / ``signal-refused`` after ``REGISTER_TIMEOUT_S``.
- The socket is kept: when it ends the client reconnects with backoff (1 s doubling to 30 s, ±25 %) and
  registers again with a fresh proof; ``events`` then reports ``Registered`` and who came and went.
- Every received signal is normalised and verified (signer present, scope, target, ±30 s, nonce,
  signature) before it is an event; what is refused is counted in ``refusals`` and logged.
- Every wait is bounded: the upgrade and register (``REGISTER_TIMEOUT_S``), a send while reconnecting
  (``SEND_TIMEOUT_S``), a ``/turn-token`` request (``TURN_TIMEOUT_S``, 32 KiB of reply at most).
- One client per URL: several may run side by side for one scope, sharing ``replay`` so that an envelope
  that comes through two services is delivered once.
"""

from __future__ import annotations

import random
import ssl
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import h11
import structlog
import trio
from trio_websocket import ConnectionClosed, HandshakeError, WebSocketConnection, open_websocket_url

from open4wd_node.runtime.clock import NodeClock
from open4wd_node.runtime.errors import UserError
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.identity.signed import NonceSet
from protocol.signaling.client import ClientEvent, Dropped, Error, Registered, SignalingSession
from protocol.signaling.envelope import SignalMessage
from protocol.signaling.limits import MAX_FRAME_BYTES, TURN_REPLY_MAX_BYTES
from protocol.signaling.turn import TurnCredentials, decode_turn_reply, turn_request_body
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.signal.client")
REGISTER_TIMEOUT_S = 30.0  # the spec's HANDSHAKE_TIMEOUT_MS: an upgrade and its room-state
SEND_TIMEOUT_S = 10.0
TURN_TIMEOUT_S = 10.0
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
EVENT_QUEUE = 1024
FATAL_CODES = frozenset({"register-rejected", "sender-mismatch", "room-full"})


def ws_url(url: str, scope: str) -> str:
    """The socket URL of a service URL: its ``/ws`` path (added unless given) with ``?room=<scope>``;
    ``UserError`` ``signal-url-invalid`` unless the scheme is ws or wss."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise UserError("signal-url-invalid", f"a signaling URL is ws://HOST[:PORT] or wss://HOST[:PORT], got {url[:80]!r}")
    path = parts.path.rstrip("/")
    path = path if path.endswith("/ws") else path + "/ws"
    return urlunsplit((parts.scheme, parts.netloc, path, f"room={scope}", ""))


def turn_url(url: str) -> str:
    """The ``/turn-token`` URL of a service URL (``wss://h/ws`` → ``https://h/turn-token``)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/").removesuffix("/ws") + "/turn-token"
    return urlunsplit(("https" if parts.scheme == "wss" else "http", parts.netloc, path, "", ""))


class SignalingClient:
    """One scope at one signaling service (module docstring)."""

    def __init__(self, url: str, scope: str, identity: Identity, replay: NonceSet | None,
                 ssl_context: ssl.SSLContext | None, nursery: trio.Nursery) -> None:
        self.url = url
        self.session = SignalingSession(identity, scope, replay)
        self.refusals: Counter[str] = Counter()
        self._socket_url = ws_url(url, self.session.scope)
        self._ssl = ssl_context
        self._nursery = nursery
        self._clock = NodeClock()
        self._ws: WebSocketConnection | None = None
        self._connected = trio.Event()
        self._first: trio.Event = trio.Event()
        self._first_error: UserError | None = None
        self._events_in, self._events_out = trio.open_memory_channel[ClientEvent](EVENT_QUEUE)

    @classmethod
    @asynccontextmanager
    async def connect(cls, url: str, scope: str, identity: Identity, *, replay: NonceSet | None = None,
                      ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[SignalingClient]:
        """A client registered in ``scope`` at the service ``url`` (``ws://`` or ``wss://``), kept connected
        until the block ends (then it sends ``leave`` and closes)."""
        failed: UserError | None = None
        try:
            async with trio.open_nursery() as nursery:
                client = cls(url, scope, identity, replay, ssl_context, nursery)
                nursery.start_soon(client._keep_connected)
                with trio.move_on_after(REGISTER_TIMEOUT_S + 1):
                    await client._first.wait()
                if not client._first.is_set() or client._first_error is not None:
                    failed = client._first_error or UserError(
                        "signal-unreachable", f"no registration at {url} within {REGISTER_TIMEOUT_S:g} s")
                    nursery.cancel_scope.cancel()
                else:
                    try:
                        yield client
                    finally:
                        await client._leave()
                        nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # what the block raised, alone: not wrapped by the client's nursery
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        if failed is not None:
            raise failed

    # ---- the API ----------------------------------------------------------------------------------

    @property
    def peers(self) -> tuple[str, ...]:
        """The room now, in registration order (this peer included; empty while reconnecting)."""
        return tuple(self.session.peers)

    @property
    def host(self) -> str | None:
        """The expected host: the first peer registered."""
        return self.session.host

    async def send(self, target: PeerId, message: SignalMessage) -> None:
        """Sign ``message`` for ``target`` and send it (waiting up to ``SEND_TIMEOUT_S`` for a socket while
        reconnecting); ``UserError`` ``signal-unavailable`` when none comes, ``LocalError``
        ``signal-invalid`` for a bad target or message."""
        with trio.move_on_after(SEND_TIMEOUT_S):
            while True:
                await self._connected.wait()
                ws = self._ws
                if ws is None:
                    await trio.sleep(0)
                    continue
                try:
                    await ws.send_message(self.session.signal(target, message, self._clock.now_ms()))
                    return
                except ConnectionClosed:
                    await trio.sleep(0)
        raise UserError("signal-unavailable", f"no connection to {self.url} within {SEND_TIMEOUT_S:g} s")

    async def events(self) -> AsyncIterator[ClientEvent]:
        """Every event in the order it happened: ``Registered`` (again after a reconnect), ``PeerJoined``,
        ``PeerLeft``, ``Signal`` (verified), ``Error`` (the server's error frame)."""
        async for event in self._events_out:
            yield event

    async def turn_credentials(self) -> TurnCredentials:
        """TURN credentials from the service's ``/turn-token`` with a fresh proof; ``UserError``
        ``turn-token-refused`` (the status and error code in the message) or ``turn-token-unreachable``,
        ``ProtocolError`` ``turn-reply-invalid`` for a reply outside the bounds."""
        url = turn_url(self.url)
        body = turn_request_body(self.session.identity, self._clock.now_ms())
        status, reply = await http_post(url, body, TURN_REPLY_MAX_BYTES, self._ssl)
        if status != 200:
            raise UserError("turn-token-refused", f"{url} answered {status} {reply[:200].decode('utf-8', 'replace')}")
        return decode_turn_reply(reply)

    # ---- the connection ---------------------------------------------------------------------------

    async def _keep_connected(self) -> None:
        delay = BACKOFF_FIRST_S
        while True:
            registered = await self._one_socket()
            if registered:
                delay = BACKOFF_FIRST_S
            await trio.sleep(delay * random.uniform(0.75, 1.25))
            delay = min(delay * 2, BACKOFF_MAX_S)

    async def _one_socket(self) -> bool:
        """One socket's life: upgrade, register, then read until it ends; whether it registered."""
        registered = False
        try:
            async with open_websocket_url(self._socket_url, ssl_context=self._ssl, max_message_size=MAX_FRAME_BYTES,
                                          connect_timeout=REGISTER_TIMEOUT_S, disconnect_timeout=2) as ws:
                try:
                    await ws.send_message(self.session.register(self._clock.now_ms()))
                    with trio.fail_after(REGISTER_TIMEOUT_S):
                        while not self.session.registered:
                            if not await self._deliver(await ws.get_message()):
                                return False
                    registered = True
                    self._ws = ws
                    self._connected.set()
                    self._first.set()
                    while True:
                        await self._deliver(await ws.get_message())
                finally:
                    self._ws = None
                    self._connected = trio.Event()
                    self.session.disconnected()
        except (ConnectionClosed, HandshakeError, OSError, trio.TooSlowError) as exc:
            log.info("signal-client-disconnected", url=self.url, why=type(exc).__name__, registered=registered)
            if not self._first.is_set():
                self._first_error = UserError("signal-unreachable", f"cannot register at {self.url}: {type(exc).__name__}")
                self._first.set()
        return registered

    async def _deliver(self, data: str | bytes) -> bool:
        """Feed one message to the session and pass its events on; False when the server refused this
        client's registration (the socket is done)."""
        for event in self.session.receive(data, self._clock.now_ms()):
            if isinstance(event, Dropped):
                self.refusals[event.code] += 1
                log.info("signal-client-refused", url=self.url, code=event.code, detail=event.detail)
                continue
            if isinstance(event, Error) and not self.session.registered and event.code in FATAL_CODES:
                if not self._first.is_set():
                    self._first_error = UserError("signal-refused", f"{self.url} refused the registration: {event.code}")
                    self._first.set()
                await self._events_in.send(event)
                return False
            if isinstance(event, Registered):
                log.info("signal-client-registered", url=self.url, peers=len(event.peers))
            await self._events_in.send(event)
        return True

    async def _leave(self) -> None:
        ws = self._ws
        if ws is None:
            return
        with trio.CancelScope(shield=True), trio.move_on_after(2):
            try:
                await ws.send_message(self.session.leave())
            except ConnectionClosed:
                pass


async def http_post(url: str, body: bytes, max_reply: int, ssl_context: ssl.SSLContext | None = None,
                    timeout_s: float = TURN_TIMEOUT_S) -> tuple[int, bytes]:
    """POST ``body`` as JSON to ``url`` (http or https); (status, reply body). ``UserError``
    ``turn-token-unreachable`` when it does not answer within ``timeout_s``, and ``turn-reply-invalid``
    (a ``ProtocolError``) for a reply over ``max_reply`` bytes or not HTTP."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with trio.fail_after(timeout_s):
            stream: trio.abc.Stream
            if parts.scheme == "https":
                stream = await trio.open_ssl_over_tcp_stream(host, port, ssl_context=ssl_context or ssl.create_default_context())
            else:
                stream = await trio.open_tcp_stream(host, port)
            async with stream:
                return await _exchange(stream, parts.netloc, parts.path or "/", body, max_reply)
    except (OSError, trio.TooSlowError, trio.BrokenResourceError) as exc:
        raise UserError("turn-token-unreachable", f"{url}: {type(exc).__name__}") from None


async def _exchange(stream: trio.abc.Stream, netloc: str, path: str, body: bytes, max_reply: int) -> tuple[int, bytes]:
    connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=16 * 1024)
    request = h11.Request(method="POST", target=path, headers=[
        ("Host", netloc), ("Content-Type", "application/json"), ("Content-Length", str(len(body))),
        ("Connection", "close")])
    await stream.send_all(connection.send(request) + (connection.send(h11.Data(data=body)) or b"")
                          + (connection.send(h11.EndOfMessage()) or b""))
    status, reply = 0, bytearray()
    while True:
        try:
            event = connection.next_event()
        except h11.RemoteProtocolError:
            raise ProtocolError("turn-reply-invalid", "the /turn-token reply is not HTTP") from None
        if event is h11.NEED_DATA:
            connection.receive_data(bytes(await stream.receive_some(16 * 1024)))
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            reply += event.data
            if len(reply) > max_reply:
                raise ProtocolError("turn-reply-invalid", f"the /turn-token reply is over {max_reply} bytes")
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            return status, bytes(reply)
