"""Every limit of a real relay on loopback refuses (or ends a circuit) with its code, and is counted."""

from __future__ import annotations

import pytest
import trio

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.transport import dial
from open4wd_node.relay.client import dial_relayed
from open4wd_node.relay.links import RELAY_LINK_LIMITS, RELAY_REGISTRY
from protocol.relay.limits import RelayLimits
from protocol.relay.messages import RelayIncoming, RelayReserve, RelayReserved
from protocol.relay.proof import sign_reservation
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.relay.helpers import ids, reserve, start_relay, wait_for

A, B, C, D = ids(4)
KIB = 1024


def exposition(relay):
    return relay.metrics.exposition().decode()


async def refused(code, call, *args, **kwargs):
    with pytest.raises(LinkClosed) as caught:
        await call(*args, **kwargs)
    assert (caught.value.code, caught.value.by_peer) == (code, True), caught.value.message
    return caught.value


async def raw_control(address, identity, proof=None):
    """A control link that reserves (with ``proof``, default the right one) and then answers nothing."""
    host, port = address.rsplit(":", 1)
    link = await dial(host, int(port), identity, limits=RELAY_LINK_LIMITS, registry=RELAY_REGISTRY)
    await link.send(RelayReserve(proof=proof if proof is not None else
                                 sign_reservation(identity, link.peer_id, link.transcript)))
    return link


async def test_connects_to_an_unreserved_peer_or_to_oneself_are_refused(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        await refused("peer-not-reserved", dial_relayed, address, A, B.peer_id)
        await reserve(nursery, B, [address])
        await refused("circuit-self", dial_relayed, address, B, B.peer_id)
        assert 'open4wd_relay_refusals_total{code="peer-not-reserved"} 1.0' in exposition(relay)
        assert 'open4wd_relay_refusals_total{code="circuit-self"} 1.0' in exposition(relay)
        nursery.cancel_scope.cancel()


async def test_a_proof_that_does_not_verify_is_refused(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        link = await raw_control(address, A, proof=b"\0" * 64)
        with pytest.raises(LinkClosed) as caught:
            await link.receive()
        assert caught.value.code == "reservation-refused"
        assert not relay.book.reservations
        nursery.cancel_scope.cancel()


async def test_reservations_in_total_and_per_source(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery, RelayLimits(max_reservations=2, max_reservations_per_source=1))
        first = await raw_control(address, A)
        assert isinstance(await first.receive(), RelayReserved)
        second = await raw_control(address, B)  # from 127.0.0.1 as well: over the source's share
        with pytest.raises(LinkClosed) as caught:
            await second.receive()
        assert caught.value.code == "source-limit"
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery, RelayLimits(max_reservations=1))
        first = await raw_control(address, A)
        assert isinstance(await first.receive(), RelayReserved)
        second = await raw_control(address, B)
        with pytest.raises(LinkClosed) as caught:
            await second.receive()
        assert caught.value.code == "relay-full"
        nursery.cancel_scope.cancel()


async def test_a_reservation_not_refreshed_expires_and_a_kept_one_does_not(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery, RelayLimits(reservation_ttl_ms=4_000))
        silent = await raw_control(address, A)
        assert isinstance(await silent.receive(), RelayReserved)
        _, keeper = await reserve(nursery, B, [address])  # refreshes at half the TTL
        with pytest.raises(LinkClosed) as caught:
            while True:
                await silent.receive()
        assert caught.value.code == "reservation-expired" and 3.9 < trio.current_time() < 5
        await trio.sleep(20)  # five TTLs
        assert set(relay.book.reservations) == {B.peer_id} and keeper.held == {address}
        nursery.cancel_scope.cancel()


async def test_circuits_per_peer_per_source_and_in_total(fast_clock):
    for limits, code in ((RelayLimits(max_circuits_per_peer=1), "circuit-limit"),
                         (RelayLimits(max_circuits_per_source=1), "source-limit"),
                         (RelayLimits(max_circuits=1), "relay-full")):
        async with trio.open_nursery() as nursery:
            relay, address = await start_relay(nursery, limits)
            await reserve(nursery, B, [address])
            await reserve(nursery, C, [address])
            first = await dial_relayed(address, A, B.peer_id)
            target = C.peer_id if code != "circuit-limit" else B.peer_id
            await refused(code, dial_relayed, address, D, target)
            await first.aclose()
            await wait_for(lambda relay=relay: not relay.book.circuits)
            second = await dial_relayed(address, D, target)  # the place is free again
            await second.aclose()
            assert f'open4wd_relay_refusals_total{{code="{code}"}} 1.0' in exposition(relay)
            nursery.cancel_scope.cancel()


async def test_allow_and_deny_lists(fast_clock):
    limits = RelayLimits(allow=frozenset({B.peer_id}), deny=frozenset({D.peer_id}))
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery, limits)
        await reserve(nursery, B, [address])
        not_allowed = await raw_control(address, C)
        with pytest.raises(LinkClosed) as caught:
            await not_allowed.receive()
        assert caught.value.code == "peer-denied"
        await refused("peer-denied", dial_relayed, address, D, B.peer_id)
        async with await dial_relayed(address, A, B.peer_id):  # anyone else may connect to a reserved peer
            pass
        nursery.cancel_scope.cancel()


