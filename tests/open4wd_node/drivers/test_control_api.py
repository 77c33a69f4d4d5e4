"""The control API over real loopback TCP: hello, subscriptions and their rates, press and hold reaching
the driver, a coded error for every bad request, and slow or surplus clients never holding up the race."""

from __future__ import annotations

import json
import socket

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from open4wd_node.runtime.errors import UserError
from open4wd_node.drivers.control_api import MAX_LINE_BYTES, ControlServer, _Client
from sim_core import SKILLS
from sim_core.specs.vehicle import ChipSlot
from tests.sim_core.helpers import archetype, car, world

CHIP = (ChipSlot("boost", 40), ChipSlot("swerve_left", 20), ChipSlot("stabilize", 20))  # no jump
GUARD_S = 10  # hang guard for every wait on the network, not a timing assertion


class Client:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    @classmethod
    async def connect(cls, port: int, *, receive_buffer: int | None = None) -> "Client":
        sock = trio.socket.socket()
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        await sock.connect(("127.0.0.1", port))
        return cls(trio.SocketStream(sock))

    async def send(self, request) -> None:
        line = request if isinstance(request, bytes) else json.dumps(request).encode()
        await self.stream.send_all(line + b"\n")

    async def recv(self) -> dict:
        with trio.fail_after(GUARD_S):
            while b"\n" not in self.buffer:
                data = await self.stream.receive_some(65536)
                assert data, "the node closed the connection"
                self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    async def request(self, request) -> dict:
        await self.send(request)
        return await self.recv()

    async def closed_by_node(self) -> bool:
        """Read until the node closes the connection."""
        with trio.fail_after(GUARD_S):
            try:
                while await self.stream.receive_some(65536):
                    pass
            except trio.BrokenResourceError:
                pass
        return True


async def start(nursery, **options) -> ControlServer:
    server = ControlServer(peer="zTestPeer", **options)
    port = await nursery.start(server.serve)
    assert port == server.port and port != 0 and server.host == "127.0.0.1"  # the bound address
    return server


async def until(condition) -> None:
    with trio.fail_after(GUARD_S):
        while not condition():
            await trio.sleep(0.001)


async def test_hello_on_connect_and_again_when_the_round_starts(nursery):
    server = await start(nursery)
    client = await Client.connect(server.port)
    assert await client.recv() == {"type": "hello", "api": 1, "peer": "zTestPeer", "slot": None, "skills": [],
                                   "topics": ["frames", "standings", "events"]}
    w = world(cars=[archetype(0), car(CHIP)])
    server.publish_frame(w, 1)
    hello = await client.recv()
    assert (hello["slot"], hello["skills"]) == (1, ["boost", "swerve_left", "stabilize"])


async def test_frames_every_frame_and_standings_every_30_frames_once_subscribed(nursery):
    server = await start(nursery)
    client = await Client.connect(server.port)
    await client.recv()
    w = world(cars=[car(CHIP), archetype(2)])
    server.publish_frame(w, 0)  # nobody subscribed yet: nothing but the new hello
    assert (await client.recv())["type"] == "hello"
    assert await client.request({"op": "subscribe", "topics": ["standings", "frames"]}) == {
        "type": "ack", "op": "subscribe", "topics": ["frames", "standings"]}
    for _ in range(61):
        w.step()
        server.publish_frame(w, 0)
    got = [await client.recv() for _ in range(61 + 3)]
    frames = [m for m in got if m["type"] == "frame"]
    standings = [m for m in got if m["type"] == "standings"]
    assert [m["frame"] for m in frames] == list(range(1, 62))
    assert [m["frame"] for m in standings] == [1, 31, 61]
    expected = {k: v for k, v in w.car_state(0).items() if "." not in k}
    assert frames[-1]["car"] == {**expected, "disable_reason": None} and frames[-1]["slot"] == 0
    assert standings[-1]["standings"] == w.standings()


async def test_frame_rate_is_a_parameter(nursery):
    server = await start(nursery, frame_every=5)
    client = await Client.connect(server.port)
    await client.recv()
    w = world(cars=[car(CHIP)])
    await client.request({"op": "subscribe", "topics": ["frames"]})
    for _ in range(12):
        w.step()
        server.publish_frame(w, 0)
    assert (await client.recv())["type"] == "hello"
    assert [(await client.recv())["frame"] for _ in range(3)] == [1, 6, 11]


