"""What an operator runs: the metrics endpoint, the drain, and a relay that survives junk traffic."""

from __future__ import annotations

import msgpack
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from open4wd_node.net.admission import ListenerLimits
from open4wd_node.net.link import LinkClosed
from open4wd_node.net.stream_carrier import open_link
from open4wd_node.relay.client import dial_relayed
from open4wd_node.relay.metrics import serve_metrics
from protocol.encoding.wire import HEADER
from protocol.link.handshake import DIALER
from protocol.versions.collection import VersionRequest
from tests.open4wd_node.net.peers import RawPeer
from tests.open4wd_node.relay.helpers import RELAY_ID, ids, reserve, start_relay, wait_for

A, B, C = ids(3)
SERIES = ("open4wd_relay_reservations", "open4wd_relay_circuits_active", "open4wd_relay_circuits_total",
          "open4wd_relay_bytes_forwarded_total", "open4wd_relay_refusals_total", "open4wd_relay_circuit_ends_total",
          "open4wd_relay_forwarding_delay_seconds_bucket", "open4wd_relay_reservations_granted_total",
          "open4wd_relay_draining")


async def http_get(address, path: str, method: str = "GET") -> tuple[int, str]:
    status, _, body = await http_exchange(address, path, method)
    return status, body


async def http_exchange(address, path: str, method: str) -> tuple[int, dict[str, str], str]:
    stream = await trio.open_tcp_stream(address.host, address.port)
    await stream.send_all(f"{method} {path} HTTP/1.0\r\nHost: relay\r\n\r\n".encode())
    data = b""
    while chunk := await stream.receive_some(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
    return int(status_line.split()[1]), headers, body.decode()


async def test_the_metrics_endpoint_serves_the_documented_series_and_health(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        metrics = await nursery.start(serve_metrics, relay.metrics, "127.0.0.1", 0, lambda: relay.healthy)
        await reserve(nursery, B, [address])
        async with await dial_relayed(address, A, B.peer_id) as link:
            await link.send(VersionRequest(sender="m"))
            await link.receive()
            status, body = await http_get(metrics, "/metrics")
        assert status == 200
        for series in SERIES:
            assert f"\n{series}" in body, series
        assert "open4wd_relay_reservations 1.0" in body and "open4wd_relay_circuits_active 1.0" in body
        forwarded = next(float(line.split()[1]) for line in body.splitlines()
                         if line.startswith("open4wd_relay_bytes_forwarded_total"))
        assert forwarded > 500  # the three handshake messages and two sealed ones, bytes the relay could not read
        assert await http_get(metrics, "/healthz") == (200, "ok\n")
        assert (await http_get(metrics, "/nothing"))[0] == 404
        for path in ("/metrics", "/healthz", "/nothing"):  # HEAD: GET's status and headers, never a body
            status, headers, head_body = await http_exchange(metrics, path, "HEAD")
            assert head_body == "" and int(headers["content-length"]) > 0 and status in (200, 404)
        relay.book.draining = True
        assert await http_get(metrics, "/healthz") == (503, "draining\n")
        nursery.cancel_scope.cancel()


async def test_a_drain_keeps_circuits_for_the_grace_period_and_refuses_anything_new(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        echo, keeper = await reserve(nursery, B, [address])
        link = await dial_relayed(address, A, B.peer_id)
        await link.send(VersionRequest(sender="before"))
        await link.receive()
        drained = trio.Event()

        async def drain():
            await relay.drain(10)
            drained.set()

        nursery.start_soon(drain)
        await wait_for(lambda: not keeper.held)  # told relay-draining on its control link
        host, port = address.rsplit(":", 1)
        with pytest.raises(OSError):  # no longer accepting at all
            await trio.open_tcp_stream(host, int(port))
        for _ in range(5):  # the open circuit carries on through the grace period
            await trio.sleep(1)
            await link.send(VersionRequest(sender="during"))
            assert await link.receive() == VersionRequest(sender="echo:during")
        await drained.wait()
        assert 9.9 < trio.current_time() < 12
        with pytest.raises(LinkClosed) as cut:
            while True:
                await link.send(VersionRequest(sender="after"))
                await link.receive()
        # the relay cannot seal a reason into the link: it closes the connection, which the node reads as a
        # hang-up, or as a reset when a byte it sent was still unread there
        assert cut.value.code in {"link-eof", "link-broken"}
        assert 'open4wd_relay_circuit_ends_total{reason="relay-drained"} 1.0' in relay.metrics.exposition().decode()
        nursery.cancel_scope.cancel()


async def test_a_drain_ends_as_soon_as_the_last_circuit_does(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery)
        await reserve(nursery, B, [address])
        link = await dial_relayed(address, A, B.peer_id)

        async def finish_soon():
            await trio.sleep(2)
            await link.aclose()

        nursery.start_soon(finish_soon)
        await relay.drain(30)
        assert 1.9 < trio.current_time() < 3
        assert 'reason="closed"} 1.0' in relay.metrics.exposition().decode()
        nursery.cancel_scope.cancel()


junk_frames = st.lists(st.one_of(
    st.binary(max_size=64),
    st.dictionaries(st.sampled_from(["type", "target", "circuit", "proof", "source", "peer"]),
                    st.one_of(st.sampled_from(["relay-reserve", "relay-connect", "relay-accept", "relay-circuit",
                                               "relay-incoming", "link-ping"]),
                              st.binary(max_size=20), st.text(max_size=20), st.integers(-(2**40), 2**40), st.none()),
                    max_size=3).map(lambda m: msgpack.packb(m, use_bin_type=True)),
), max_size=8)


@settings(max_examples=30, deadline=None)
@given(junk_frames, st.booleans())
def test_the_relay_survives_junk_before_and_after_the_handshake(frames, sealed):
    """Whatever a client sends (bytes in place of a handshake, or sealed junk after it), the relay closes
    that link with a code and keeps serving: a real circuit works afterwards."""

    async def main():
        async with trio.open_nursery() as nursery:
            relay, address = await start_relay(nursery)
            host, port = address.rsplit(":", 1)
            stream = await trio.open_tcp_stream(host, int(port))
            raw = RawPeer(stream, C)
            if sealed:
                await raw.handshake(RELAY_ID.peer_id)
                data = b"".join(raw.seal(body) for body in frames)
            else:
                data = b"".join(HEADER.pack(len(body)) + body for body in frames)
            try:
                await raw.send(data)
                await raw.messages_until_eof()
            except (trio.BrokenResourceError, LinkClosed):
                pass
            await stream.aclose()
            await reserve(nursery, B, [address])
            async with await dial_relayed(address, A, B.peer_id) as link:
                await link.send(VersionRequest(sender="still"))
                assert await link.receive() == VersionRequest(sender="echo:still")
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def test_the_relays_door_refuses_openings_over_a_sources_share(fast_clock):
    async with trio.open_nursery() as nursery:
        relay, address = await start_relay(nursery, door=ListenerLimits(openings=4, openings_per_source=2))
        host, port = address.rsplit(":", 1)
        idle = [await trio.open_tcp_stream(host, int(port), local_address="127.0.0.2") for _ in range(2)]
        await trio.sleep(0.01)
        third = await trio.open_tcp_stream(host, int(port), local_address="127.0.0.2")
        with pytest.raises(LinkClosed) as caught:
            await open_link(third, C, DIALER)
        assert caught.value.code == "listener-busy"
        await reserve(nursery, B, [address])  # another source still gets in
        assert relay.book.reservations
        for stream in idle:
            await stream.aclose()
        nursery.cancel_scope.cancel()
