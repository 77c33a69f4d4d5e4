"""``open4wd-node demo``: N real node processes on 127.0.0.1 form a room and race each other with bots.

Node 0 hosts (``host --auto-ready``), the others join with its invitation, exactly as players would;
every node prints JSON events, and the demo gathers each node's final ``result``: standings, checksum
votes that agreed, leaves, and the path of its race log.

Everything a node would refuse is checked before the first node starts (``demo_setup.prepare``). The
nodes run in their own sessions, so a Ctrl-C in the terminal reaches the demo alone; the demo passes its
stop signal on to every node (SIGTERM when the demo itself failed), so each closes its race log saying
why, and reaps them all (a node still running after ``NODE_GRACE_S`` is killed).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio

from open4wd_node.demo.transport import demo_transport
from open4wd_node.runtime.choices import ARCHETYPES
from open4wd_node.runtime.errors import UserError
from open4wd_node.demo.setup import DemoOptions
from open4wd_node.runtime.signals import received_signal

NODE_TIMEOUT_S = 900
INVITE_TIMEOUT_S = 30
NODE_GRACE_S = 10  # a stopped node closes its race log and exits well within this

Progress = Callable[[int, dict[str, Any]], None]  # (node number, one of its JSON events): the live table's feed
ExtraArgs = Callable[[int], list[str]]  # node number -> options appended to its command line (later ones win)
RoomOpen = Callable[[dict[str, Any]], Awaitable[None]]  # the host's ``room-created`` event, before any joiner starts


@dataclass
class NodeRun:
    """One node process of the demo: its JSON events as they came, its exit status and its stderr."""

    index: int
    events: list[dict[str, Any]] = field(default_factory=list)
    returncode: int | None = None
    stderr: str = ""
    process: trio.Process | None = field(default=None, repr=False)  # while it runs: for a soak's SIGSTOP or kill -9

    def last(self, name: str) -> dict[str, Any] | None:
        """The node's newest event called ``name``, or None."""
        return next((e for e in reversed(self.events) if e.get("event") == name), None)


def cli_command(data_dir: Path) -> list[str]:
    """The start of an ``open4wd-node`` command line with its own data directory and JSON logs (a node's,
    and the soak's spectator processes'). ``-P``: the child imports the installed node, as the
    ``open4wd-node`` command does, not a source tree that happens to be its working directory (a clone's
    root holds the uncompiled sources beside an install whose step is compiled: setup.py)."""
    return [sys.executable, "-P", "-m", "open4wd_node.cli.main", "--data-dir", str(data_dir), "--log-format", "json"]


def _node_args(options: DemoOptions, index: int, data_dir: Path, extra: ExtraArgs | None = None,
               transport: list[str] | None = None) -> list[str]:
    cars = list(ARCHETYPES)
    args = cli_command(data_dir / f"node{index}")
    common = ["--auto-ready", "--json", "--driver", "bot", "--seed", str(options.seed + index), "--mode", options.mode,
              "--frames-per-tick", str(options.frames_per_tick), "--car", cars[index % len(cars)], "--nickname", f"node{index}"]
    if options.corrupt is not None and options.corrupt[0] == index:
        common += ["--fault", f"corrupt-state@{options.corrupt[1]}"]
    if index == 0:
        common += ["--track", options.track, "--rounds", str(options.rounds), "--laps", str(options.laps),
                   "--time-limit", str(options.time_limit_s), "--min-players", str(options.nodes),
                   "--max-players", str(options.nodes)]
    command = ["host"] if index == 0 else ["join", "{invite}"]
    reach = ["--listen", "127.0.0.1:0"] if transport is None else transport
    return args + command + reach + common + (extra(index) if extra else [])


async def _stop_node(process: trio.Process) -> None:
    """How a cancelled demo stops a node: its own stop signal passed on (SIGTERM when the demo failed),
    then SIGKILL after the grace period; ``trio.run_process`` reaps it."""
    process.send_signal(received_signal() or signal.SIGTERM)
    with trio.move_on_after(NODE_GRACE_S):
        await process.wait()
    if process.returncode is None:
        process.kill()


async def run_node(argv: list[str], run: NodeRun, on_event: Progress) -> None:
    """Run one ``open4wd-node`` process to its end (stopped as ``_stop_node`` says when cancelled), filling
    ``run`` in as it goes; each JSON event goes to ``on_event`` as it comes."""
    async with trio.open_nursery() as nursery:
        process = await nursery.start(partial(
            trio.run_process, argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            check=False, start_new_session=True, deliver_cancel=_stop_node))
        run.process = process

        async def read_stderr() -> None:
            chunks = []
            async for chunk in process.stderr:
                chunks.append(chunk)
            run.stderr = b"".join(chunks).decode(errors="replace")

        nursery.start_soon(read_stderr)
        buffer = b""
        async for chunk in process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.startswith(b"{"):
                    event = json.loads(line)
                    run.events.append(event)
                    on_event(run.index, event)
        run.returncode = await process.wait()
        run.process = None


