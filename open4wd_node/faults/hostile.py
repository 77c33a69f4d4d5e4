"""A hostile room member for the soak's ``hostile-ready`` profile: it declares Ready, again and again, with a
car every honest node refuses, and joins again whenever the host removes it.

It is the real member machine and room driver over a real link, with two things wrapped from outside:
its asset checks pass every car (``BlindAssets``: a node with another asset policy, or a hostile one,
would), and a task of its own declares Ready whenever the room state does not list it Ready (an honest
node declares a car the room refused only when its player says so). The car (``REFUSED_CAR``) puts a
tire in the motor slot, which every honest node refuses (``loadout-part-type-mismatch``).

    python -m open4wd_node.faults.hostile INVITATION --data-dir DIR [--seconds S] [--nickname NAME]

prints one JSON line per event (the room's, and ``hostile-declared``, ``hostile-rejoin``), and stops when the
room's match starts without it, when it was refused at the door ``MAX_DOOR_REFUSALS`` times in a row, or
after ``--seconds``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import trio

from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.assets.store import AssetStore
from open4wd_node.assets.transfer import AssetTransfer
from open4wd_node.net.link import LinkClosed
from open4wd_node.net.reach import dial_contact
from open4wd_node.room.driver import RoomDriver
from open4wd_node.runtime.build_info import own_version_info
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.events.sink import EventSink
from open4wd_node.events.vocabulary import HostileDeclared, HostileRejoin
from protocol.identity.keys import Identity, PeerId
from protocol.room.invitation import Invitation, parse_secret
from protocol.room.member import MemberRoom
from protocol.room.states import WAITING_PHASES, Role
from sim_core.assets.builtins import BUILTIN_REFS

REFUSED_CAR: dict[str, Any] = {
    "chassis": "builtin:chassis-01", "body": "builtin:body-01", "motor": "builtin:tire-01",
    "battery": "builtin:battery-01", "tires": {k: "builtin:tire-01" for k in ("FL", "FR", "RL", "RR")}, "rollers": {},
}
"""A car with a tire for a motor: every honest node refuses it (``loadout-part-type-mismatch``)."""
MAX_DOOR_REFUSALS = 3
"""Refusals at the door in a row after which it gives up (barred: its strikes still count)."""
DECLARE_EVERY_S = 1.0
REJOIN_AFTER_S = 1.0


class BlindAssets:
    """``NodeRoomAssets`` whose car checks pass every car (the rest delegates to ``inner``)."""

    def __init__(self, inner: NodeRoomAssets) -> None:
        self.inner = inner

    def check_rotation(self, peer: PeerId, rotation: list[Any]) -> None:
        """Every car passes."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Stubborn:
    """One stay in the room: the member on a link to the host, declaring Ready whenever it is not."""

    def __init__(self, identity: Identity, invite: Invitation, assets: BlindAssets, events: EventSink,
                 transfer: AssetTransfer, nickname: str) -> None:
        info = own_version_info(DEFAULTS.economy_config_version)
        member = MemberRoom(identity, invite.room_id, invite.host_peer_id, Role.PARTICIPANT, info, assets,
                            choose_car=lambda rounds: [REFUSED_CAR] * rounds, auto_ready=False, nickname=nickname)
        self.driver = RoomDriver(member, events, transfer)
        self.events = events
        self.declared = 0

    async def declare_whenever_not_ready(self) -> None:
        """Declare Ready whenever the room state does not list this node Ready (at most every
        ``DECLARE_EVERY_S``, so that the answer to the last declaration can arrive first)."""
        member = self.driver.member
        while True:
            await trio.sleep(DECLARE_EVERY_S)
            state = member.state
            me = next((m for m in state.members if m.peerId == member.me), None) if state is not None else None
            if state is None or me is None or me.ready or state.phase not in WAITING_PHASES or member.rotation is None:
                continue
            self.driver.from_member(member.declare_ready(self.driver.clock.now_ms()))
            self.declared += 1
            self.events.emit(HostileDeclared(self.declared))


async def hostile_member(data_dir: Path, invite_text: str, seconds: float, nickname: str, events: EventSink) -> int:
    """Stay in the room ``invite_text`` names, declaring the refused car, rejoining when removed (module
    docstring); returns how many times it declared Ready."""
    invite = Invitation.parse(invite_text)
    data_dir.mkdir(parents=True, exist_ok=True)
    identity = Identity.generate()  # one PeerId for every stay: the host counts its strikes by it
    store = AssetStore.in_data_dir(data_dir)
    inner = NodeRoomAssets(store, DEFAULTS)
    inner.prepare(BUILTIN_REFS)
    assets = BlindAssets(inner)
    transfer = AssetTransfer(store, events, servable=lambda ref: False)
    declared, refused_in_a_row = 0, 0
    with trio.move_on_after(seconds):
        while refused_in_a_row < MAX_DOOR_REFUSALS:
            stay = _Stubborn(identity, invite, assets, events, transfer, nickname)
            try:
                link = await dial_contact(invite.contact, identity, invite.host_peer_id)
            except (LinkClosed, OSError) as exc:
                events.emit(HostileRejoin(joined=False, reason=str(exc)))
                refused_in_a_row += 1
                await trio.sleep(REJOIN_AFTER_S)
                continue
            async with trio.open_nursery() as nursery:
                stay.driver._nursery = nursery
                member = stay.driver.member
                await link.send(member.join_request(link.transcript, parse_secret(invite.secret)))
                nursery.start_soon(stay.driver.run_member_link, link)
                nursery.start_soon(stay.driver.ticker)
                nursery.start_soon(stay.declare_whenever_not_ready)
                await stay.driver.done.wait()
                nursery.cancel_scope.cancel()
            declared += stay.declared
            if stay.driver.outcome.started is not None:
                return declared  # the match started with it in the roster: the host let it race
            refused_in_a_row = refused_in_a_row + 1 if stay.declared == 0 else 0
            events.emit(HostileRejoin(joined=stay.declared > 0, declared=declared))
            await trio.sleep(REJOIN_AFTER_S)
    return declared


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring): one JSON event a line, then its ``result``."""
    parser = argparse.ArgumentParser(prog="python -m open4wd_node.faults.hostile", description=__doc__.splitlines()[0])
    parser.add_argument("invitation")
    parser.add_argument("--data-dir", required=True, type=Path)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--nickname", default="hostile")
    args = parser.parse_args(argv)
    events = EventSink(as_json=True)
    declared = trio.run(hostile_member, args.data_dir, args.invitation, args.seconds, args.nickname, events)
    print(json.dumps({"event": "result", "outcome": "hostile-done", "declared": declared}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
