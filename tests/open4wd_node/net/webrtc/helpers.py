"""Shared pieces of the WebRTC link tests: identities, a hub of in-memory signaling, loopback settings."""

from __future__ import annotations

from protocol.identity.keys import Identity
from protocol.webrtc.ice import HostAddresses
from open4wd_node.net.webrtc.connector import WebRTCSettings

ALICE, BOB, CAROL = (Identity(bytes([n]) * 32) for n in (1, 2, 3))
SCOPE = "room:2f1c3b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
LOOPBACK = WebRTCSettings(hosts=HostAddresses.only("127.0.0.1"))
