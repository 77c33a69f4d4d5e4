"""Opening WebRTC links: offers, answers and candidates through ``Signaling``, bound to the peer's PeerId.

``webrtc_endpoint(signaling, kind, settings)`` is one node's door in one signaling scope: ``connect(peer)``
offers a link to a PeerId, ``accept(from_peer)`` answers the next offer (from that PeerId only, when
given: a member takes the offer of its room's host and no other). A task of the endpoint reads every
signal and routes it: an offer to the queue ``accept`` takes from, an answer or candidate to the
negotiation with its sender; anything else is dropped.

A negotiation, either side:

1. a peer connection with the explicit ICE servers (an empty list means none: never aiortc's public
   default) and policy (``relay``: TURN only), its negotiated channels created at once
   (``protocol.webrtc.channels``);
2. the local description, gathered on the allowed host addresses only (``hosts.gathering_on``), is
   checked before it leaves: a candidate outside them is refused (``ice-candidate-not-allowed``, this
   node's own error); its other fingerprint lines are dropped, so it binds one sha-256 fingerprint;
3. the peer's SDP (signed by its PeerId: the signaling layer verified the signer) must carry one
   sha-256 fingerprint (``sdp-no-fingerprint``, ``sdp-fingerprint-not-sha256``, …); only that line is
   given to aiortc, whose DTLS then refuses a certificate that does not match it (``webrtc-dtls-failed``);
4. the peer's candidates, in its SDP and trickled, count against a budget (``ice-candidate-flood``);
   candidates that are not IP literals (a browser's mDNS names) are skipped: a link resolves no names;
5. every channel open, within ``negotiation_timeout_ms`` from the start (``webrtc-answer-timeout``
   while the answer has not come, ``webrtc-connect-timeout`` after); then the transcript
   (``webrtc_transcript`` over the scope, both PeerIds and both fingerprints) is bound, and the path of
   the nominated pair and a round trip are measured (``WebRTCCarrier.measure``).

Whatever fails costs that negotiation only: its peer connection is closed and ``LinkClosed`` is raised
with the code.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import structlog
import trio
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription
from aiortc.rtcconfiguration import RTCIceTransportPolicy
from aiortc.sdp import candidate_from_sdp

from open4wd_node.net.link import Link, LinkAuth, LinkClosed
from open4wd_node.net.link_rules import ROOM_LIMITS, LinkLimits
from open4wd_node.net.webrtc.bridge import AsyncioThread, asyncio_bridge
from open4wd_node.net.webrtc.carrier import WebRTCCarrier
from open4wd_node.net.webrtc.hosts import gathering_on
from protocol.signaling.client import Signal
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind
from open4wd_node.net.webrtc.signaling import Signaling
from protocol.encoding.wire import Message
from protocol.errors import LocalError, PeerError
from protocol.link.handshake import DIALER, LISTENER
from protocol.versions.record import PROTOCOL_VERSION
from protocol.webrtc.channels import LinkKind, channel_plan
from protocol.webrtc.chunks import ChunkLimits
from protocol.webrtc.ice import (
    MAX_REMOTE_CANDIDATES,
    CandidateBudget,
    HostAddresses,
    IceServer,
    IceTransportPolicy,
    offered_outside,
)
from protocol.webrtc.sdp import (
    SdpRole,
    bound_sdp,
    dtls_fingerprint,
    parse_candidate,
    sdp_candidates,
    webrtc_transcript,
)
from protocol.identity.keys import PeerId

log = structlog.get_logger("open4wd_node.webrtc")

NEGOTIATION_TIMEOUT_MS = 10_000
MAX_PENDING_OFFERS = 8


@dataclass(frozen=True)
class WebRTCSettings:
    """How a node's WebRTC links are made: the host addresses it offers (always explicit), its ICE servers
    (none unless given), the transport policy, and the bounds of a negotiation and of its channels."""

    hosts: HostAddresses
    ice_servers: tuple[IceServer, ...] = ()
    policy: IceTransportPolicy = IceTransportPolicy.ALL
    negotiation_timeout_ms: int = NEGOTIATION_TIMEOUT_MS
    max_remote_candidates: int = MAX_REMOTE_CANDIDATES
    max_pending_offers: int = MAX_PENDING_OFFERS
    max_message_bytes: int = 256 * 1024  # the reliable lane's largest body (a room link's)
    chunk_in_flight: int = 2
    chunk_deadline_ms: int = 10_000

    def configuration(self) -> RTCConfiguration:
        """aiortc's configuration: exactly these ICE servers (an empty list, never aiortc's default) and policy."""
        servers = [RTCIceServer(s.url, s.username, s.credential) for s in self.ice_servers]
        policy = RTCIceTransportPolicy.RELAY if self.policy == IceTransportPolicy.RELAY else RTCIceTransportPolicy.ALL
        return RTCConfiguration(iceServers=servers, iceTransportPolicy=policy)


@dataclass
class _Negotiation:
    """What the router hands one negotiation: its peer's signals, charged against its candidate budget."""

    peer: PeerId
    budget: CandidateBudget
    send: trio.MemorySendChannel[Sdp | IceCandidate]
    receive: trio.MemoryReceiveChannel[Sdp | IceCandidate]
    refused: PeerError | None = None
    carrier: WebRTCCarrier | None = None

    def refuse(self, error: PeerError) -> None:
        """End the negotiation with ``error``: no more of the peer's signals, its link refused."""
        self.refused = error
        self.send.close()
        if self.carrier is not None:
            self.carrier.refuse(error)