async def test_a_reserved_peer_that_does_not_answer_times_the_circuit_out(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        silent = await raw_control(address, B)
        assert isinstance(await silent.receive(), RelayReserved)
        started = trio.current_time()
        await refused("circuit-timeout", dial_relayed, address, A, B.peer_id)
        assert 4.9 < trio.current_time() - started < 6
        incoming = await silent.receive()
        assert isinstance(incoming, RelayIncoming) and incoming.source == A.peer_id  # all the relay says
        assert not relay.book.circuits
        nursery.cancel_scope.cancel()


async def circuit_end(limits, exchange):
    """Run ``exchange(link)`` over a circuit under ``limits``; the reason the relay gave for its end."""
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery, limits)
        await reserve(nursery, B, [address])
        link = await dial_relayed(address, A, B.peer_id)
        with pytest.raises(LinkClosed) as caught:
            await exchange(link)
        assert caught.value.code in ("link-eof", "link-broken")  # the relay cannot tell an end why: it cuts
        await wait_for(lambda: not relay.book.circuits)
        ends = [line for line in exposition(relay).splitlines()
                if line.startswith("open4wd_relay_circuit_ends_total") and not line.endswith(" 0.0")]
        nursery.cancel_scope.cancel()
    return ends


async def talk(link):
    while True:
        await link.send(VersionRequest(sender="x" * 1000))
        await link.receive()


async def test_the_byte_budget_ends_a_circuit(fast_clock):
    ends = await circuit_end(RelayLimits(circuit_bytes=20 * KIB), talk)
    assert ends == ['open4wd_relay_circuit_ends_total{reason="circuit-bytes"} 1.0']


async def test_the_duration_ends_a_circuit(fast_clock):
    started = []

    async def keep_talking(link):
        started.append(trio.current_time())
        while True:
            await link.send(VersionRequest(sender="x"))
            await link.receive()
            await trio.sleep(0.5)

    ends = await circuit_end(RelayLimits(circuit_duration_ms=3_000), keep_talking)
    assert ends == ['open4wd_relay_circuit_ends_total{reason="circuit-duration"} 1.0']


async def test_an_idle_circuit_is_ended(fast_clock):
    async def say_nothing(link):
        await link.receive()  # pings come every 3 s: an idle timeout of 2 s ends the circuit first

    ends = await circuit_end(RelayLimits(idle_timeout_ms=2_000), say_nothing)
    assert ends == ['open4wd_relay_circuit_ends_total{reason="circuit-idle"} 1.0']


@pytest.mark.parametrize("limits", [
    RelayLimits(circuit_bytes_per_second=64 * KIB, circuit_burst_bytes=64 * KIB),
    RelayLimits(total_bytes_per_second=64 * KIB),
])
async def test_bandwidth_is_paced_per_circuit_and_in_total(fast_clock, limits):
    """512 KiB each way at 64 KiB/s take at least 7 s (of trio's clock: the relay waits, it does not drop)."""
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery, limits)
        echo, _ = await reserve(nursery, B, [address])
        link = await dial_relayed(address, A, B.peer_id)
        await link.send(VersionRequest(sender="first"))  # a first message is small (the door's 4 KiB)
        await link.receive()
        started = trio.current_time()
        for _ in range(8):
            await link.send(VersionRequest(sender="y" * (64 * KIB - 100)))
            await link.receive()
        elapsed = trio.current_time() - started
        assert elapsed >= 7, elapsed
        assert link.closed is None and echo.ended == []
        await link.aclose()
        nursery.cancel_scope.cancel()
