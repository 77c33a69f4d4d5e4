"""Hosting and joining a room over real TCP, up to ``match-start`` (issue: Rooms).

``host_room`` listens, admits members through ``HostRoom`` and takes its own seat through a
``MemberRoom``; ``join_room`` dials the host named by an invitation (authenticating it by PeerId) and
proves the invitation secret over the link transcript. Both return the verified ``LockedStart``.
Invitations and the room's member list carry the listener's advertised address, never a wildcard.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio

from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.transfer import AssetTransfer
from open4wd_node.runtime.blocking import run_blocking
from open4wd_node.runtime.build_info import own_version_info
from open4wd_node.assets.cars import CarChoice
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.errors import UserError
from open4wd_node.events.sink import EventSink
from open4wd_node.net.link import LinkClosed
from open4wd_node.room.notice_board import NoticeBoard
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.net.listener import NodeListener
from open4wd_node.room.driver import RoomDriver, RoomOutcome, SuccessionPlan, read_player_commands
from open4wd_node.net.transport import BUSY_RETRY_S
from open4wd_node.net.reach import dial_contact
from protocol.signaling.scope import ROOM_PREFIX
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation, new_room_id, new_secret, parse_secret
from protocol.room.config import DURATION_DEFAULT_S, MatchConfig, RoomLimits
from protocol.room.host import HostRoom
from protocol.room.member import MemberRoom
from protocol.room.messages import EXPENSIVE_TYPES, JoinRequest
from protocol.room.states import Departure, Role
from protocol.identity.keys import PeerId
from sim_core.assets.builtins import BUILTIN_REFS
from open4wd_node.events.vocabulary import RoomCreated

START_FLUSH_S = 1.0


@dataclass(frozen=True)
class HostOptions:
    """What room ``host`` opens (track, rounds, laps, seats) and how its own seat behaves."""

    track: str = "builtin:track-02"
    rounds: int = 1
    laps: int = 3
    time_limit_s: int = DURATION_DEFAULT_S
    min_players: int = 2
    max_players: int = 8
    spectators: int = 0
    auto_ready: bool = False
    nickname: str = "host"
    interactive: bool = False  # read ready / cancel / leave from stdin


@dataclass(frozen=True)
class JoinOptions:
    """How ``join`` takes its seat: as a spectator or a participant, ready at once or when told."""

    spectate: bool = False
    auto_ready: bool = False
    nickname: str = "player"
    interactive: bool = False


async def _room_assets(ctx: NodeContext) -> tuple[NodeRoomAssets, AssetStore]:
    """The room's asset view with every built-in admitted ahead, off the event loop: the room checks
    peers' cars synchronously when their messages arrive, and then find the built-ins ready."""
    store = AssetStore.in_data_dir(ctx.data_dir)
    assets = NodeRoomAssets(store, ctx.config)
    await run_blocking(assets.prepare, BUILTIN_REFS)
    return assets, store


def _check_own_car(assets: NodeRoomAssets, identity: Identity, car: CarChoice) -> set[str]:
    """Refuse a car that cannot race before opening anything; returns the refs this node may serve."""
    try:
        assets.check_rotation(identity.peer_id, list(car.cars))
        return set(assets.rotation_refs(list(car.cars)))
    except ProtocolError as exc:
        raise UserError(exc.code, f"your car cannot race: {exc.message}") from None


async def _drive(
    driver: RoomDriver, start: Callable[[trio.Nursery], Awaitable[None]], interactive: bool, listener: NodeListener
) -> RoomOutcome:
    """Run the room until it ends, then close every room link this node holds (to its host, to its members)
    with ``room-ended``, in the listener's background: the race starts at once, and no peer is left to find
    an unused link by its timeout."""
    try:
        async with trio.open_nursery() as nursery:
            driver._nursery = nursery
            await start(nursery)
            nursery.start_soon(driver.ticker)
            if interactive:
                nursery.start_soon(read_player_commands, driver)
            await driver.done.wait()
            await driver.flush(START_FLUSH_S)  # let the last messages (match-start) leave the outboxes
            nursery.cancel_scope.cancel()
    finally:
        listener.remove_handler(JoinRequest)
        await listener.close_links(driver.links(), Departure.ROOM_ENDED, "the room ended")
    return driver.outcome


