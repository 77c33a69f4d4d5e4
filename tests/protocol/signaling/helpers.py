"""Fixed identities, a scope and a clock reading shared by the signaling tests, and a small driver that
plays sockets against a ``SignalingHub`` (what the server's shell does, without sockets)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from protocol.identity.keys import Identity
from protocol.signaling.actions import CloseSocket, HubAction, Refused, SendText
from protocol.signaling.limits import HubLimits
from protocol.signaling.proof import build_proof
from protocol.signaling.server import SignalingHub

ALICE = Identity(bytes([1]) * 32)
BOB = Identity(bytes([2]) * 32)
CAROL = Identity(bytes([3]) * 32)
SCOPE = "room:0f8fad5b-d9cb-469f-a165-70867728950e"
OTHER_SCOPE = "match:" + "ab" * 32
NOW = 1_796_535_282_000
SOURCE = "192.0.2.7"


def register_text(identity: Identity, scope: str = SCOPE, now_ms: int = NOW, **extra: Any) -> str:
    """A register frame with a fresh proof (``extra`` keys added at the top level)."""
    proof = build_proof(identity, scope, now_ms)
    return json.dumps({"type": "register", "sender": identity.peer_id,
                       "payload": {"peerId": identity.peer_id, "proof": proof.to_json()}, **extra})


@dataclass
class Wire:
    """Sockets of one hub: what each was sent, how it was closed, what was refused."""

    hub: SignalingHub = field(default_factory=SignalingHub)
    sent: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    closed: dict[int, tuple[int, str]] = field(default_factory=dict)
    refused: list[tuple[int, str]] = field(default_factory=list)
    actions: list[HubAction] = field(default_factory=list)

    @classmethod
    def with_limits(cls, **limits: Any) -> "Wire":
        return cls(SignalingHub(HubLimits(**limits)))

    def apply(self, actions: list[HubAction]) -> list[HubAction]:
        self.actions += actions
        for action in actions:
            if isinstance(action, SendText):
                self.sent.setdefault(action.conn, []).append(json.loads(action.text))
            elif isinstance(action, CloseSocket):
                self.closed[action.conn] = (action.code, str(action.reason))
            elif isinstance(action, Refused):
                self.refused.append((action.conn, action.code.value))
        return actions

    def open(self, scope: object = SCOPE, now_ms: int = NOW) -> int:
        conn, actions = self.hub.connect(SOURCE, scope, now_ms)
        self.apply(actions)
        return conn

    def send(self, conn: int, data: str | bytes, now_ms: int = NOW) -> list[HubAction]:
        return self.apply(self.hub.receive(conn, data, now_ms))

    def join(self, identity: Identity, now_ms: int = NOW) -> int:
        conn = self.open(now_ms=now_ms)
        self.send(conn, register_text(identity, now_ms=now_ms), now_ms)
        assert conn not in self.closed, self.refused
        return conn

    def types(self, conn: int) -> list[str]:
        return [frame["type"] for frame in self.sent.get(conn, [])]

    def last(self, conn: int) -> dict[str, Any]:
        return self.sent[conn][-1]

    def codes(self) -> list[str]:
        return [code for _, code in self.refused]
