"""A node's WebRTC side: its registration in its room's scope, the doorway that answers offers there, and
the dialler that opens links to peers registered there.

One registration per node and room: the host registers in ``room:<room id>`` when it opens the room, a
joiner when it joins (at the invitation's services, first, then its own), and every WebRTC link of that
node for that room opens in that scope: the room's star, the race mesh, host succession and spectators
(what a link is for is its first message, as over TCP; every node link has the same channels,
``protocol.webrtc.channels``). A race therefore needs no second registration at its start, and the
service's room is exactly the room's members.

ICE, as the configuration says (``webrtc_reach``): STUN and TURN servers given explicitly, never any
other; TURN credentials from a file or fresh from the service's ``/turn-token`` (REST credentials, asked
again when half their life has passed); ``reachability`` ``relay`` offers TURN relay candidates only,
``direct`` uses no TURN server; host candidates on the given addresses, or on every interface's. Of
several TURN servers the links use the first, in the order given, that answers (``turn_choice``: aiortc
uses only one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from open4wd_node.net.link import Link, LinkClosed
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.runtime.errors import UsageError, UserError
from protocol.identity.keys import Identity, PeerId
from protocol.race.messages import RACE_LINK
from protocol.webrtc.ice import HostAddresses, IceScheme, IceServer, IceTransportPolicy

TURN_CHOICE_S = 5.0  # how long the TURN server found answering first is kept before asking again

if TYPE_CHECKING:
    from open4wd_node.net.transport import Door
    from open4wd_node.net.webrtc.connector import WebRTCEndpoint, WebRTCSettings
    from open4wd_node.net.webrtc.service import ServiceSignaling
    from open4wd_node.runtime.config import NodeConfig


@dataclass(frozen=True)
class WebRTCOptions:
    """How this node's WebRTC links are made (the configuration's ``signals``, ``ice_servers``,
    ``ice_hosts``, ``turn_credentials`` and ``reachability``)."""

    signals: tuple[str, ...] = ()
    ice_servers: tuple[str, ...] = ()
    hosts: HostAddresses = HostAddresses(interfaces=True)
    turn_file: str = ""
    reachability: str = "auto"


def webrtc_options(config: NodeConfig) -> WebRTCOptions:
    """This node's WebRTC options from its configuration."""
    hosts = HostAddresses.only(*config.ice_hosts) if config.ice_hosts else HostAddresses(interfaces=True)
    return WebRTCOptions(config.signals, config.ice_servers, hosts, config.turn_credentials, config.reachability)


def listens_directly(config: NodeConfig, default_listen: object) -> bool:
    """Whether this node accepts TCP links: not with ``reachability = relay``, nor with a signaling
    service and no ``listen`` of its own (``default_listen``: the built-in one)."""
    return config.reachability != "relay" and not (config.signals and config.listen == default_listen)


def check_reachability(config: NodeConfig) -> None:
    """Refuse, before anything starts, a ``reachability = relay`` (TURN only) that could never link: it
    needs a signaling service (``reachability-relay-needs-signal``) and a TURN server
    (``reachability-relay-needs-turn``; its credentials then come from ``--turn-credentials`` or the
    service's ``/turn-token``). ``UsageError`` (exit 2)."""
    if config.reachability != "relay":
        return
    if not config.signals:
        raise UsageError("--reachability relay (TURN only) accepts no direct link: give a signaling service to be "
                         "reached through (--signal URL) and a TURN server (--ice-server turn:HOST:PORT)",
                         "reachability-relay-needs-signal")
    if not any(url.startswith(IceScheme.TURN + ":") for url in config.ice_servers):
        raise UsageError("--reachability relay (TURN only) offers TURN relay candidates only: give a TURN server "
                         "(--ice-server turn:HOST:PORT; credentials from --turn-credentials or the signaling "
                         "service's /turn-token)", "reachability-relay-needs-turn")