async def run_demo(options: DemoOptions, data_dir: Path, progress: Progress, extra: ExtraArgs | None = None,
                   runs: list[NodeRun] | None = None, room_open: RoomOpen | None = None) -> list[NodeRun]:
    """Start the host node, then (once its room is open) the joiners, and wait for every node to exit;
    each event goes to ``progress``. ``UserError`` ``demo-failed`` when the host opens no room within
    ``INVITE_TIMEOUT_S``, a node ends before its race started (the others are stopped at once), or the
    nodes are not done after ``NODE_TIMEOUT_S`` (they are stopped).
    ``extra`` adds options to a node's command line and ``runs`` (one per node) are filled in as the
    nodes run: the soak (``open4wd_node.soak.race``) impairs and stops them through these, and starts its
    spectators in ``room_open``, awaited with the host's ``room-created`` event before any joiner starts."""
    runs = runs if runs is not None else [NodeRun(i) for i in range(options.nodes)]
    invite: dict[str, str] = {}
    created = trio.Event()
    room: list[dict[str, Any]] = []

    def on_event(index: int, event: dict[str, Any]) -> None:
        if index == 0 and event["event"] == "room-created":
            invite["url"] = event["invite"]
            room.append(event)
            created.set()
        progress(index, event)

    async def node(index: int, argv: list[str]) -> None:
        """Run a node; one that ends before its race started fails the demo now: the others would wait
        for it until ``NODE_TIMEOUT_S`` (a joiner's bad option, a crash at start)."""
        await run_node(argv, runs[index], on_event)
        if "url" in invite and runs[index].last("race-start") is None:
            raise UserError("demo-failed", f"node {index} ended (exit {runs[index].returncode}) before its race started: "
                                           f"{runs[index].stderr[-500:]}")

    async def host() -> None:
        await node(0, _node_args(options, 0, data_dir, extra, transport))
        created.set()  # a host that exited before opening its room fails the demo now, not at the time-out

    with trio.move_on_after(NODE_TIMEOUT_S) as deadline:
        async with demo_transport(options.transport, data_dir, options.turn) as transport, trio.open_nursery() as nursery:
            nursery.start_soon(host)
            with trio.move_on_after(INVITE_TIMEOUT_S):
                await created.wait()
            if "url" not in invite:
                nursery.cancel_scope.cancel()
                raise UserError("demo-failed", f"the host did not open its room: {runs[0].stderr[-500:]}")
            if room_open is not None:
                await room_open(room[0])
            for index in range(1, options.nodes):
                argv = [invite["url"] if a == "{invite}" else a
                        for a in _node_args(options, index, data_dir, extra, transport)]
                nursery.start_soon(node, index, argv)
    if deadline.cancelled_caught:
        raise UserError("demo-failed", f"the nodes had not finished after {NODE_TIMEOUT_S} s; they were stopped")
    return runs


def summarize(runs: list[NodeRun], elapsed_s: float) -> dict[str, Any]:
    """The demo's figures: node numbers instead of PeerIds wherever a node is named."""
    results = {r.index: r.last("result") for r in runs}
    reported = {i: res for i, res in results.items() if res}
    node_of = {res["peer"]: i for i, res in reported.items()}
    finished = [i for i, res in reported.items() if res["outcome"] == "finished"]
    leaves = [
        {"node": r.index, "peer": node_of.get(e["peer"], e["peer"]), "reason": e["reason"]}
        for r in runs for e in r.events if e.get("event") == "leave"
    ]
    standings = [
        {"rank": row["rank"], "node": node_of.get(row["peer"], row["peer"]), "points": row["points"],
         "finish_frames": row["finishFrames"], "status": row["status"], "rounds": row["rounds"]}
        for row in (reported[finished[0]]["standings"] if finished else [])
    ]
    return {
        "nodes": len(runs),
        "finished": len(finished),
        "agreed_hashes": min((reported[i]["agreed_hashes"] for i in finished), default=0),
        "disagreements": sum(res["disagreements"] for res in results.values() if res),
        "leaves": leaves,
        "outcomes": {str(i): (res or {}).get("outcome", f"exit {runs[i].returncode}") for i, res in results.items()},
        "standings": standings,
        "logs": [res["log"] for res in results.values() if res and res.get("log")],
        "max_lag": max((res["max_lag"] for res in results.values() if res), default=0),
        "rollbacks": sum(res["rollbacks"] for res in results.values() if res),
        "cpu": cpu_summary({i: res["cpu"] for i, res in results.items() if res and res.get("cpu")}),
        "elapsed_s": round(elapsed_s, 1),
    }


def cpu_summary(by_node: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The nodes' CPU per frame (each node's ``result`` ``cpu``, by node number): the mean, the worst node
    and each node's figure, and the mean µs per frame of each part, over the nodes that reported one.
    Each node's own figure is there because the nodes of one race share the machine's mood, which
    races minutes apart do not (``benchmarks/race_pairs.py --mixed`` compares nodes within a race)."""
    if not by_node:
        return {}
    cpus = list(by_node.values())
    parts = cpus[0]["parts_us"]
    return {
        "per_frame_us": round(sum(c["per_frame_us"] for c in cpus) / len(cpus), 1),
        "worst_per_frame_us": max(c["per_frame_us"] for c in cpus),
        "by_node_us": {str(i): c["per_frame_us"] for i, c in sorted(by_node.items())},
        "parts_us": {part: round(sum(c["parts_us"][part] for c in cpus) / len(cpus), 1) for part in parts},
        "frames": min(c["frames"] for c in cpus),
    }