async def host_room(
    ctx: NodeContext, identity: Identity, options: HostOptions, car: CarChoice, events: EventSink, listener: NodeListener
) -> RoomOutcome:
    """Host a room on ``listener`` (already serving) until the match starts or the room ends."""
    assets, store = await _room_assets(ctx)
    try:
        config = MatchConfig.uniform(options.track, options.rounds, options.laps, options.time_limit_s)
        digests = await run_blocking(assets.track_digests, config)
    except ProtocolError as exc:
        raise UserError("room-bad-config", exc.message) from None
    player_max = min(assets.resolve(r.track_ref).manifest.get("player_max", 8) for r in config.rounds)
    try:
        limits = RoomLimits(options.min_players, min(options.max_players, player_max), options.spectators)
    except ProtocolError as exc:
        raise UserError("room-bad-config", f"{exc.message} (the tracks allow at most {player_max} players)") from None
    car.rotation(options.rounds)
    own_refs = await run_blocking(_check_own_car, assets, identity, car)
    secrets = {"participant": new_secret(), "spectator": new_secret() if options.spectators > 0 else None}
    room_id = new_room_id()
    info = own_version_info(ctx.config.economy_config_version)
    member = MemberRoom(identity, room_id, identity.peer_id, Role.PARTICIPANT, info, assets, choose_car=car.rotation,
                        auto_ready=options.auto_ready, nickname=options.nickname)
    board = NoticeBoard(assets, events)
    servable = own_refs | {r.track_ref for r in config.rounds}  # members fetch the tracks from their host
    transfer = AssetTransfer(store, events, servable=servable.__contains__)

    async def start(nursery: trio.Nursery) -> None:
        await listener.enter_scope(ROOM_PREFIX + room_id)
        direct = listener.advertised.address if listener.advertised else None
        listener.add_handler(JoinRequest, driver.accept_join)
        now = driver.clock.now_ms()
        host = HostRoom(identity, room_id, config, limits, {k: parse_secret(v) if v else None for k, v in secrets.items()},
                        digests, now, nickname=options.nickname, listen=listener.announced)
        driver.host = host
        invites = {
            role: str(Invitation(direct.host if direct else "", direct.port if direct else 0, room_id, identity.peer_id, role,
                                 secret, listener.contact.signals))
            for role, secret in secrets.items() if secret
        }
        listener.report_advertised(events)
        events.emit(RoomCreated(room_id=room_id, invite=invites["participant"], invites=invites,
                    host=identity.peer_id, listen=str(listener.address) if listener.address else "",
                    advertise=listener.announced))
        driver.from_member(member.receive(identity.peer_id, host.state_message(), now))

    driver = RoomDriver(member, events, transfer, on_notices=board.refresh)
    return await _drive(driver, start, options.interactive, listener)


async def join_room(
    ctx: NodeContext, identity: Identity, invite: Invitation, options: JoinOptions, car: CarChoice, events: EventSink,
    listener: NodeListener,
) -> RoomOutcome:
    """Join the room of ``invite``; ``listener`` (already serving) takes links if this node must succeed the host."""
    role = Role.SPECTATOR if options.spectate else Role.PARTICIPANT
    if invite.role != role:
        raise UserError("invitation-role", f"this invitation is for a {invite.role}; "
                        + ("drop --spectate" if invite.role == "participant" else "add --spectate"))
    assets, store = await _room_assets(ctx)
    own_refs = await run_blocking(_check_own_car, assets, identity, car) if role == "participant" else set()
    info = own_version_info(ctx.config.economy_config_version)
    choose_car = car.rotation if role == "participant" else None

    def new_member(host_peer: PeerId, listen: str = "") -> MemberRoom:
        return MemberRoom(identity, invite.room_id, host_peer, role, info, assets, choose_car=choose_car,
                          auto_ready=options.auto_ready, nickname=options.nickname, listen=listen)

    transfer = AssetTransfer(store, events, servable=own_refs.__contains__)
    await listener.enter_scope(invite.scope, invite.signals)
    try:
        link = await dial_contact(invite.contact, identity, invite.host_peer_id,
                                  expensive=EXPENSIVE_TYPES, busy_retry_s=BUSY_RETRY_S, webrtc=listener.webrtc,
                                  report=listener.report_link)
    except LinkClosed as exc:
        raise UserError(exc.code, exc.message) from None
    board = NoticeBoard(assets, events)
    driver = RoomDriver(new_member(invite.host_peer_id), events, transfer, on_notices=board.refresh)

    async def start(nursery: trio.Nursery) -> None:
        listen = ""
        if role == "participant":
            listener.report_advertised(events, invite.host)
            listen = listener.announced
            listener.add_handler(JoinRequest, driver.accept_join)
            driver.succession = SuccessionPlan(identity, parse_secret(invite.secret), listen,
                                               lambda host_peer: new_member(host_peer, listen), listener.webrtc)
        driver.member = new_member(invite.host_peer_id, listen)
        await link.send(driver.member.join_request(link.transcript, parse_secret(invite.secret)))
        nursery.start_soon(driver.run_member_link, link)

    return await _drive(driver, start, options.interactive, listener)
