"""The demo's live table: one row per node (status, round, frame, worst lag, agreed hashes), built from
the JSON events its child process prints, and the notable events once each, nodes named ``nodeN``; beside
it on a terminal, and on the live page with ``--web``, the track from above with every car.

A node's frame is the newest one its events name (checksum votes every 120 frames, lag reports, round
ends), so it moves in steps of 2 s; the events are what a game UI would see too. The picture is the race
as one node sees it (``picture_node``: the first that does not corrupt its state): that node prints its
cars' places 4 times a second (``--cars-events``), and the demo projects them on its own plan of the
track. Drawn like a node's own view (``live_console.Screen``): on a terminal a live region, elsewhere
plain lines at most every 5 s, without the picture.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.table import Table

from open4wd_node.events.text import event_text, round_text, short
from open4wd_node.view.live_console import Screen, showing
from open4wd_node.view.live_render import Beside
from open4wd_node.view.live_web import LiveState
from open4wd_node.view.race_picture import CarMark, RacePicture
from open4wd_node.view.track_map import TrackMap
from open4wd_node.view.track_picture import MIN_COLS, TrackPicture

if TYPE_CHECKING:
    from open4wd_node.demo.runner import NodeRun
    from open4wd_node.demo.setup import DemoOptions
    from open4wd_node.view.web_view import WebAddress

SESSION_END_TEXT = {"persistent-desync": "desync (voted out)", "left": "left"}


@dataclass
class NodeLine:
    """One node's row in the demo's table, as its events tell it."""

    index: int
    status: str = "starting"
    round_index: int | None = None
    frame: int | None = None
    worst_lag: int = 0
    agreed: int = 0
    disagreed: int = 0


class DemoBoard:
    """The demo's ``progress`` callback (O(1) per event) and the view its ``Screen`` draws."""

    def __init__(self, nodes: int, screen: Screen, track: TrackMap | None = None, picture_node: int = 0) -> None:
        self.nodes = [NodeLine(i) for i in range(nodes)]
        self.screen = screen
        self.names: dict[str, str] = {}  # PeerId -> nodeN, from the host's room events
        self._told: set[tuple[Any, ...]] = set()  # notable events already shown (every node reports them)
        self.track, self.picture_node = track, picture_node
        self._cars: dict[str, Any] | None = None  # the picture node's newest ``cars`` event

    def name(self, peer: str) -> str:
        """A PeerId as the demo shows it: ``nodeN`` once the room named it, else its short form."""
        return self.names.get(peer, short(peer))

    def __call__(self, index: int, event: dict[str, Any]) -> None:
        node, kind = self.nodes[index], event["event"]
        if kind == "cars":
            if index == self.picture_node:
                self._cars = event
            return
        if kind in ("checksum", "lag", "round-end"):
            node.frame = event["frame"]
        if kind == "room-created":
            self.names[event["host"]] = f"node{index}"
            node.status = "hosting the room"
        elif kind == "member-joined":
            self.names[event["peer"]] = event["nickname"]  # the demo names each node nodeN
        elif kind == "joined":
            node.status = "in the room"
        elif kind == "countdown":
            node.status = "countdown"
        elif kind == "race-start":
            node.status, node.round_index, node.frame = "racing", event["round"], 0
        elif kind == "checksum":
            node.agreed += event["agreed"]
            node.disagreed += not event["agreed"]
        elif kind == "lag":
            node.worst_lag = max(node.worst_lag, event["frames"])
        elif kind == "round-end":
            node.status = f"{round_text(event['round'])} over"
        elif kind == "session-end":
            node.status = SESSION_END_TEXT.get(event["reason"], event["reason"])
        elif kind == "result":
            node.worst_lag = max(node.worst_lag, event["max_lag"])
            node.status = "finished" if event["outcome"] == "finished" else node.status
        elif kind == "error":
            node.status = f"error[{event['code']}]"
        self._tell(index, kind, event)

    def _tell(self, index: int, kind: str, event: dict[str, Any]) -> None:
        """The notable events as lines: what every node reports once, what one node reports with its name."""
        shared = {"match-start": (), "desync": (event.get("round"), event.get("frame")), "leave": (event.get("peer"),),
                  "round-end": (event.get("round"),)}
        if kind in shared:
            key = (kind, *shared[kind])
            if key not in self._told:
                self._told.add(key)
                self.screen.line(event_text(kind, event, self.name) or kind)
        elif kind in ("session-end", "fault", "error"):
            self.screen.line(f"node{index}: {event_text(kind, event, self.name)}")

    def picture(self) -> RacePicture | None:
        """The track with every car where the picture node last saw it (None before its first ``cars``)."""
        cars, track = self._cars, self.track
        if cars is None or track is None:
            return None
        marks = tuple(CarMark(c["slot"], self.name(c["peer"]), *track.place(c["arc_um"], c["lat_um"], c["h_um"]),
                              c["rank"], c["laps"]) for c in cars["cars"])
        return RacePicture(track, cars["round"], cars["frame"], marks)

    def live_state(self) -> LiveState | None:
        """The picture as the live page shows it, under a line saying whose view it is."""
        picture = self.picture()
        if picture is None:
            return None
        return LiveState(picture, f"demo · {round_text(picture.round_index)} · frame {picture.frame} "
                                  f"(as node{self.picture_node} sees it)")

    def renderable(self) -> RenderableType:
        """The table of nodes, and beside it the track with every car, for a terminal."""
        table = Table(title="demo nodes", title_justify="left")
        for column in ("node", "status", "round", "frame", "worst lag", "agreed hashes"):
            table.add_column(column, justify="left" if column in ("node", "status") else "right")
        for row in self.rows():
            table.add_row(*row)
        picture = self.picture()
        return table if picture is None else Beside(table, TrackPicture(picture), MIN_COLS)

    def plain(self) -> list[str]:
        """The table of nodes as plain lines, for a pipe or a file."""
        return ["── demo nodes"] + [
            f"   {node:<6} {status:<20} {rnd:<8} frame {frame:>6}  worst lag {lag:>3}  agreed {agreed:>4}"
            for node, status, rnd, frame, lag, agreed in self.rows()
        ]

    def rows(self) -> list[tuple[str, str, str, str, str, str]]:
        """Per node: name, status, round, frame, worst lag and agreed hashes, as text."""
        return [
            (f"node{n.index}", n.status, "" if n.round_index is None else round_text(n.round_index),
             "" if n.frame is None else str(n.frame), str(n.worst_lag),
             f"{n.agreed}" + (f" ({n.disagreed} disagreed)" if n.disagreed else ""))
            for n in self.nodes
        ]


def picture_node(options: DemoOptions) -> int:
    """The node whose view of the race the demo draws: the first that does not corrupt its own state."""
    return next(i for i in range(options.nodes) if options.corrupt is None or options.corrupt[0] != i)


async def race_demo(board: DemoBoard, options: DemoOptions, data_dir: Path, show: bool,
                    web: WebAddress | None = None) -> list[NodeRun]:
    """``run_demo`` with the live table and picture on the terminal (``show``) and on the live page
    (``web``), or silent until the end (``--json`` alone)."""
    from contextlib import AsyncExitStack

    from open4wd_node.demo.runner import run_demo
    from open4wd_node.view.web_view import serving

    if not show and web is None:
        return await run_demo(options, data_dir, lambda index, event: None)
    async with AsyncExitStack() as stack:
        if show:
            await stack.enter_async_context(showing(board.screen, board))
        if web is not None:
            title = f"open4wd-node demo: {options.nodes} nodes"
            announce = board.screen.line if show else lambda line: print(line, file=sys.stderr, flush=True)
            await stack.enter_async_context(serving(web, board.live_state, title, lambda url: announce(f"live page: {url}")))
        return await run_demo(options, data_dir, board, lambda index: ["--cars-events"] if index == board.picture_node else [])
