"""The one STUN exchange the node makes itself (RFC 5389): a Binding request and the test of its answer.

A STUN Binding request answered tells that a STUN or TURN server is up on that port: coturn answers one on
its listening port without credentials. The node asks it to learn which of its TURN servers answer
(``open4wd_node.net.webrtc.turn_choice``) and a local coturn's start-up waits for it
(``open4wd_node.signal.coturn``). Everything else of STUN and TURN is aioice's.
"""

from __future__ import annotations

import secrets
import struct

STUN_MAGIC_COOKIE = 0x2112A442
STUN_BINDING_REQUEST = 0x0001
STUN_BINDING_SUCCESS = 0x0101


def stun_binding_request() -> tuple[bytes, bytes]:
    """A STUN Binding request and its transaction id."""
    transaction = secrets.token_bytes(12)
    return struct.pack("!HHI", STUN_BINDING_REQUEST, 0, STUN_MAGIC_COOKIE) + transaction, transaction


def is_binding_success(datagram: bytes, transaction: bytes) -> bool:
    """Whether ``datagram`` is a STUN Binding success response to ``transaction``."""
    if len(datagram) < 20:
        return False
    kind, _length, cookie = struct.unpack("!HHI", datagram[:8])
    return kind == STUN_BINDING_SUCCESS and cookie == STUN_MAGIC_COOKIE and datagram[8:20] == transaction
