"""A hand-driven peer for tests: completes the real Noise handshake over a raw stream, then writes any
bytes (sealed frames with its own cipher, or anything at all)."""

from __future__ import annotations

import trio

from open4wd_node.net.link import now_ms
from protocol.encoding.wire import (
    HANDSHAKE, HEADER, ROOM, Channel, FrameDecoder, Message, decode_message, encode_frame, encode_message,
)
from protocol.link.handshake import DIALER, Handshake, HandshakeResult, decode_handshake_message


def plain_frame(msg: Message) -> bytes:
    """``msg`` framed but not sealed: what an injecting party without the keys can write."""
    return encode_frame(encode_message(msg), ROOM)


class RawPeer:
    """The dialer side of a link without any of the link's rules, to misbehave on purpose."""

    def __init__(self, stream: trio.abc.Stream, identity) -> None:
        self.stream = stream
        self.identity = identity
        self.decoder = FrameDecoder(ROOM)
        self.result: HandshakeResult | None = None

    async def handshake(self, expected_peer: str | None = None) -> HandshakeResult:
        handshake = Handshake(self.identity, DIALER, now_ms(), expected_peer=expected_peer)
        decoder = FrameDecoder(HANDSHAKE)
        for msg in handshake.start():
            await self.stream.send_all(encode_frame(encode_message(msg), HANDSHAKE))
        while handshake.result is None:
            # the listener sends nothing after its message 2 until it has read our message 3
            for body in decoder.feed(await self.stream.receive_some(4096)):
                for reply in handshake.receive(decode_handshake_message(body), now_ms()):
                    await self.stream.send_all(encode_frame(encode_message(reply), HANDSHAKE))
        assert decoder.buffered == 0
        self.result = handshake.result
        self.decoder = FrameDecoder(Channel("sealed room", ROOM.max_frame_bytes + 16))
        return handshake.result

    def seal(self, body: bytes) -> bytes:
        """``body`` as the next frame of this side: sealed with its cipher and length-prefixed."""
        assert self.result is not None, "handshake first"
        sealed = self.result.send.seal(body)
        return HEADER.pack(len(sealed)) + sealed

    def frame(self, *messages: Message) -> bytes:
        """``messages`` as the next sealed frames of this side, in order."""
        return b"".join(self.seal(encode_message(msg)) for msg in messages)

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def messages_until_eof(self) -> list[Message]:
        """Everything the other side sends until it closes the connection (opened with its cipher
        once the handshake is done)."""
        received = []
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:  # a reset after unread data: the other side has closed
                return received
            if not data:
                return received
            for body in self.decoder.feed(data):
                received.append(decode_message(self.result.receive.open(body) if self.result else body))
