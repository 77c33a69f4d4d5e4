"""An embedder's program: a host and a joiner as two ``Node`` objects in one trio run, over real loopback
sockets, racing a short match to its outcome (the example of docs/node.md, "The node object")."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import trio
import trio.testing

from open4wd_node.assets.cars import CarChoice
from open4wd_node.assets.store import AssetStore
from open4wd_node.net.link import Link
from open4wd_node.node import Node, NodeResult, PlayOptions
from open4wd_node.room.session import HostOptions, JoinOptions
from open4wd_node.runtime.blocking import blocking_work_inline
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.runtime.context import NodeContext
from open4wd_node.events.sink import EventSink
from open4wd_node.events.vocabulary import NodeEvent, RoomCreated
from protocol.identity.keys import Identity
from protocol.room.invitation import Invitation
from tests.events_doc import assert_documented
from tests.open4wd_node.race.nodes import short_track


class Invited(EventSink):
    """JSON lines into ``out``, and the room's participant invitation as soon as the room is open."""

    def __init__(self, out: io.StringIO) -> None:
        super().__init__(as_json=True, stream=out)
        self.invite: Invitation | None = None
        self.open = trio.Event()

    def emit(self, event: NodeEvent) -> None:
        super().emit(event)
        if isinstance(event, RoomCreated):
            self.invite = Invitation.parse(event.invite)
            self.open.set()


class LinkKeeper(Node):
    """A ``Node`` that keeps every link it opened or admitted, in order (its room link comes first)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.kept: list[Link] = []

    def _report_link(self, link: Link) -> None:
        super()._report_link(link)
        self.kept.append(link)


def test_a_host_and_a_joiner_race_in_one_trio_program(tmp_path):
    track = AssetStore.in_data_dir(tmp_path / "host").put(short_track(8.0))
    printed = {"host": io.StringIO(), "joiner": io.StringIO()}
    host_events = Invited(printed["host"])
    host = LinkKeeper(NodeContext(tmp_path / "host", replace(DEFAULTS)), Identity(bytes([1]) * 32), host_events)
    joiner = LinkKeeper(NodeContext(tmp_path / "joiner", replace(DEFAULTS)), Identity(bytes([2]) * 32),
                  EventSink(as_json=True, stream=printed["joiner"]))
    results: dict[str, NodeResult] = {}

    async def main() -> None:
        async def hosting() -> None:
            room = HostOptions(track=track, laps=1, min_players=2, max_players=2, auto_ready=True)
            results["host"] = await host.host(room, CarChoice.parse("speed"), PlayOptions(seed=1))

        async def joining() -> None:
            await host_events.open.wait()
            assert host_events.invite is not None
            results["joiner"] = await joiner.join(host_events.invite, JoinOptions(auto_ready=True),
                                                  CarChoice.parse("control"), PlayOptions(seed=2))

        with trio.move_on_after(120):  # virtual time: a bound on a broken room, never on the machine's speed
            async with trio.open_nursery() as nursery:
                nursery.start_soon(hosting)
                nursery.start_soon(joining)

    with blocking_work_inline():  # the autojump clock must not jump while a thread computes
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))

    assert set(results) == {"host", "joiner"}
    assert all(result.finished for result in results.values())
    host_report, joiner_report = results["host"].report, results["joiner"].report
    assert host_report is not None and joiner_report is not None
    assert host_report.agreed >= 1 and host_report.agreed == joiner_report.agreed
    assert host_report.disagreements == joiner_report.disagreements == 0
    assert host_report.standings == joiner_report.standings
    for name, out in printed.items():
        events = [json.loads(line) for line in out.getvalue().splitlines()]
        assert events[-1]["event"] == "result" and events[-1]["outcome"] == "finished", name
        assert events[-1]["peer"] == (host if name == "host" else joiner).identity.peer_id
        for event in events:  # what an embedder's sink printed is the documented stream
            assert_documented(event["event"], event)
    assert host.listener is None and joiner.listener is None  # both stopped listening at the end
    for node in (host, joiner):  # the room link, unused by the race, was closed as the room ended
        room_link = node.kept[0]
        assert room_link.closed is not None and room_link.closed.code == "room-ended", room_link.closed
    host_printed = [json.loads(line) for line in printed["host"].getvalue().splitlines()]
    assert {e["reason"] for e in host_printed if e["event"] == "member-left"} <= {"room-ended"}  # not eof, no timeout
