"""The live page's server over real loopback sockets (autojump clock): what it answers, its bounds (viewers,
rate, request size and time, names), that it reads the race only while someone watches, and where
``--web`` may listen."""

from __future__ import annotations

import pytest
import trio

from open4wd_node.runtime.addresses import Address
from open4wd_node.runtime.errors import UserError
from open4wd_node.view.live_web import MAX_REQUEST_BYTES, RATE_HZ, REQUEST_TIMEOUT_S, LiveState, LiveWeb
from open4wd_node.view.race_picture import standing_ranks, world_picture
from open4wd_node.view.web_view import web_address
from sim_core import World


class Race:
    """A world stepped by the test, read as the live page's source (counting the reads)."""

    def __init__(self) -> None:
        self.world = World.demo(3, seed=2)
        self.reads = 0

    def __call__(self) -> LiveState:
        self.reads += 1
        return LiveState(world_picture(self.world, 0, {}, standing_ranks(self.world)), f"frame {self.world.frame}")


async def request(port: int, head: bytes) -> bytes:
    """Send ``head`` and read the whole answer (the server closes after it)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(head)
    answer = b""
    while chunk := await stream.receive_some(65536):
        answer += chunk
    return answer


def get(path: str, host: str = "127.0.0.1") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


async def test_the_page_the_stream_and_the_refusals(autojump_clock):
    race = Race()
    web = LiveWeb(race, "a title")
    async with trio.open_nursery() as nursery:
        port = await nursery.start(web.serve, "127.0.0.1", 0)
        page = await request(port, get("/", f"localhost:{port}"))
        head, body = page.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200 ") and b"content-security-policy: default-src 'none'" in head
        assert b"<h1>a title</h1>" in body and b"new EventSource('/events')" in body
        assert b"src=" not in body and b"href=" not in body  # nothing to fetch but the stream
        assert (await request(port, get("/nowhere"))).startswith(b"HTTP/1.1 404 ")
        post = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n"
        assert (await request(port, post)).startswith(b"HTTP/1.1 405 ")
        assert (await request(port, get("/", "evil.example:80"))).startswith(b"HTTP/1.1 421 ")  # a rebound name
        oversize = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * MAX_REQUEST_BYTES + b"\r\n\r\n"
        assert (await request(port, oversize)).startswith(b"HTTP/1.1 431 ")
        assert (await request(port, b"nonsense\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
        assert race.reads == 0  # nobody watched: the race was never read
        nursery.cancel_scope.cancel()


async def test_a_silent_client_is_closed_after_the_request_time(autojump_clock):
    web = LiveWeb(Race())
    async with trio.open_nursery() as nursery:
        port = await nursery.start(web.serve, "127.0.0.1", 0)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        started = trio.current_time()
        assert await stream.receive_some(100) == b""
        assert REQUEST_TIMEOUT_S <= trio.current_time() - started < REQUEST_TIMEOUT_S + 1
        nursery.cancel_scope.cancel()


async def read_events(stream: trio.SocketStream, until: float) -> list[tuple[str, str]]:
    """The (event, data) pairs of a server-sent stream until the clock reaches ``until``."""
    buffer, events = b"", []
    with trio.move_on_at(until):
        while chunk := await stream.receive_some(65536):
            buffer += chunk
    for block in buffer.split(b"\r\n\r\n", 1)[1].decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append((fields["event"], fields["data"]))
    return events


async def test_viewers_get_the_round_once_then_frames_at_the_bounded_rate_and_one_too_many_is_refused(autojump_clock):
    race = Race()
    web = LiveWeb(race, max_clients=2)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(web.serve, "127.0.0.1", 0)

        async def step() -> None:
            while True:
                race.world.step({})
                await trio.sleep(1 / 60)

        nursery.start_soon(step)
        viewers = []
        for _ in range(2):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(get("/events"))
            viewers.append(stream)
        await trio.sleep(0.5)
        assert web.clients == 2
        refused = await request(port, get("/events"))
        assert refused.startswith(b"HTTP/1.1 503 ") and web.refused == 1
        start = trio.current_time()
        first = await read_events(viewers[0], start + 2)
        assert first[0][0] == "round" and '"svg":"<svg class=\\"map\\"' in first[0][1]
        assert first[0][1].count("data-car=") == 3 and "data-track" in first[0][1]
        frames = [data for name, data in first if name == "frame"]
        assert [name for name, _ in first].count("round") == 1
        assert 0.5 * 2 * RATE_HZ <= len(frames) <= 2.5 * RATE_HZ + 1  # at most RATE_HZ a second (plus the 0.5 s before)
        reads = race.reads
        assert reads <= 3 * RATE_HZ + 2  # one read per tick for both viewers, not one per viewer
        for viewer in viewers:
            await viewer.aclose()
        await trio.sleep(2)
        assert web.clients == 0 and race.reads <= reads + 2 * RATE_HZ // 10 + 1  # nobody watches: no more reads
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_web_serves_on_loopback_by_default(host):
    assert web_address(Address(host, 0), public=False).host == host


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "example.org"])
def test_web_refuses_an_address_others_reach_unless_told_so(host):
    with pytest.raises(UserError) as refused:
        web_address(Address(host, 8080), public=False)
    assert refused.value.code == "web-not-loopback" and "--web-public" in refused.value.message
    assert web_address(Address(host, 8080), public=True).public
