"""The signaling service's HTTP door: one request per connection, read with ``h11`` under bounds (8 KiB of
request head, a 4 KiB body, 10 s in all), answered with ``Connection: close``; and the CORS rules that
let a game page on another origin read ``/turn-token``.

A WebSocket upgrade is not answered here: the request is handed on (``Request.raw`` holds every byte
read, so the WebSocket library can read the request again from the start: ``ReplayStream``).

CORS: the spec's server sends no CORS header, so a page served from another origin cannot read its
``/turn-token`` reply (the JSON request needs a preflight, which gets a 404). This service answers the
preflight and adds ``Access-Control-Allow-Origin``. Who may: ``cors_origins``, ``*`` by default, since the
request carries its own credential (the signed proof) and no cookie or ambient authority is ever
honoured (``Access-Control-Allow-Credentials`` is never sent). With a list of origins, only those get
the header, and a WebSocket upgrade that carries an ``Origin`` outside the list is refused (403): a
browser always sends one, other clients need not.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import h11
import trio

MAX_HEAD_BYTES = 8 * 1024
REQUEST_TIMEOUT_S = 10.0
RECEIVE_BYTES = 16 * 1024
REASONS = {101: "Switching Protocols", 200: "OK", 204: "No Content", 400: "Bad Request", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 413: "Content Too Large",
           429: "Too Many Requests", 503: "Service Unavailable"}
PREFLIGHT_MAX_AGE_S = 600


class BadRequest(Exception):
    """The request could not be read: ``status`` to answer (400, 413), or 0 to close without a word."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


@dataclass(frozen=True)
class Request:
    """One request: method, path, query, lower-case headers, body (empty for an upgrade), and ``raw``:
    every byte read from the connection so far."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    raw: bytes

    @property
    def is_websocket(self) -> bool:
        """Whether the request asks for a WebSocket upgrade."""
        return self.headers.get("upgrade", "").lower() == "websocket"


async def read_request(stream: trio.abc.ReceiveStream, max_body: int) -> Request:
    """The next request on ``stream``, within ``REQUEST_TIMEOUT_S``; ``BadRequest`` when it does not parse
    (400), its body is over ``max_body`` (413), or it does not come in time or the peer hangs up (0)."""
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
    raw = bytearray()
    head: h11.Request | None = None
    body = bytearray()
    with trio.move_on_after(REQUEST_TIMEOUT_S):
        while True:
            try:
                event = connection.next_event()
            except h11.RemoteProtocolError as exc:
                raise BadRequest(400, str(exc)) from None
            if event is h11.NEED_DATA:
                try:
                    data = await stream.receive_some(RECEIVE_BYTES)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    raise BadRequest(0, "the connection ended") from None
                if not data:
                    raise BadRequest(0, "the connection ended before the request did")
                raw += bytes(data)
                connection.receive_data(bytes(data))
                continue
            if isinstance(event, h11.Request):
                head = event
                length = dict(event.headers).get(b"content-length")
                if length is not None and length.isdigit() and int(length) > max_body:
                    raise BadRequest(413, f"a body of {int(length)} bytes")
                if _is_upgrade(event):
                    return _request(event, b"", bytes(raw))
                continue
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > max_body:
                    raise BadRequest(413, f"a body over {max_body} bytes")
                continue
            if isinstance(event, h11.EndOfMessage) and head is not None:
                return _request(head, bytes(body), bytes(raw))
            if event is h11.PAUSED and head is not None:
                return _request(head, bytes(body), bytes(raw))
            raise BadRequest(0, "the connection ended before the request did")
    raise BadRequest(0, f"no whole request within {REQUEST_TIMEOUT_S:g} s")


def _is_upgrade(event: h11.Request) -> bool:
    return any(name == b"upgrade" for name, _ in event.headers)


def _request(head: h11.Request, body: bytes, raw: bytes) -> Request:
    target = head.target.decode("latin-1")
    parts = urlsplit(target)
    headers: dict[str, str] = {}
    for name, value in head.headers:
        headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    query = parse_qs(parts.query, keep_blank_values=True, max_num_fields=32)
    return Request(head.method.decode("latin-1"), parts.path, query, headers, body, raw)


def response(status: int, body: bytes = b"", content_type: str | None = None, headers: dict[str, str] | None = None,
             *, head_only: bool = False) -> bytes:
    """An HTTP/1.1 response that closes the connection; ``head_only`` (a HEAD request) leaves the body out
    but keeps its length."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + (b"" if head_only else body)


@dataclass(frozen=True)
class CorsPolicy:
    """Which page origins may read the service's HTTP replies (module docstring)."""

    origins: tuple[str, ...] = ("*",)

    @property
    def any_origin(self) -> bool:
        """Whether every origin may (``*``)."""
        return "*" in self.origins

    def allows(self, origin: str | None) -> bool:
        """Whether a request from ``origin`` may go on (no ``Origin``: not a browser page, always)."""
        return origin is None or self.any_origin or origin in self.origins

    def headers(self, origin: str | None) -> dict[str, str]:
        """The ``Access-Control-Allow-Origin`` a reply to ``origin`` carries (none for another origin)."""
        if self.any_origin:
            return {"Access-Control-Allow-Origin": "*"}
        if origin is not None and origin in self.origins:
            return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
        return {}

    def preflight(self, origin: str | None) -> dict[str, str]:
        """The headers of a preflight's answer: the origin's, and the method and header a POST needs."""
        allowed = self.headers(origin)
        if not allowed:
            return {}
        return {**allowed, "Access-Control-Allow-Methods": "POST, OPTIONS",
                "Access-Control-Allow-Headers": "content-type", "Access-Control-Max-Age": str(PREFLIGHT_MAX_AGE_S)}


class ReplayStream(trio.abc.Stream):
    """A stream that gives back ``prefix`` (the bytes already read from ``stream``) before reading
    ``stream`` further: the WebSocket library reads the upgrade request again from its first byte."""

    def __init__(self, stream: trio.abc.Stream, prefix: bytes) -> None:
        self.stream = stream
        self._prefix = prefix

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        """The prefix first (at most ``max_bytes`` of it), then the stream's bytes."""
        if self._prefix:
            size = len(self._prefix) if max_bytes is None else max_bytes
            chunk, self._prefix = self._prefix[:size], self._prefix[size:]
            await trio.lowlevel.checkpoint()
            return chunk
        return bytes(await self.stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Write to the stream."""
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        """As the stream."""
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        """Close the stream."""
        await self.stream.aclose()
