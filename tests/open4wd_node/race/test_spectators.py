"""The source's spectator door and queues over real loopback links: a spectator that does not keep up is
dropped (``spectator-too-slow``) by a call that never waits; a refused spectator is told why."""

from __future__ import annotations

import pytest
import structlog.testing
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.listener import NodeListener
from open4wd_node.net.transport import dial
from open4wd_node.race.spectators import QUEUE_MESSAGES, VIEWER_LIMITS, SpectatorHub
from protocol.actions import Send
from protocol.identity.keys import Identity
from protocol.spectate.messages import SPECTATE_LINK, ModeSelect, SpectateInputs
from protocol.spectate.source import SpectateSource

MATCH = "ab" * 32
RACER, WATCHER, STRANGER = (Identity(bytes([i]) * 32) for i in (1, 100, 101))


async def serving(nursery: trio.Nursery) -> tuple[SpectatorHub, int]:
    listener = NodeListener(RACER)
    address = await nursery.start(listener.run, "127.0.0.1", 0)
    hub = SpectatorHub(SpectateSource(MATCH, [WATCHER.peer_id], capacity=4), listener)
    await nursery.start(hub.run)
    return hub, address.port


async def subscribe(port: int, identity: Identity, select: ModeSelect):
    link = await dial("127.0.0.1", port, identity, expected_peer=RACER.peer_id, limits=VIEWER_LIMITS)
    await link.send(select)
    return link


async def test_a_spectator_that_does_not_read_is_dropped_without_waiting(autojump_clock) -> None:
    async with trio.open_nursery() as nursery:
        hub, port = await serving(nursery)
        link = await subscribe(port, WATCHER, ModeSelect("replay", MATCH, 1))
        await trio.sleep(1)
        assert hub.source.subscribers == {WATCHER.peer_id: 1}
        frame = SpectateInputs(1, 0, 5, [])
        hub.deliver([Send(WATCHER.peer_id, frame)] * (QUEUE_MESSAGES + 2))  # synchronous: the writer took one at most
        assert hub.dropped == {"spectator-too-slow": 1} and hub.source.subscribers == {}
        link.repurpose(SPECTATE_LINK, VIEWER_LIMITS)
        with pytest.raises(LinkClosed) as closed:
            while True:
                await link.receive()
        assert closed.value.code == "spectator-too-slow"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(("identity", "select", "code"), [
    (STRANGER, ModeSelect("replay", MATCH, 1), "spectate-not-admitted"),
    (WATCHER, ModeSelect("replay", "cd" * 32, 1), "spectate-wrong-match"),
    (WATCHER, ModeSelect("fallback", MATCH, 1), "spectate-mode-unsupported"),
])
async def test_a_refused_spectator_is_told_why(autojump_clock, identity, select, code) -> None:
    async with trio.open_nursery() as nursery:
        hub, port = await serving(nursery)
        link = await subscribe(port, identity, select)
        with pytest.raises(LinkClosed) as closed:
            await link.receive()
        assert closed.value.code == code and hub.source.subscribers == {}
        nursery.cancel_scope.cancel()


async def test_a_spectator_link_that_ends_after_the_hub_stopped_is_no_internal_error(autojump_clock) -> None:
    """Found by the soak's spectators profile: a node whose race was over (its hub stopped) while a
    spectator link was still open logged ``internal-error`` with a traceback when that link ended, since
    the link's own task asked the stopped hub to close it."""
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            listener = NodeListener(RACER)
            address = await nursery.start(listener.run, "127.0.0.1", 0)
            hub = SpectatorHub(SpectateSource(MATCH, [WATCHER.peer_id], capacity=4), listener)
            async with trio.open_nursery() as hub_tasks:
                await hub_tasks.start(hub.run)
                link = await subscribe(address.port, WATCHER, ModeSelect("replay", MATCH, 1))
                await trio.sleep(1)
                assert hub.source.subscribers == {WATCHER.peer_id: 1}
                hub_tasks.cancel_scope.cancel()  # the race is over: the hub stops, the link is still open
            await link.aclose()
            await trio.sleep(1)
            nursery.cancel_scope.cancel()
    assert [entry for entry in logs if entry["log_level"] == "error"] == []
    assert hub.source.subscribers == {} and hub.links == {}
