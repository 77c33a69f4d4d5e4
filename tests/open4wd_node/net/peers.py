"""A hand-driven peer for tests: completes the real handshake over a raw stream, then writes any bytes."""

from __future__ import annotations

import trio

from open4wd_node.net.link import now_ms
from protocol.link.handshake import DIALER, Handshake, HandshakeResult, decode_handshake_message
from protocol.identity.keys import Identity
from protocol.encoding.wire import HANDSHAKE, ROOM, FrameDecoder, Message, decode_message, encode_frame, encode_message


def frame(msg: Message) -> bytes:
    return encode_frame(encode_message(msg), ROOM)


class RawPeer:
    """The dialer side of a link without any of the link's rules, to misbehave on purpose."""

    def __init__(self, stream: trio.abc.Stream, identity: Identity) -> None:
        self.stream = stream
        self.identity = identity
        self.decoder = FrameDecoder(ROOM)

    async def handshake(self, expected_peer: str | None = None) -> HandshakeResult:
        handshake = Handshake(self.identity, DIALER, now_ms(), expected_peer=expected_peer)
        decoder = FrameDecoder(HANDSHAKE)
        for msg in handshake.start():
            await self.stream.send_all(encode_frame(encode_message(msg), HANDSHAKE))
        while handshake.result is None:
            # the listener sends nothing after its link-auth until it has verified ours
            for body in decoder.feed(await self.stream.receive_some(4096)):
                for reply in handshake.receive(decode_handshake_message(body), now_ms()):
                    await self.stream.send_all(encode_frame(encode_message(reply), HANDSHAKE))
        assert decoder.buffered == 0
        return handshake.result

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def messages_until_eof(self) -> list[Message]:
        """Everything the other side sends until it closes the connection."""
        received = []
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:  # a reset after unread data: the other side has closed
                return received
            if not data:
                return received
            received += [decode_message(body) for body in self.decoder.feed(data)]