def read_turn_file(path: str) -> tuple[str, str]:
    """(username, credential) from a TURN credentials file: two lines. ``UserError``
    ``turn-credentials-invalid`` otherwise."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError("turn-credentials-invalid", f"cannot read {path}: {exc}") from None
    if len(lines) < 2 or not lines[0].strip() or not lines[1].strip():
        raise UserError("turn-credentials-invalid", f"{path} holds the TURN username on its first line and the "
                                                    "credential on its second")
    return lines[0].strip(), lines[1].strip()


class WebRTCReach:
    """This node's WebRTC doorway and dialler in its room's scope (module docstring)."""

    def __init__(self, identity: Identity, options: WebRTCOptions) -> None:
        self.identity = identity
        self.options = options
        self.signals: tuple[str, ...] = options.signals
        """The services this node is reachable at: the one it registered at first (empty before)."""
        self.scope: str | None = None
        self._signaling: ServiceSignaling | None = None
        self._endpoint: WebRTCEndpoint | None = None
        self._turn: tuple[str, str] | None = read_turn_file(options.turn_file) if options.turn_file else None
        self._turn_until = 0.0
        self._choice_until = 0.0  # when to ask again which TURN server answers first

    @property
    def serving(self) -> bool:
        """Whether this node is registered in a scope and answers offers there."""
        return self._endpoint is not None

    async def serve(self, scope: str, signals: tuple[str, ...], gate: Door, *,
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Register in ``scope`` at the first of ``signals`` (then this node's own services) that answers,
        answer offers there through ``gate`` until cancelled; started once registered. ``UserError``
        ``signal-unreachable`` when no service answers."""
        from open4wd_node.net.webrtc.connector import webrtc_endpoint
        from open4wd_node.net.webrtc.doorway import admit_offers
        from open4wd_node.net.webrtc.service import open_service_signaling
        from protocol.webrtc.channels import LinkKind

        urls = tuple(dict.fromkeys(signals + self.options.signals))
        async with open_service_signaling(urls, scope, self.identity) as signaling:
            self._signaling = signaling
            self.signals = (signaling.url,) + tuple(url for url in urls if url != signaling.url)
            self.scope = scope
            try:
                settings = await self._settings()
            except LinkClosed as exc:  # no TURN credentials to start with: the node's own setup failed
                raise UserError(exc.code, exc.message) from None
            async with webrtc_endpoint(signaling, LinkKind.NODE, settings) as endpoint:
                self._endpoint = endpoint
                task_status.started()
                try:
                    await admit_offers(endpoint, gate, self._refresh)
                finally:
                    self._endpoint = None

    async def dial(self, peer: PeerId, *, expensive: frozenset[str] = frozenset(), limits: LinkLimits = ROOM_LIMITS) -> Link:
        """A link to ``peer``, registered in this node's scope; ``LinkClosed`` with the code when none opens
        (``webrtc-not-serving`` before this node registered)."""
        from open4wd_node.net.webrtc.connector import webrtc_link

        endpoint = self._endpoint
        if endpoint is None:
            raise LinkClosed("webrtc-not-serving", "this node is not registered at a signaling service")
        await self._refresh()
        carrier = await endpoint.connect(peer)
        return webrtc_link(carrier, expensive=expensive, limits=limits)

    async def _refresh(self) -> None:
        """The endpoint's settings with TURN credentials that are still good (``LinkClosed`` when the service
        refuses new ones), and its TURN server that answers first (``turn_choice``), checked again once
        ``TURN_CHOICE_S`` passed: run before every negotiation."""
        if self._endpoint is None:
            return
        if self._turn_needed and trio.current_time() >= self._turn_until:
            self._endpoint.settings = await self._settings()
        elif trio.current_time() >= self._choice_until:
            self._endpoint.settings = await self._answering_first(self._endpoint.settings)

    async def _answering_first(self, settings: WebRTCSettings) -> WebRTCSettings:
        from open4wd_node.net.webrtc.turn_choice import answering_first

        self._choice_until = trio.current_time() + TURN_CHOICE_S
        return replace(settings, ice_servers=await answering_first(settings.ice_servers))

    @property
    def _turn_needed(self) -> bool:
        return self.options.reachability != "direct" and any(
            url.startswith(IceScheme.TURN + ":") for url in self.options.ice_servers)

    async def _settings(self) -> WebRTCSettings:
        from open4wd_node.net.webrtc.connector import WebRTCSettings

        options = self.options
        servers: list[IceServer] = []
        for url in options.ice_servers:
            turn = url.startswith(IceScheme.TURN + ":")
            if turn and options.reachability == "direct":
                continue
            if turn:
                username, credential = await self._turn_credentials()
                servers.append(IceServer.parse(url, username, credential))
            elif options.reachability != "relay":
                servers.append(IceServer.parse(url))
        policy = IceTransportPolicy.RELAY if options.reachability == "relay" else IceTransportPolicy.ALL
        return await self._answering_first(WebRTCSettings(hosts=options.hosts, ice_servers=tuple(servers), policy=policy,
                                                          max_message_bytes=RACE_LINK.max_frame_bytes))

    async def _turn_credentials(self) -> tuple[str, str]:
        if self.options.turn_file:
            assert self._turn is not None
            self._turn_until = float("inf")
            return self._turn
        assert self._signaling is not None
        try:
            minted = await self._signaling.turn_credentials()
        except UserError as exc:
            raise LinkClosed(exc.code, exc.message, by_peer=True) from None
        self._turn_until = trio.current_time() + minted.ttl_s / 2
        return minted.username, minted.credential