@dataclass
class _PendingOffer:
    offer: Sdp
    budget: CandidateBudget
    candidates: list[IceCandidate] = field(default_factory=list)
    refused: PeerError | None = None


class WebRTCEndpoint:
    """One node's WebRTC door in one signaling scope (made by ``webrtc_endpoint``)."""

    def __init__(self, signaling: Signaling, kind: LinkKind, settings: WebRTCSettings, bridge: AsyncioThread) -> None:
        self.signaling = signaling
        self.kind = kind
        self.settings = settings
        self.bridge = bridge  # the asyncio thread its links are made and closed on
        self.ignored = 0  # signals dropped: unsolicited, beyond the pending offers, from a refused peer
        self._negotiations: dict[str, _Negotiation] = {}
        self._offers: dict[PeerId, _PendingOffer] = {}
        self._offers_changed = trio.Event()
        self._claimed: set[str] = set()  # offers ``next_offer`` handed out, for ``accept`` or ``drop_offer``
        self._carriers: set[WebRTCCarrier] = set()

    @property
    def pending_offers(self) -> int:
        """Offers received and not yet taken by ``accept`` (at most ``max_pending_offers``)."""
        return len(self._offers)

    # ---- routing ---------------------------------------------------------------------------------

    async def route(self) -> None:
        """Read every signal and hand it to whoever waits for it (runs for the endpoint's life)."""
        while True:
            self._route(await self.signaling.receive())

    def _route(self, received: Signal) -> None:
        sender, signal = received.signer, received.message
        negotiation = self._negotiations.get(sender)
        if isinstance(signal, Sdp) and signal.kind == SdpKind.OFFER and negotiation is None:
            if sender in self._offers or len(self._offers) >= self.settings.max_pending_offers:
                self._ignore(sender, "offer", "an offer from this peer waits already, or too many offers wait")
                return
            self._offers[sender] = _PendingOffer(signal, CandidateBudget(self.settings.max_remote_candidates))
            self._offers_changed.set()
            return
        if negotiation is not None:
            if negotiation.refused is not None:
                self.ignored += 1
                return
            try:
                if isinstance(signal, IceCandidate):
                    negotiation.budget.take()
                negotiation.send.send_nowait(signal)
            except PeerError as exc:
                negotiation.refuse(exc)
            except trio.WouldBlock:  # more signals than the budget allows queued unread: a flood too
                negotiation.refuse(PeerError("ice-candidate-flood", "the peer sent signals faster than a "
                                             "negotiation reads them"))
            return
        pending = self._offers.get(sender)
        if pending is not None and isinstance(signal, IceCandidate) and pending.refused is None:
            try:
                pending.budget.take()
                pending.candidates.append(signal)
            except PeerError as exc:
                pending.refused = exc
            return
        self._ignore(sender, type(signal).__name__, "no negotiation with this peer expects it")

    def _ignore(self, sender: PeerId, what: str, why: str) -> None:
        self.ignored += 1
        log.debug("webrtc-signal-ignored", peer=sender, signal=what, reason=why)

    # ---- opening links ---------------------------------------------------------------------------

    async def connect(self, peer: PeerId) -> WebRTCCarrier:
        """Offer a link to ``peer`` and return it open and bound; ``LinkClosed`` with the code otherwise."""
        if peer == self.signaling.peer_id:
            raise LocalError("webrtc-self", "a node does not link to itself")
        return await self._open(peer, SdpRole.OFFERER, None)

    async def next_offer(self) -> PeerId:
        """The sender of the next offer waiting (claimed: only ``accept(sender)`` answers it, or
        ``drop_offer(sender)`` forgets it)."""
        while True:
            for sender in self._offers:
                if sender not in self._claimed:
                    self._claimed.add(sender)
                    return sender
            self._offers_changed = trio.Event()
            await self._offers_changed.wait()

    def drop_offer(self, sender: PeerId) -> None:
        """Forget ``sender``'s waiting offer unanswered (a door with no place for it)."""
        self._offers.pop(sender, None)
        self._claimed.discard(sender)

    async def accept(self, from_peer: PeerId | None = None) -> WebRTCCarrier:
        """Answer the next offer (only ``from_peer``'s, when given) and return the link open and bound;
        ``LinkClosed`` with the code when that negotiation fails (the next call takes the next offer)."""
        while True:
            for sender, pending in self._offers.items():
                if from_peer is None or sender == from_peer:
                    del self._offers[sender]
                    self._claimed.discard(sender)
                    return await self._open(sender, SdpRole.ANSWERER, pending)
            self._offers_changed = trio.Event()
            await self._offers_changed.wait()

    async def _open(self, peer: PeerId, role: SdpRole, pending: _PendingOffer | None) -> WebRTCCarrier:
        if peer in self._negotiations:
            raise LocalError("webrtc-busy", f"a negotiation with {peer} is under way")
        settings = self.settings
        budget = pending.budget if pending is not None else CandidateBudget(settings.max_remote_candidates)
        send, receive = trio.open_memory_channel[Sdp | IceCandidate](settings.max_remote_candidates + 4)
        negotiation = self._negotiations[peer] = _Negotiation(peer, budget, send, receive)
        deadline = trio.current_time() + settings.negotiation_timeout_ms / 1000
        carrier: WebRTCCarrier | None = None
        answered = role == SdpRole.ANSWERER
        try:
            with trio.move_on_at(deadline) as scope:
                if pending is not None:
                    if pending.refused is not None:
                        raise pending.refused
                    for early in pending.candidates:  # before any wait: the router queues the later ones behind them
                        negotiation.send.send_nowait(early)
                carrier = negotiation.carrier = await self.bridge.run(self._new_carrier)
                self._carriers = {c for c in self._carriers if c.closed is None}  # ended links are forgotten
                self._carriers.add(carrier)
                if negotiation.refused is not None:  # refused while the peer connection was made
                    raise negotiation.refused
                if pending is not None:
                    remote_fingerprint = await self._take_remote(carrier, pending.offer, budget)
                    local_fingerprint = await self._describe(carrier, SdpKind.ANSWER, peer)
                else:
                    local_fingerprint = await self._describe(carrier, SdpKind.OFFER, peer)
                    answer = await self._next_answer(negotiation)
                    answered = True
                    remote_fingerprint = await self._take_remote(carrier, answer, budget)
                failed: LinkClosed | PeerError | None = None
                async with trio.open_nursery() as nursery:  # the trickled candidates go in while the link opens
                    nursery.start_soon(self._add_trickled, carrier, negotiation)
                    try:
                        await carrier.wait_open()
                    except (LinkClosed, PeerError) as exc:  # raised outside the nursery, not inside a group
                        failed = exc
                    nursery.cancel_scope.cancel()
                if failed is not None:
                    raise failed
                if negotiation.refused is not None:
                    raise negotiation.refused
                me = self.signaling.peer_id
                offerer, answerer = (me, peer) if role == SdpRole.OFFERER else (peer, me)
                fingerprints = (local_fingerprint, remote_fingerprint) if role == SdpRole.OFFERER \
                    else (remote_fingerprint, local_fingerprint)
                carrier.bind(peer, webrtc_transcript(PROTOCOL_VERSION, self.signaling.scope, offerer, answerer,
                                                     *fingerprints), role)
                await carrier.measure()
                return carrier
            assert scope.cancelled_caught
            code = "webrtc-connect-timeout" if answered else "webrtc-answer-timeout"
            what = "the link did not open" if answered else f"{peer} sent no answer"
            raise LinkClosed(code, f"{what} within {settings.negotiation_timeout_ms} ms", by_peer=True)
        except PeerError as exc:
            if carrier is not None:
                await carrier.aclose(exc.code, exc.message)
            raise LinkClosed(exc.code, exc.message) from None
        except BaseException:
            if carrier is not None:
                with trio.CancelScope(shield=True):
                    await carrier.aclose("link-closed", "the negotiation ended")
            raise
        finally:
            del self._negotiations[peer]
            if carrier is not None and carrier.closed is not None:
                self._carriers.discard(carrier)

    async def _new_carrier(self) -> WebRTCCarrier:
        settings = self.settings
        pc = RTCPeerConnection(settings.configuration())
        plans = channel_plan(self.kind, settings.max_message_bytes)
        return WebRTCCarrier(pc, self.bridge, self.kind, plans, ChunkLimits(settings.max_message_bytes, settings.chunk_in_flight,
                                                               settings.chunk_deadline_ms))

    async def _describe(self, carrier: WebRTCCarrier, kind: SdpKind, peer: PeerId) -> str:
        """Make, check and send this side's description; its sha-256 fingerprint."""
        pc = carrier.pc

        async def describe() -> str:
            with gathering_on(self.settings.hosts):
                offer = await (pc.createOffer() if kind == SdpKind.OFFER else pc.createAnswer())
                await pc.setLocalDescription(offer)
            return str(pc.localDescription.sdp)

        sdp = await self.bridge.run(describe)
        candidates = sdp_candidates(sdp)
        if not candidates:
            relay = self.settings.policy == IceTransportPolicy.RELAY
            raise LinkClosed("ice-no-candidates", "no local ICE candidate was gathered: " + (
                "the TURN server refused this node's credentials or did not answer" if relay
                else "none of the allowed host addresses could be bound"))
        wrong = offered_outside(candidates, self.settings.hosts, self.settings.ice_servers)
        if wrong:
            raise LocalError("ice-candidate-not-allowed", "this node's description would offer "
                             f"{', '.join(f'{c.type} {c.address}' for c in wrong)}, outside the allowed host addresses "
                             "and ICE servers")
        fingerprint = dtls_fingerprint(sdp)
        await self.signaling.send(peer, Sdp(kind, bound_sdp(sdp)))
        return fingerprint

    async def _next_answer(self, negotiation: _Negotiation) -> Sdp:
        """The peer's answer; its candidates that come first wait in the channel for ``_add_trickled``."""
        early: list[IceCandidate] = []
        try:
            async for signal in negotiation.receive:
                if isinstance(signal, Sdp) and signal.kind == SdpKind.ANSWER:
                    for candidate in early:  # back in the queue, behind nothing: the budget counted them once
                        negotiation.send.send_nowait(candidate)
                    return signal
                if isinstance(signal, IceCandidate):
                    early.append(signal)
        except trio.EndOfChannel:
            pass
        if negotiation.refused is not None:
            raise negotiation.refused
        raise PeerError("webrtc-signal-unexpected", "the peer's signals ended before its answer")

    async def _take_remote(self, carrier: WebRTCCarrier, signal: Sdp, budget: CandidateBudget) -> str:
        """Check the peer's description and give it to aiortc; the peer's sha-256 fingerprint."""
        fingerprint = dtls_fingerprint(signal.sdp)
        budget.take(len(sdp_candidates(signal.sdp)))
        description = RTCSessionDescription(bound_sdp(signal.sdp), "offer" if signal.kind == SdpKind.OFFER else "answer")
        try:
            await self.bridge.run(carrier.pc.setRemoteDescription, description)
        except (ValueError, AttributeError, TypeError, KeyError) as exc:  # aiortc's parser on a malformed SDP
            raise PeerError("sdp-malformed", f"the peer's SDP was refused: {exc}") from None
        return fingerprint

    async def _add_trickled(self, carrier: WebRTCCarrier, negotiation: _Negotiation) -> None:
        """Give the peer's trickled candidates to ICE until the link opens (names are skipped)."""
        async for signal in negotiation.receive:
            if not isinstance(signal, IceCandidate):
                continue
            try:
                parsed = parse_candidate(signal.candidate)
            except PeerError as exc:
                negotiation.refuse(exc)
                return
            if not parsed.is_ip:
                continue
            candidate = candidate_from_sdp(signal.candidate.removeprefix("a=").removeprefix("candidate:"))
            candidate.sdpMid = signal.sdp_mid
            candidate.sdpMLineIndex = signal.sdp_mline_index if signal.sdp_mid is None else None
            if candidate.sdpMid is None and candidate.sdpMLineIndex is None:
                candidate.sdpMLineIndex = 0
            try:
                await self.bridge.run(carrier.pc.addIceCandidate, candidate)
            except ValueError as exc:  # no media line of that mid or index
                negotiation.refuse(PeerError("ice-candidate-malformed", f"a trickled candidate was refused: {exc}"))
                return

    async def aclose(self) -> None:
        """Close every link this endpoint opened that is still open."""
        for carrier in list(self._carriers):
            await carrier.aclose("link-closed", "the node closed its WebRTC links")
        self._carriers.clear()


