"""Dialling a contact: direct first, a relay within 2 s when the direct address does not answer, at once
when it refuses; a node whose direct address is a black hole is still joined and raced through its relay."""

from __future__ import annotations

import pytest
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.relay.reach import dial_contact
from open4wd_node.runtime.addresses import Address, Advertise
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.race.nodes import race, short_track
from tests.open4wd_node.relay.helpers import ids, reserve, start_relay
from tests.open4wd_node.relay.test_relayed_races import agreed

A, B = ids(2)
SHORT = short_track(8.0)


async def black_hole(nursery):
    """An address that accepts TCP connections and never says a word (a NAT or firewall that drops)."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    held = []

    async def hold(stream):
        held.append(stream)
        await trio.sleep_forever()

    nursery.start_soon(trio.serve_listeners, hold, listeners)
    return Address("127.0.0.1", listeners[0].socket.getsockname()[1])


async def test_a_silent_direct_address_falls_back_to_the_relay_after_two_seconds(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        await reserve(nursery, B, [address])
        silent = await black_hole(nursery)
        started = trio.current_time()
        link = await dial_contact(f"{silent} relay={address}", A, B.peer_id)
        assert 2.0 <= trio.current_time() - started < 2.5
        await link.send(VersionRequest(sender="via"))
        assert await link.receive() == VersionRequest(sender="echo:via")
        assert link.address == f"127.0.0.1:{address.rsplit(':', 1)[1]}"  # the relay's end of the circuit
        nursery.cancel_scope.cancel()


async def test_a_refused_direct_address_falls_back_at_once_and_direct_nodes_never_use_relays(fast_clock):
    async with trio.open_nursery() as nursery:
        closed = await black_hole(nursery)
        nursery.cancel_scope.cancel()  # nothing listens there any more: a connection is refused
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        await reserve(nursery, B, [address])
        started = trio.current_time()
        link = await dial_contact(f"{closed} relay={address}", A, B.peer_id)
        assert trio.current_time() - started < 0.5
        await link.aclose()
        with pytest.raises(LinkClosed) as caught:
            await dial_contact(f"{closed} relay={address}", A, B.peer_id, use_relays=False)
        assert caught.value.code == "dial-failed"
        with pytest.raises(LinkClosed) as caught:
            await dial_contact(f"relay={address}", A, B.peer_id, use_relays=False)
        assert caught.value.code == "contact-invalid" and "only through relays" in caught.value.message
        with pytest.raises(LinkClosed) as caught:  # every route failed: the message names each
            await dial_contact(f"{closed} relay={address}", A, A.peer_id)
        assert caught.value.code == "dial-failed" and "relay " in caught.value.message
        nursery.cancel_scope.cancel()


async def test_a_host_whose_advertised_address_is_a_black_hole_is_joined_and_raced_through_its_relay(
        tmp_path, fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        silent = await black_hole(nursery)
        reach = {i: ("auto", (address,)) for i in range(3)}
        recorders, codes = await race(tmp_path, 3, track_bytes=SHORT, reach=reach,
                                      advertise={0: Advertise(silent.host, silent.port)})
        agreed(recorders, codes, 3)
        invite = recorders[0].of("room-created")[0]["invite"]
        assert invite.startswith(f"open4wd://{silent}/") and f"&relay={address}#" in invite
        joined = [rec.first_at["joined"] - recorders[0].first_at["room-created"]
                  for rec in recorders[1:] if "joined" in rec.first_at]
        assert joined and max(joined) < 2.5, joined  # direct first, the relay 2 s later
        nursery.cancel_scope.cancel()

