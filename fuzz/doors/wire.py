"""The wire, per channel a link uses: bytes off a socket through the channel's frame decoder, every
body through the strict decoder of what that channel carries (handshake frames before the handshake,
the link registry after it: room, version, race and link messages)."""

from __future__ import annotations

from collections.abc import Callable

from fuzz.harness import Target, coded
from open4wd_node.net.link_rules import link_registry
from protocol.encoding.wire import HANDSHAKE, ROOM, Channel, FrameDecoder, Message, decode_message
from protocol.link.handshake import decode_handshake_message
from protocol.race import mesh as race_mesh, messages as race_messages
from protocol.race.messages import RACE_LINK
from protocol.room import messages as room_messages
from protocol.versions import collection

REGISTERED = (race_mesh, race_messages, room_messages, collection)  # importing them fills the registry
LINK_REGISTRY = link_registry(None)  # every message a link may carry after its handshake


def _channel_target(name: str, channel: Channel, decode: Callable[[bytes], Message]) -> Target:
    def one_input(data: bytes) -> None:
        for body in FrameDecoder(channel).feed(data):  # a ProtocolError (frame-too-large, …) ends it, as on a link
            coded(decode, body)

    return Target(name, one_input, f"frames and messages of the {channel.name} channel")


def _after_handshake(body: bytes) -> Message:
    return decode_message(body, LINK_REGISTRY)


TARGETS = {
    "wire-handshake": _channel_target("wire-handshake", HANDSHAKE, decode_handshake_message),
    "wire-room": _channel_target("wire-room", ROOM, _after_handshake),
    "wire-race": _channel_target("wire-race", RACE_LINK, _after_handshake),
}
