"""Fetching a missing asset from the member that declared it, through the host's attested relay.

Chunked (64 KiB, well under the 256 KiB room frame), size-capped (the 80 MiB GLB cap), and verified:
the assembled bytes must hash to the requested content id before they enter the store, so a peer can
waste our time but never plant a different asset. Store reads and writes run off the event loop
(``run_blocking``); the asset being served is read (and re-hashed) once, not once per chunk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeAlias

import structlog
import trio

from open4wd_node.assets.store import AssetStore
from open4wd_node.runtime.blocking import run_blocking
from open4wd_node.events.sink import EventSink
from protocol.room.messages import AssetChunk, AssetMissing, AssetRequest, Relay
from protocol.encoding.wire import Message, encode_message
from protocol.identity.keys import PeerId
from sim_core.errors import SimError
from open4wd_node.events.vocabulary import AssetFetched
from protocol.room.events import ErrorReported

log = structlog.get_logger("open4wd_node.assets")

CHUNK_BYTES = 64 * 1024
MAX_ASSET_BYTES = 80 * 1024 * 1024
CHUNK_TIMEOUT_S = 10


Send: TypeAlias = Callable[[Message], None]  # hands a message to the room, which relays it through the host
Reply: TypeAlias = AssetChunk | AssetMissing  # what a fetch waits for


def relay_to(peer: PeerId, message: Message) -> Relay:
    """``message`` wrapped for the host to relay to ``peer`` (the host fills in the origin)."""
    return Relay("", peer, encode_message(message))


class AssetTransfer:
    """This node's side of asset transfer in a room: serves the assets it may serve (``servable``) and
    fetches the ones its room lacks, chunk by chunk, into ``store``."""

    def __init__(self, store: AssetStore, events: EventSink, servable: Callable[[str], bool]) -> None:
        self.store = store
        self.events = events
        self.servable = servable
        self._waiting: dict[tuple[str, str], trio.MemorySendChannel[Reply]] = {}  # (owner, id) -> its fetch
        self._serving: tuple[str, bytes] | None = None  # the asset last served: (content id, bytes)

    async def on_relayed(self, origin: PeerId, message: Message) -> list[Relay]:
        """A relayed asset message from ``origin``: serve a request, or hand a chunk to its fetch."""
        if isinstance(message, AssetRequest):
            return [relay_to(origin, self._serve(message, await run_blocking(self._servable_bytes, message.contentId)))]
        if isinstance(message, (AssetChunk, AssetMissing)):
            channel = self._waiting.get((origin, message.contentId))
            if channel is not None:
                try:
                    channel.send_nowait(message)
                except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                    log.info("asset-chunk-dropped", origin=origin, content_id=message.contentId)
        return []

    def _servable_bytes(self, cid: str) -> bytes | None:
        """The bytes of ``cid`` if this node serves it and holds it intact (blocking: a store read)."""
        if self._serving is not None and self._serving[0] == cid:
            return self._serving[1]
        if not self.servable(cid) or not self.store.has(cid):
            return None
        try:
            data = self.store.get(cid)
        except SimError as exc:
            log.warning("asset-unservable", content_id=cid, code=exc.code, reason=exc.message)
            return None
        self._serving = (cid, data)
        return data

    @staticmethod
    def _serve(request: AssetRequest, data: bytes | None) -> Message:
        cid = request.contentId
        if data is None:
            return AssetMissing(cid)
        if not 0 <= request.offset <= len(data):
            return AssetMissing(cid)
        length = max(0, min(request.length, CHUNK_BYTES))
        return AssetChunk(cid, request.offset, len(data), data[request.offset : request.offset + length])

    async def fetch(self, owner: PeerId, cid: str, send: Send) -> bool:
        """Fetch ``cid`` from ``owner`` into the store; False (with an error event) on any failure."""
        send_channel, receive_channel = trio.open_memory_channel[Reply](4)
        self._waiting[(owner, cid)] = send_channel
        try:
            data = await self._fetch_chunks(owner, cid, send, receive_channel)
            if hashlib.sha256(data).hexdigest() != cid:
                raise SimError("asset-fetch-mismatch", f"{owner[-4:]} sent bytes that do not hash to {cid[:12]}…")
            await run_blocking(self.store.put, data)
        except SimError as exc:
            self.events.emit(ErrorReported(code=exc.code, message=exc.message))
            return False
        finally:
            del self._waiting[(owner, cid)]
        self.events.emit(AssetFetched(content_id=cid, peer=owner, bytes=len(data)))
        return True

    async def _fetch_chunks(
        self, owner: PeerId, cid: str, send: Send, receive_channel: trio.MemoryReceiveChannel[Reply]
    ) -> bytes:
        """Ask for one chunk at a time until the whole asset is in; ``SimError`` (``asset-fetch-*``) when
        the owner is silent, lacks it, or sends chunks that do not fit together."""
        parts: list[bytes] = []
        offset, total = 0, None
        while total is None or offset < total:
            send(relay_to(owner, AssetRequest(cid, offset, CHUNK_BYTES)))
            with trio.move_on_after(CHUNK_TIMEOUT_S) as scope:
                reply = await receive_channel.receive()
            if scope.cancelled_caught:
                raise SimError("asset-fetch-timeout", f"{owner[-4:]} did not send {cid[:12]}… in time")
            if isinstance(reply, AssetMissing):
                raise SimError("asset-fetch-missing", f"{owner[-4:]} does not hold {cid[:12]}…")
            if total is None:
                total = reply.total
            if reply.total != total or not 0 < total <= MAX_ASSET_BYTES or reply.offset != offset:
                raise SimError("asset-fetch-invalid", f"{owner[-4:]} sent an inconsistent or oversize chunk")
            if not reply.data or len(reply.data) > CHUNK_BYTES or offset + len(reply.data) > total:
                raise SimError("asset-fetch-invalid", f"{owner[-4:]} sent a chunk of the wrong size")
            parts.append(reply.data)
            offset += len(reply.data)
        return b"".join(parts)