async def test_events_reach_only_clients_subscribed_to_them(nursery):
    server = await start(nursery)
    listener, other = await Client.connect(server.port), await Client.connect(server.port)
    await listener.recv(), await other.recv()
    await listener.request({"op": "subscribe", "topics": ["events"]})
    await other.request({"op": "subscribe", "topics": ["frames"]})
    server.publish_event("checksum", {"frame": 120, "agreed": True, "type": "not-overridden"})
    assert await listener.recv() == {"type": "event", "event": "checksum", "frame": 120, "agreed": True}
    assert (await other.request({"op": "subscribe", "topics": []}))["type"] == "ack"  # no event came first


async def test_press_and_hold_reach_the_driver_and_holds_end_with_the_connection(nursery):
    server = await start(nursery)
    w = world(cars=[car(CHIP)])
    server.publish_frame(w, 0)
    client = await Client.connect(server.port)
    await client.recv()
    assert await client.request({"op": "press", "skill": "boost"}) == {"type": "ack", "op": "press", "skill": "boost"}
    assert server.driver.decide(w, 0, 1) == [("boost", False)]
    assert server.driver.decide(w, 0, 2) == []
    ack = await client.request({"op": "hold", "skill": "stabilize", "on": True})
    assert ack == {"type": "ack", "op": "hold", "skill": "stabilize", "on": True}
    assert server.driver.decide(w, 0, 3) == server.driver.decide(w, 0, 4) == [("stabilize", True)]
    await client.request({"op": "hold", "skill": "stabilize", "on": False})
    assert server.driver.decide(w, 0, 5) == []
    await client.request({"op": "hold", "skill": "swerve_left", "on": True})
    await client.stream.aclose()
    await until(lambda: server.client_count == 0)
    assert server.driver.decide(w, 0, 6) == []


async def test_a_client_that_ends_its_input_still_gets_its_replies_and_its_holds_end(nursery):
    server = await start(nursery)
    w = world(cars=[car(CHIP)])
    server.publish_frame(w, 0)
    client = await Client.connect(server.port)
    await client.recv()
    await client.send({"op": "hold", "skill": "stabilize", "on": True})
    await client.send({"op": "press", "skill": "warp"})
    await client.stream.send_eof()  # like `printf '...' | nc -q 1`
    assert (await client.recv())["type"] == "ack" and (await client.recv())["code"] == "input-unknown-skill"
    assert await client.closed_by_node()
    assert server.client_count == 0 and server.driver.decide(w, 0, 1) == []


async def test_a_new_round_seen_first_by_the_driver_sends_hello_and_ends_old_holds(nursery):
    server = await start(nursery)
    client = await Client.connect(server.port)
    await client.recv()
    server.publish_frame(world(cars=[car(CHIP)]), 0)
    await client.recv()
    await client.request({"op": "hold", "skill": "stabilize", "on": True})
    next_round = world(cars=[archetype(0), archetype(2)])
    assert server.driver.decide(next_round, 1, 1) == []
    hello = await client.recv()
    skills = ["swerve_left", "swerve_right", "stabilize", "weapon"]
    assert (hello["type"], hello["slot"], hello["skills"]) == ("hello", 1, skills)
    await client.request({"op": "hold", "skill": "stabilize", "on": True})
    assert server.driver.decide(next_round, 1, 2) == [("stabilize", True)]


BAD_REQUESTS = [
    (b"press boost", "bad-json"),
    (b"\xff\xfe{}", "bad-json"),
    (b"[" * 4000 + b"]" * 4000, "line-too-long"),
    (b"[" * 2000 + b"]" * 2000, "bad-json"),
    (b"[1, 2]", "bad-request"),
    (b'{"op": "fly"}', "unknown-op"),
    (b'{"topics": ["frames"]}', "unknown-op"),
    (b'{"op": "subscribe", "topics": "frames"}', "bad-request"),
    (b'{"op": "subscribe", "topics": ["frames", "radio"]}', "unknown-topic"),
    (b'{"op": "press"}', "bad-request"),
    (b'{"op": "press", "skill": "warp"}', "input-unknown-skill"),
    (b'{"op": "press", "skill": "jump"}', "input-skill-not-in-chip"),
    (b'{"op": "press", "skill": "stabilize"}', "input-hold-mismatch"),
    (b'{"op": "hold", "skill": "boost", "on": true}', "input-hold-mismatch"),
    (b'{"op": "hold", "skill": "stabilize", "on": "yes"}', "bad-request"),
    (b'{"op": "hold", "skill": "stabilize"}', "bad-request"),
    (b"x" * (MAX_LINE_BYTES + 1), "line-too-long"),
]


