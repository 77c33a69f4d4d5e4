"""How a node is reached and how it reaches its peers: the part of a ``Node`` that a transport provides.

A node needs two things of its transport: a listener that serves while the node runs (where room joins,
race-mesh greetings and spectators' links arrive, handed over by their first message, and which knows
the contact the node announces), and a dialler that opens a link to a peer known by PeerId and contact.
``TcpLinks`` is the product's: TCP + Noise on the configured listen address, and WebRTC links through the
configured signaling services, tried when a direct link fails (``open4wd_node.net.reach``). A second
transport is a second ``Links``; the room, the race and the spectator never see which one runs.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from open4wd_node.net.listener import NodeListener, SignalingReach
from open4wd_node.net.transport import Dialler
from open4wd_node.net.webrtc.reach import WebRTCReach, listens_directly, webrtc_options
from open4wd_node.net.reach import contact_dialler, listening
from open4wd_node.runtime.addresses import AUTOMATIC, Address, Advertise
from open4wd_node.runtime.config import DEFAULTS, NodeConfig
from protocol.identity.keys import Identity


class Links(Protocol):
    """A node's transport (module docstring)."""

    def serving(self) -> AbstractAsyncContextManager[NodeListener]:
        """The node's listener, serving while the context is open;
        ``UserError`` ``listen-failed`` when it cannot be bound."""

    def dialler(self, listener: NodeListener) -> Dialler:
        """How the node dials a peer's contact while ``listener`` serves."""


@dataclass(frozen=True)
class TcpLinks:
    """TCP + Noise links for ``identity``, listening on ``listen`` and telling peers ``advertise``, and its
    WebRTC side ``webrtc`` as ``reachability`` says (docs/network.md, docs/webrtc.md)."""

    identity: Identity
    listen: Address = Address("127.0.0.1", 0)
    advertise: Advertise = AUTOMATIC
    reachability: str = "auto"
    webrtc: SignalingReach | None = None
    listen_directly: bool = True

    @classmethod
    def from_config(cls, identity: Identity, config: NodeConfig) -> TcpLinks:
        """The links the configuration asks for (the ``listen``, ``advertise``, ``reachability`` and WebRTC
        settings)."""
        return cls(identity, config.listen, config.advertise, config.reachability,
                   WebRTCReach(identity, webrtc_options(config)), listens_directly(config, DEFAULTS.listen))

    def serving(self) -> AbstractAsyncContextManager[NodeListener]:
        """The listener on ``listen`` (``open4wd_node.net.reach.listening``)."""
        return listening(self.identity, self.listen.host, self.listen.port, self.advertise, self.reachability,
                         self.webrtc, self.listen_directly)

    def dialler(self, listener: NodeListener) -> Dialler:
        """``contact_dialler``: directly, then over WebRTC where the peer answers at a signaling service."""
        return contact_dialler(listener)
