"""Reservations and circuits through a real relay on loopback: end-to-end Noise, what the relay learns."""

import trio

from open4wd_node.relay.client import dial_relayed
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.relay.helpers import RELAY_ID, ids, reserve, start_relay, wait_for

A, B = ids(2)


async def test_a_circuit_carries_an_end_to_end_link(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        echo, keeper = await reserve(nursery, B, [address])
        assert keeper.held == {address}
        assert set(relay.book.reservations) == {B.peer_id}
        link = await dial_relayed(address, A, B.peer_id)
        assert link.peer_id == B.peer_id  # authenticated end to end, not the relay
        await link.send(VersionRequest(sender="hello"))
        assert await link.receive() == VersionRequest(sender="echo:hello")
        assert echo.links[0].peer_id == A.peer_id
        assert echo.links[0].transcript == link.transcript  # one Noise session, end to end
        assert len(relay.book.circuits) == 1
        await link.aclose()
        await wait_for(lambda: not relay.book.circuits)
        exposition = relay.metrics.exposition().decode()
        assert "open4wd_relay_circuits_total 1.0" in exposition
        assert 'open4wd_relay_circuit_ends_total{reason="closed"} 1.0' in exposition
        nursery.cancel_scope.cancel()
    assert RELAY_ID.peer_id != B.peer_id