@asynccontextmanager
async def webrtc_endpoint(signaling: Signaling, kind: LinkKind, settings: WebRTCSettings) -> AsyncIterator[WebRTCEndpoint]:
    """A ``WebRTCEndpoint`` for ``signaling``'s scope, routing its signals while the block runs; the
    asyncio bridge is opened if it is not; links still open at the end are closed."""
    async with asyncio_bridge() as bridge, trio.open_nursery() as nursery:
        endpoint = WebRTCEndpoint(signaling, kind, settings, bridge)
        nursery.start_soon(endpoint.route)
        try:
            yield endpoint
        finally:
            with trio.CancelScope(shield=True):
                await endpoint.aclose()
            nursery.cancel_scope.cancel()


def carrier_auth(carrier: WebRTCCarrier) -> LinkAuth:
    """Who is at the other end of an open, bound carrier: its PeerId, the WebRTC transcript, and this
    side's role (the offerer dials, the answerer listens)."""
    return LinkAuth(carrier.peer_id, carrier.transcript, DIALER if carrier.role == SdpRole.OFFERER else LISTENER)


def webrtc_link(carrier: WebRTCCarrier, *, expensive: frozenset[str] = frozenset(), limits: LinkLimits = ROOM_LIMITS,
                registry: dict[str, type[Message]] | None = None) -> Link:
    """The link over an open, bound WebRTC carrier (the link's rules as over TCP)."""
    return Link(carrier, carrier_auth(carrier), expensive=expensive, limits=limits, registry=registry)
