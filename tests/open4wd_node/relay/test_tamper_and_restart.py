"""A relay cannot alter what it carries (the ends close with ``link-tampered`` and recover), and a relay
that goes away mid-race is replaced within the reconnect rules."""

from __future__ import annotations

import pytest
import structlog
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.relay.client import dial_relayed
from open4wd_node.relay.server import RelayServer
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.race.nodes import race, short_track
from tests.open4wd_node.relay.helpers import RELAY_ID, TamperingRelay, ids, reserve
from tests.open4wd_node.relay.test_relayed_races import agreed

A, B = ids(2)


async def test_a_byte_altered_by_the_relay_closes_the_link_as_tampered_at_both_ends(fast_clock):
    async with trio.open_nursery() as nursery:
        relay = TamperingRelay(RELAY_ID, offset=2_000)
        address = str(await nursery.start(relay.run, "127.0.0.1", 0))
        echo, _ = await reserve(nursery, B, [address])
        link = await dial_relayed(address, A, B.peer_id)  # the handshake is well before byte 2,000
        with pytest.raises(LinkClosed) as caught:
            while True:
                await link.send(VersionRequest(sender="z" * 300))
                await link.receive()
        assert (caught.value.code, caught.value.by_peer) == ("link-tampered", True)  # told by the far end, sealed
        assert echo.ended == ["link-tampered"] and relay.flips[0].flipped
        again = await dial_relayed(address, A, B.peer_id)  # recovery: a new circuit, carried faithfully
        await again.send(VersionRequest(sender="again"))
        assert await again.receive() == VersionRequest(sender="echo:again")
        nursery.cancel_scope.cancel()


async def test_a_race_whose_relay_alters_a_byte_recovers_and_agrees(tmp_path, fast_clock):
    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            relay = TamperingRelay(RELAY_ID, offset=10_000, which=2)  # after the two joins: a race-mesh circuit
            address = str(await nursery.start(relay.run, "127.0.0.1", 0))
            recorders, codes = await race(tmp_path, 3, track_bytes=short_track(30.0),
                                          reach={i: ("relay", (address,)) for i in range(3)})
            nursery.cancel_scope.cancel()
    agreed(recorders, codes, 3)
    tampered = [e for e in logs if e["event"] == "link-tampered"]
    assert relay.flips[0].flipped and len(tampered) == 1, tampered
    ended = [e for e in logs if e["event"] == "mesh-link-ended" and e["code"] == "link-tampered"]
    assert len(ended) == 2  # both ends of that pair: one saw the bad frame, the other was told (sealed)


async def restarted_relay_race(tmp_path, n, reach, down_s=2.0, **options):
    """A race during which the relay dies (every circuit and reservation with it) a second after every node
    started racing, and comes back on the same port ``down_s`` later; returns the recorders, the exit codes
    and the second relay."""
    watched = {}
    restarted = []

    async def relay_life(task_status=trio.TASK_STATUS_IGNORED):
        first = RelayServer(RELAY_ID)
        with trio.CancelScope() as life:
            async with trio.open_nursery() as inner:
                address = await inner.start(first.run, "127.0.0.1", 0)
                task_status.started(address)
                while not (watched.get("recorders") and all(rec.of("race-start") for rec in watched["recorders"])):
                    await trio.sleep(0.1)
                await trio.sleep(1.0)
                life.cancel()
        await trio.sleep(down_s)
        second = RelayServer(RELAY_ID)
        restarted.append(second)
        await second.run("127.0.0.1", address.port)

    async with trio.open_nursery() as nursery:
        address = str(await nursery.start(relay_life))
        recorders, codes = await race(tmp_path, n, recorders_out=watched, reach=reach(address), **options)
        nursery.cancel_scope.cancel()
    return recorders, codes, restarted[0]


async def test_a_relay_restarted_mid_race_reconnects_the_relayed_node_within_the_window(tmp_path, fast_clock):
    """Nodes 0-2 listen directly (and reserve too); node 3 is reachable only through the relay. The relay's
    restart cuts node 3's relayed links; the others keep their direct links, node 3 comes back through the
    new relay within the reconnect window, and the race finishes."""
    reach = lambda address: {i: ("auto", (address,)) for i in range(3)} | {3: ("relay", (address,))}  # noqa: E731
    recorders, codes, second = await restarted_relay_race(tmp_path, 4, reach, track_bytes=short_track(20.0))
    agreed(recorders, codes, 4)
    assert second.metrics.circuits._value.get() >= 1  # node 3's links came back through the new relay
    lost = {e["peer"] for rec in recorders[:3] for e in rec.of("peer-lost")}
    assert lost <= {recorders[3].of("result")[0]["peer"]}  # only the relayed node was ever lost


async def test_a_race_that_loses_its_only_relay_everywhere_ends_by_the_partition_rules(tmp_path, fast_clock):
    """Every link through one relay: its restart cuts every pair at once, so each node is alone, a minority
    of the roster; the race layer's partition guard ends the race the same way on every node (it never hangs,
    and no node claims a result)."""
    reach = lambda address: {i: ("relay", (address,)) for i in range(3)}  # noqa: E731
    recorders, codes, second = await restarted_relay_race(tmp_path, 3, reach, track_bytes=short_track(40.0))
    outcomes = {rec.of("result")[0]["outcome"] for rec in recorders}
    assert outcomes == {"partition-void"} and codes == {0: 1, 1: 1, 2: 1}
    assert second.metrics.circuits._value.get() >= 1  # the links did come back through the new relay


async def test_a_relay_lost_for_good_mid_race_is_replaced_by_the_nodes_other_relay(tmp_path, fast_clock):
    """Node 3 is reachable only through relays A and B (A first). A dies a second into the race and never
    comes back: the pairs that reached node 3 through A re-dial its contact and get through B."""
    watched = {}
    backup = RelayServer(ids(1, start=10)[0])

    async def doomed(task_status=trio.TASK_STATUS_IGNORED):
        relay = RelayServer(RELAY_ID)
        async with trio.open_nursery() as inner:
            task_status.started(await inner.start(relay.run, "127.0.0.1", 0))
            while not (watched.get("recorders") and all(rec.of("race-start") for rec in watched["recorders"])):
                await trio.sleep(0.1)
            await trio.sleep(1.0)
            inner.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        first = str(await nursery.start(doomed))
        second = str(await nursery.start(backup.run, "127.0.0.1", 0))
        reach = {i: ("auto", ()) for i in range(3)} | {3: ("relay", (first, second))}
        recorders, codes = await race(tmp_path, 4, track_bytes=short_track(20.0), recorders_out=watched, reach=reach)
        nursery.cancel_scope.cancel()
    agreed(recorders, codes, 4)
    assert backup.metrics.circuits._value.get() >= 1  # node 3's links came back through relay B
