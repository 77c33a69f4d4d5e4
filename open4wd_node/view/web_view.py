"""``--web HOST:PORT``: where the live page is served, who may be served, and a node's events feeding it.

Loopback only unless the user says otherwise (``--web-public``): the page has no authentication and no
encryption, and it shows the race to whoever reaches the address, beyond the players and spectators the
room admitted by invitation. So an address that is not loopback (a LAN address, ``0.0.0.0``) is refused
with ``web-not-loopback`` unless ``--web-public`` is given.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from open4wd_node.runtime.addresses import Address
from open4wd_node.runtime.errors import UserError
from open4wd_node.events.sink import EventSink
from open4wd_node.events.vocabulary import LivePage, NodeEvent
from open4wd_node.view.live_model import LiveBoard
from open4wd_node.view.live_render import race_header
from open4wd_node.view.live_web import LiveSource, LiveState, LiveWeb, is_loopback
from open4wd_node.events.round_watch import RoundWatch
from protocol.room.member import MemberRoom
from protocol.identity.keys import PeerId


@dataclass(frozen=True)
class WebAddress:
    """Where to serve the live page, and whether the user allowed an address beyond loopback."""

    host: str
    port: int
    public: bool = False


def web_address(address: Address, public: bool) -> WebAddress:
    """``--web`` checked against ``--web-public``: ``UserError`` ``web-not-loopback`` for an address other
    machines can reach when the user did not say so."""
    if not public and not is_loopback(address.host):
        raise UserError("web-not-loopback",
                        f"--web {address} would show the race to every machine that reaches it, without authentication "
                        "or encryption; give a loopback address (127.0.0.1:PORT), or add --web-public if that is meant")
    return WebAddress(address.host, address.port, public)


@asynccontextmanager
async def serving(address: WebAddress, source: LiveSource, title: str, announce: Callable[[str], None]) -> AsyncIterator[LiveWeb]:
    """Serve ``source`` at ``address`` while the body runs; ``announce`` gets the page's URL once it
    listens. ``UserError`` ``web-listen-failed`` when the address cannot be bound."""
    web = LiveWeb(source, title, allow_any_host=address.public)
    async with trio.open_nursery() as nursery:
        try:
            port = await nursery.start(web.serve, address.host, address.port)
        except OSError as exc:
            raise UserError("web-listen-failed", f"--web {Address(address.host, address.port)}: {exc.strerror or exc}") from None
        announce(f"http://{Address(address.host, port)}/")
        try:
            yield web
        finally:
            nursery.cancel_scope.cancel()


def board_state(board: LiveBoard) -> LiveState | None:
    """A node's live board as the live page shows it: the race picture under the race header."""
    race = board.race()
    if race is None or race.picture is None:
        return None
    return LiveState(race.picture, race_header(race))


class WebTee(EventSink):
    """A node's events as its own sink shows them, and through a ``LiveBoard`` on the live page."""

    def __init__(self, inner: EventSink, address: WebAddress, me: PeerId) -> None:
        super().__init__(as_json=inner.as_json, stream=inner.stream)
        self.inner, self.address = inner, address
        self.board = LiveBoard(me)

    def emit(self, event: NodeEvent) -> None:
        """Shown by the inner sink; the board learns from it."""
        self.board.on_event(event.EVENT, event.data())
        self.inner.emit(event)

    def room_changed(self, member: MemberRoom) -> None:
        """Both views show this room."""
        self.board.room_changed(member)
        self.inner.room_changed(member)

    def watch_round(self, watch: RoundWatch) -> None:
        """Both views show this round."""
        self.board.watch_round(watch)
        self.inner.watch_round(watch)

    @asynccontextmanager
    async def showing(self) -> AsyncIterator[None]:
        """The inner sink's view, and the live page served meanwhile (its URL told as ``live-page``)."""
        async with self.inner.showing(), serving(self.address, lambda: board_state(self.board), "open4wd-node: live race",
                                                 lambda url: self.emit(LivePage(url))):
            yield