async def test_every_bad_request_gets_its_coded_error_and_the_connection_stays_usable(nursery):
    server = await start(nursery)
    client = await Client.connect(server.port)
    await client.recv()
    refused = await client.request({"op": "press", "skill": "boost"})
    assert (refused["type"], refused["code"]) == ("error", "no-race")
    w = world(cars=[car(CHIP)])
    server.publish_frame(w, 0)
    await client.recv()
    for line, code in BAD_REQUESTS:
        reply = await client.request(line)
        assert (reply["type"], reply["code"]) == ("error", code), line
        assert isinstance(reply["message"], str) and reply["message"]
    await client.stream.send_all(b"y" * (3 * MAX_LINE_BYTES))  # a long line arriving in pieces: one error
    reply = await client.request(b"y")
    assert reply["code"] == "line-too-long"
    assert (await client.request({"op": "press", "skill": "boost"}))["type"] == "ack"
    assert server.driver.decide(w, 0, 1) == [("boost", False)]


async def test_a_client_that_never_reads_is_dropped_without_holding_up_the_others(nursery):
    server = await start(nursery, outbox=16)
    stalled = await Client.connect(server.port, receive_buffer=4096)
    reader = await Client.connect(server.port)
    await until(lambda: server.client_count == 2)
    for client in (stalled, reader):
        await client.recv()
        await client.request({"op": "subscribe", "topics": ["events"]})
    received: list[int] = []

    async def read_all() -> None:
        while True:
            received.append((await reader.recv())["n"])

    padding = "p" * 32_000
    sent = 0
    async with trio.open_nursery() as readers:
        readers.start_soon(read_all)
        while server.client_count == 2 and sent < 2000:
            server.publish_event("filler", {"n": sent, "padding": padding})  # sync: it cannot wait for anyone
            sent += 1
            await until(lambda n=sent: len(received) == n)  # a UI that keeps up, at its own pace
        assert server.client_count == 1, "the stalled client was never dropped"
        for _ in range(10):  # a burst within the outbox is simply queued
            server.publish_event("filler", {"n": sent, "padding": padding})
            sent += 1
        await until(lambda: len(received) == sent)
        readers.cancel_scope.cancel()
    assert received == list(range(sent))
    assert await stalled.closed_by_node()


async def test_a_port_in_use_is_a_coded_error(nursery):
    taken = await start(nursery)
    with pytest.raises(UserError) as refused:
        await nursery.start(ControlServer(peer="zTestPeer", port=taken.port).serve)
    assert refused.value.code == "control-port-unavailable"


async def test_surplus_clients_are_refused_with_a_code(nursery):
    server = await start(nursery, max_clients=2)
    first, second = await Client.connect(server.port), await Client.connect(server.port)
    await first.recv(), await second.recv()
    third = await Client.connect(server.port)
    reply = await third.recv()
    assert (reply["type"], reply["code"]) == ("error", "too-many-clients")
    assert await third.closed_by_node()


@settings(max_examples=200, deadline=None)
@given(line=st.one_of(st.binary(max_size=200), st.builds(
    lambda d: json.dumps(d).encode(),
    st.dictionaries(st.sampled_from(["op", "skill", "on", "topics"]), st.one_of(
        st.sampled_from(["subscribe", "press", "hold", *SKILLS, "frames"]), st.booleans(), st.none(),
        st.lists(st.sampled_from(["frames", "events", "radio"])), st.integers())))))
def test_any_request_line_gets_exactly_one_ack_or_coded_error(line):
    server = ControlServer(peer="zTestPeer")
    server.publish_frame(world(cars=[car(CHIP)]), 0)
    reply = server._request(_Client(4), line)  # the request parser itself, without a socket
    message = json.loads(reply)
    assert reply.endswith(b"\n") and reply.count(b"\n") == 1
    assert message["type"] == "ack" or (message["type"] == "error" and message["code"])
