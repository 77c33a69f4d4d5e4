"""One soak race: real node processes behind impairment proxies, its faults on schedule, then its verdict.

``run_race(plan, work_dir)`` is what a Dask task runs (``soak.cluster``): it needs nothing but the
plan and a scratch directory, so it runs the same on a laptop's ``LocalCluster`` and on a remote
worker. The nodes are started exactly as the demo starts them (``demo.runner.run_demo``: node 0 hosts
with ``--auto-ready``, the others join its invitation, bots drive), each on its own loopback address
behind its own ``ImpairmentProxy``, whose address it advertises, so every race link and every join
crosses a proxy. The harness watches every node's JSON events: it stops (SIGSTOP/SIGCONT) or kills
(SIGKILL) a node at its time in the race, makes the proxies hiccup, arms the tamper, and calls a node
that has neither ended nor progressed for ``NO_PROGRESS_S`` hung. Afterwards every race log goes
through ``open4wd-node replay``, and ``classify`` judges the race. A race that is not ``agreed`` keeps
its logs, saved states, events and stderr, and its replay page (``soak.pages``), returned packed, so a
remote worker's files come home.

Profiles ``webrtc`` and ``turn`` link the nodes over WebRTC instead (no node listens, so no proxy is
crossed): the demo's orchestration starts a local ``open4wd-node signal`` for the race and, for ``turn``, a
local coturn that relays every link (``--reachability relay``); each node's ``link-path`` events say how
its links went, and the row carries them. Profile ``spectators`` starts ``open4wd-node watch`` processes
on the host's spectator invitation once its room is open, before any joiner (a spectator must be
admitted before the match starts), stops or kills one on schedule, and waits for them after the nodes;
their race logs are replayed like the nodes'.
Profile ``hostile-ready`` starts a hostile member (``open4wd_node.faults.hostile``) on the host's
participant invitation as the room opens, before any joiner, and stops it once the nodes ended.
"""

from __future__ import annotations

import io
import json
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import trio

from open4wd_node.demo.runner import NodeRun, cli_command, run_demo, run_node
from open4wd_node.demo.setup import DemoOptions
from open4wd_node.net.impair import Direction, Impairment, ImpairmentProxy
from open4wd_node.race.log import LogReader
from open4wd_node.runtime.addresses import Address
from open4wd_node.runtime.errors import UserError
from open4wd_node.soak.classify import HostileSeen, NodeObservation, RaceClass, Verdict, classify, realtime_ratio
from open4wd_node.soak.pages import race_page
from open4wd_node.soak.plan import RacePlan
from open4wd_node.soak.profiles import Hiccup, LinkTransport, LinkTrouble, SpectatorFaultKind
from protocol.identity.keys import PeerId
from sim_core.constants import FPS

NODE_PORT = 24_680  # below Linux's ephemeral range: every node listens on its own loopback address, this port
TAMPER_ARMED_S = 30  # from the countdown (5 s): the first mesh link carries the flip's offset within seconds
NO_PROGRESS_S = 60  # longer than any documented wait without a frame (reconnect window + watchdog: 30 s)
SPECTATOR_HOST = 200  # spectators listen on .200 and up of the race's /24
START_WAIT_S = 30  # for a spectator to be admitted to the room
SPECTATOR_GRACE_S = 60  # after the last node ended: a spectator plays its buffered frames out, then its log is closed
ERROR_LINE = re.compile(r"^error\[([a-z0-9-]+)\]: (.*)$", re.MULTILINE)


def race_limit_s(plan: RacePlan) -> float:
    """The most a race may take, start to end, before its running nodes are called hung even though they
    still progress: slower than a tenth of real time (a bandwidth cap slows a race to a quarter)."""
    return 10 * plan.race_seconds + 120


@dataclass
class RaceResult:
    """A race's verdict and figures (one row of ``report.json``), and its packed files when kept."""

    plan: RacePlan
    verdict: Verdict
    nodes: list[NodeObservation]
    frames: int
    agreed_hashes: int
    worst_lag: int
    rollbacks: int
    max_rollback: int
    elapsed_s: float
    faults_applied: list[str]
    curves: dict[str, list[list[int]]]  # node -> [frame, lag, deepest rollback] once a second of race
    spectators: list[NodeObservation] = field(default_factory=list)
    kept: bytes | None = field(default=None, repr=False)  # tar.gz of the race directory, unless agreed
    page: dict[str, str] = field(default_factory=dict)  # where a kept race's replay page is (``soak.pages``)

    def row(self) -> dict[str, Any]:
        """The report row (everything but the packed files)."""
        return {
            "race_id": self.plan.race_id, "index": self.plan.index, "seed": self.plan.seed,
            "profile": str(self.plan.profile), "nodes": self.plan.nodes, "modes": list(self.plan.modes),
            "class": str(self.verdict.race_class), "reason": self.verdict.reason,
            "detection_frames": self.verdict.detection_frames, "frames": self.frames,
            "agreed_hashes": self.agreed_hashes, "worst_lag": self.worst_lag, "rollbacks": self.rollbacks,
            "max_rollback": self.max_rollback, "realtime_ratio": realtime_ratio(self.nodes),
            "node_realtime_ratios": {f"node{n.index}": n.realtime_ratio for n in self.nodes},
            "link_paths": {f"node{n.index}": list(n.link_paths) for n in self.nodes},
            "elapsed_s": self.elapsed_s, "faults_applied": self.faults_applied,
            "outcomes": {f"node{n.index}": n.outcome or (f"exit {n.returncode}" if n.returncode is not None else "hung")
                         for n in self.nodes},
            "spectators": {f"spectator{s.index}": {"outcome": s.outcome or (f"exit {s.returncode}" if s.returncode is not None
                                                                             else "hung"),
                                                   "checked_hashes": s.agreed, "mismatches": s.disagreements,
                                                   "replay": s.replay_status} for s in self.spectators},
            "curves": self.curves, "plan": self.plan.to_json(), **self.page,
        }


class _Harness:
    """The running race: its proxies, its nodes' runs, its schedule of faults and its hang watch."""

    def __init__(self, plan: RacePlan, block: str) -> None:
        self.plan = plan
        self.hosts = [f"{block}.{i + 1}" for i in range(plan.nodes)]
        links = plan.faults.links
        self.proxies = [
            ImpairmentProxy(Address(host, NODE_PORT),
                            up=self._impairment(links, plan.seed * 16 + 2 * i),
                            down=self._impairment(links, plan.seed * 16 + 2 * i + 1))
            for i, host in enumerate(self.hosts)
        ]
        self.runs = [NodeRun(i) for i in range(plan.nodes)]
        self.started = time.monotonic()
        self.race_start: dict[int, float] = {}  # node -> when its round 1 started
        self.race_end: dict[int, tuple[float, int]] = {}  # node -> when its round 1 ended, and its last frame
        self.seen: dict[int, float] = {}  # node -> its newest event
        self.stopped: set[int] = set()  # SIGSTOPped now
        self.fired: set[int] = set()  # nodes a harness fault (stop, kill) reached
        self.hung: set[int] = set()
        self.peers: dict[int, PeerId] = {}  # node -> PeerId, as the host's room told it
        self.applied: list[str] = []
        self.race_started = trio.Event()
        self.countdown = trio.Event()
        self.work_dir = Path()
        self.block = block
        spectating = plan.faults.spectators
        self.spectator_runs = [NodeRun(i) for i in range(spectating.count if spectating else 0)]
        self.spectator_seen: dict[int, float] = {}
        self.spectator_fired: set[int] = set()
        self.spectator_hung: set[int] = set()
        self.hostile_run = NodeRun(0) if plan.faults.hostile is not None else None
        self.nursery: trio.Nursery | None = None

    @staticmethod
    def _impairment(links: LinkTrouble, seed: int) -> Impairment:
        return Impairment(delay_ms=links.delay_ms, jitter_ms=links.jitter_ms,
                          bandwidth_bytes_per_s=links.bandwidth_bytes_per_s, seed=seed)

    def note(self, text: str) -> None:
        self.applied.append(f"{time.monotonic() - self.started:6.1f} s  {text}")

    def extra(self, index: int) -> list[str]:
        """Node ``index``'s own options: its address and its proxy's (over TCP), its mode and its ``--fault``."""
        args = ["--mode", self.plan.modes[index]]
        if self.plan.faults.transport is LinkTransport.TCP:
            proxy = self.proxies[index].address
            assert proxy is not None
            args += ["--listen", f"{self.hosts[index]}:{NODE_PORT}", "--advertise", str(proxy)]
        fault = self.plan.faults.node_fault
        if index == 0 and self.plan.faults.hostile is not None:
            args += ["--max-players", str(self.plan.nodes + 1)]  # a seat for the hostile member beside the nodes
        return args + (fault.option() if fault is not None and fault.node == index else [])

    def on_event(self, index: int, event: dict[str, Any]) -> None:
        now = time.monotonic()
        self.seen[index] = now
        kind = event.get("event")
        if kind == "race-start" and event.get("round") == 0 and index not in self.race_start:
            self.race_start[index] = now
            self.race_started.set()
        elif kind == "round-end" and event.get("round") == 0 and isinstance(event.get("frame"), int):
            self.race_end.setdefault(index, (now, event["frame"]))
        elif kind == "room-created":
            self.peers[0] = event["host"]
        elif kind == "member-joined" and str(event.get("nickname", "")).startswith("node"):
            self.peers[int(event["nickname"][4:])] = event["peer"]
        elif kind == "countdown":
            self.countdown.set()

    async def at(self, node: int | None, at_s: float) -> None:
        """Wait until ``at_s`` seconds into the race of ``node`` (None: of the first node to start)."""
        await self.race_started.wait()
        while node is not None and node not in self.race_start:
            await trio.sleep(0.05)
        start = self.race_start[node] if node is not None else min(self.race_start.values())
        await trio.sleep(max(0.0, start + at_s - time.monotonic()))

    def realtime_ratio(self, node: int) -> float | None:
        """Frames ``node`` simulated per second from GO to the end of its round, divided by real time's 60
        (whatever its frames per tick: a pump that steps N frames a tick ticks 60/N times a second); None
        when it did not race its round to the end."""
        if node not in self.race_start or node not in self.race_end:
            return None
        ended, frames = self.race_end[node]
        seconds = ended - self.race_start[node]
        return round(frames / seconds / FPS, 3)  # real time, whatever the frames per tick if seconds > 0 else None

    def _process(self, node: int) -> trio.Process | None:
        process = self.runs[node].process
        return process if process is not None and process.returncode is None else None

    async def stop(self) -> None:
        stop = self.plan.faults.stop
        assert stop is not None
        await self.at(stop.node, stop.at_s)
        process = self._process(stop.node)
        if process is None:
            return
        process.send_signal(signal.SIGSTOP)
        self.stopped.add(stop.node)
        self.fired.add(stop.node)
        self.note(f"SIGSTOP node{stop.node} for {stop.seconds} s")
        try:
            await trio.sleep(stop.seconds)
        finally:
            if self._process(stop.node) is not None:
                process.send_signal(signal.SIGCONT)
            self.stopped.discard(stop.node)
            self.seen[stop.node] = time.monotonic()
            self.note(f"SIGCONT node{stop.node}")

    async def kill(self) -> None:
        kill = self.plan.faults.kill
        assert kill is not None
        await self.at(kill.node, kill.at_s)
        process = self._process(kill.node)
        if process is not None:
            process.kill()
            self.fired.add(kill.node)
            self.note(f"SIGKILL node{kill.node}")

    async def hiccups(self) -> None:
        async with trio.open_nursery() as nursery:
            for hiccup in self.plan.faults.links.hiccups:
                async def one(h: Hiccup = hiccup) -> None:
                    await self.at(None, h.at_s)
                    self.proxies[h.node].stall(h.seconds)
                nursery.start_soon(one)

    async def tamper(self) -> None:
        """Arm the flip on the proxy of the node second in PeerId order once the room is locked (its
        mesh links are dialled after the countdown; the room's own links are older and untouched),
        and disarm it as soon as a byte was flipped (or a second into the race), so that the link
        dialled again after the refusal is not flipped too."""
        tamper = self.plan.faults.tamper
        assert tamper is not None
        await self.countdown.wait()
        if len(self.peers) < self.plan.nodes:
            self.note("tamper not armed: the room did not name every node")
            return
        target = sorted(self.peers, key=self.peers.__getitem__)[1]
        proxy = self.proxies[target]
        clean = proxy.impairments[Direction.UP]
        proxy.set(Direction.UP, replace(clean, flip_offsets=(tamper.offset,)))
        self.note(f"flip armed: byte {tamper.offset} of the link into node{target}")
        with trio.move_on_after(TAMPER_ARMED_S):
            while proxy.stats.flipped[Direction.UP] == 0:
                await trio.sleep(0.01)
        proxy.set(Direction.UP, clean)
        self.note(f"flip disarmed after {proxy.stats.flipped[Direction.UP]} flipped byte(s)")

    def _tasks(self) -> trio.Nursery:
        assert self.nursery is not None, "the race's nursery is set before any process starts"
        return self.nursery

    # ---- the hostile member (profile hostile-ready) ---------------------------------------------------

    async def room_open(self, room: dict[str, Any]) -> None:
        """``run_demo``'s ``room_open``: the spectators and the hostile member, before any joiner."""
        await self.start_spectators(room)
        await self.start_hostile(room)

    async def start_hostile(self, room: dict[str, Any]) -> None:
        """Start the hostile member on the participant invitation and wait until it declared Ready once."""
        run, hostile = self.hostile_run, self.plan.faults.hostile
        if run is None or hostile is None:
            return
        argv = [sys.executable, "-m", "open4wd_node.faults.hostile", room["invite"], "--data-dir",
                str(self.work_dir / "hostile"), "--seconds", str(hostile.seconds)]
        self._tasks().start_soon(run_node, argv, run, lambda _, event: None)
        with trio.move_on_after(START_WAIT_S):
            while run.last("hostile-declared") is None and (run.process is not None or run.returncode is None):
                await trio.sleep(0.05)
        self.note("hostile member " + ("declared Ready" if run.last("hostile-declared") else "did not declare Ready"))

    def stop_hostile(self) -> None:
        """The nodes ended: a hostile member still trying (barred at the door) is stopped."""
        run = self.hostile_run
        if run is not None and run.process is not None and run.process.returncode is None:
            run.process.terminate()
            self.note("hostile member stopped after the race")

    # ---- spectators (profile spectators) -------------------------------------------------------------

    def on_spectator_event(self, index: int, event: dict[str, Any]) -> None:
        self.spectator_seen[index] = time.monotonic()

    async def start_spectators(self, room: dict[str, Any]) -> None:
        """``run_demo``'s ``room_open``: start every spectator on the host's spectator invitation and wait
        until each is admitted (its ``joined`` event), before any joiner starts."""
        invite = room.get("invites", {}).get("spectator")
        if not self.spectator_runs:
            return
        if invite is None:
            self.note("no spectator invitation in the host's room-created event")
            return
        for run in self.spectator_runs:
            argv = cli_command(self.work_dir / f"spectator{run.index}") + [
                "watch", invite, "--listen", f"{self.block}.{SPECTATOR_HOST + run.index}:0", "--json"]
            self._tasks().start_soon(run_node, argv, run, self.on_spectator_event)
        with trio.move_on_after(START_WAIT_S):
            for run in self.spectator_runs:
                while run.last("joined") is None and (run.process is not None or run.returncode is None):
                    await trio.sleep(0.05)
        self.note(f"spectators admitted: {sum(r.last('joined') is not None for r in self.spectator_runs)} "
                  f"of {len(self.spectator_runs)}")

    async def spectator_fault(self) -> None:
        spectating = self.plan.faults.spectators
        assert spectating is not None and spectating.fault is not None
        fault = spectating.fault
        await self.at(None, fault.at_s)
        process = self.spectator_runs[fault.spectator].process
        if process is None or process.returncode is not None:
            return
        self.spectator_fired.add(fault.spectator)
        if fault.kind is SpectatorFaultKind.KILL:
            process.kill()
            self.note(f"SIGKILL spectator{fault.spectator}")
            return
        process.send_signal(signal.SIGSTOP)
        self.note(f"SIGSTOP spectator{fault.spectator} for {fault.seconds} s")
        try:
            await trio.sleep(fault.seconds)
        finally:
            if process.returncode is None:
                process.send_signal(signal.SIGCONT)
            self.spectator_seen[fault.spectator] = time.monotonic()
            self.note(f"SIGCONT spectator{fault.spectator}")

    def _spectators_running(self) -> list[NodeRun]:
        """The spectators whose ``run_node`` has not recorded an end yet. Not the process's own
        ``returncode``: that turns up as soon as the process exits, while ``run_node`` may still be reading
        its last output; stopping the race then would leave the run without an exit status, a hang."""
        return [r for r in self.spectator_runs if r.process is not None]

    async def spectators_end(self) -> None:
        """After the last node: wait for every spectator to end; one still running after
        ``SPECTATOR_GRACE_S`` is hung."""
        with trio.move_on_after(SPECTATOR_GRACE_S):
            while self._spectators_running():
                await trio.sleep(0.1)
        late = self._spectators_running()
        if late:
            self.spectator_hung.update(r.index for r in late)
            self.note(f"hung: {', '.join(f'spectator{r.index}' for r in late)} after the race")

    # ---- the hang watch --------------------------------------------------------------------------------

    async def watch(self, cancel: Callable[[], None]) -> None:
        """Call hung any running node or spectator silent (and not stopped by us) for ``NO_PROGRESS_S``, or
        every running node at the race's limit; then stop the race."""
        limit = self.started + race_limit_s(self.plan)
        stopped_spectator = set()
        while True:
            await trio.sleep(1.0)
            now = time.monotonic()
            running = [r.index for r in self.runs if r.process is not None and r.process.returncode is None]
            silent = [i for i in running if i not in self.stopped and now - self.seen.get(i, self.started) > NO_PROGRESS_S]
            fault = self.plan.faults.spectators.fault if self.plan.faults.spectators else None
            if fault is not None and fault.kind is SpectatorFaultKind.STOP and fault.spectator in self.spectator_fired:
                stopped_spectator = {fault.spectator}
            quiet = [r.index for r in self._spectators_running() if r.index not in stopped_spectator
                     and now - self.spectator_seen.get(r.index, self.started) > NO_PROGRESS_S]
            if silent or quiet or (running and now > limit):
                self.hung.update(silent if silent or quiet else running)
                self.spectator_hung.update(quiet)
                self.note("hung: " + ", ".join([f"node{i}" for i in sorted(self.hung)]
                                               + [f"spectator{i}" for i in sorted(self.spectator_hung)]))
                cancel()
                return

    @property
    def flipped(self) -> int:
        return sum(p.stats.flipped[Direction.UP] for p in self.proxies)


def demo_options(plan: RacePlan) -> DemoOptions:
    """The demo's options for the race ``plan`` says (each node's own mode is its extra ``--mode``), over
    TCP or, for ``webrtc`` and ``turn``, WebRTC with or without coturn."""
    transport = plan.faults.transport
    return DemoOptions(nodes=plan.nodes, rounds=1, laps=plan.laps, mode=plan.modes[0], seed=plan.seed,
                       track=plan.track, time_limit_s=plan.race_seconds, frames_per_tick=plan.frames_per_tick,
                       transport="tcp" if transport is LinkTransport.TCP else "webrtc",
                       turn=transport is LinkTransport.TURN)


async def _race(plan: RacePlan, work_dir: Path, block: str) -> tuple[_Harness, str | None]:
    harness = _Harness(plan, block)
    harness.work_dir = work_dir
    options = demo_options(plan)
    failure: str | None = None
    async with trio.open_nursery() as nursery:
        harness.nursery = nursery
        for proxy in harness.proxies:
            await nursery.start(proxy.run)
        faults = plan.faults
        tasks: list[Callable[[], Awaitable[None]]] = [harness.hiccups]
        tasks += [harness.stop] if faults.stop else []
        tasks += [harness.kill] if faults.kill else []
        tasks += [harness.tamper] if faults.tamper else []
        tasks += [harness.spectator_fault] if faults.spectators and faults.spectators.fault else []
        for task in tasks:
            nursery.start_soon(task)
        with trio.CancelScope() as race_scope:
            nursery.start_soon(harness.watch, race_scope.cancel)
            try:
                await run_demo(options, work_dir, harness.on_event, harness.extra, harness.runs,
                               room_open=harness.room_open)
            except* UserError as group:  # run_demo's own or its services': the room never formed
                exc = _first(group)
                failure = f"{exc.code}: {exc.message}"
            harness.stop_hostile()
            await harness.spectators_end()
        nursery.cancel_scope.cancel()
    return harness, failure


def _first(group: BaseExceptionGroup[UserError]) -> UserError:
    """The first error of ``group``, however deep its nurseries nested it."""
    found: BaseException = group
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    assert isinstance(found, UserError)
    return found


def _loopback_block() -> str:
    """A /24 of 127.0.0.0/8 for this race's nodes, drawn at random (not from the plan: two races running at
    once, or a race and its repro, must not share one)."""
    rng = random.SystemRandom()
    return f"127.{rng.randint(64, 254)}.{rng.randint(0, 255)}"


def _observe_node(harness: _Harness, run: NodeRun, node_dir: Path) -> NodeObservation:
    """What node ``run`` did (``_observe``)."""
    observation = _observe(run, node_dir, peer=harness.peers.get(run.index), hung=run.index in harness.hung,
                           fired=run.index in harness.fired or any(e.get("event") == "fault" for e in run.events))
    observation.realtime_ratio = harness.realtime_ratio(run.index)
    return observation


def _observe(run: NodeRun, node_dir: Path, *, peer: PeerId | None = None, hung: bool = False,
             fired: bool = False) -> NodeObservation:
    """What the process of ``run`` (a node or a spectator) did, from its events, exit status and
    stderr (written to ``node_dir``): ``hung`` and ``fired`` are the harness's."""
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in run.events))
    (node_dir / "stderr.log").write_text(run.stderr)
    result = run.last("result") or {}
    frames = [e["frame"] for e in run.events if isinstance(e.get("frame"), int)]
    error = ERROR_LINE.search(run.stderr)
    return NodeObservation(
        index=run.index, peer=peer, returncode=run.returncode,
        outcome=result.get("outcome"), agreed=result.get("agreed_hashes", 0),
        disagreements=result.get("disagreements", result.get("mismatches", 0)),  # a spectator counts mismatches
        disagree_frames=[e["frame"] for e in run.events if e.get("event") == "checksum" and not e["agreed"]],
        last_frame=max(frames, default=-1), traceback="Traceback (most recent call last)" in run.stderr,
        error=f"{error[1]}: {error[2]}" if error else None, hung=hung, fault_fired=fired,
        link_tampered="link-tampered" in run.stderr,
        link_paths=tuple(sorted({e["path"] for e in run.events if e.get("event") == "link-path" and "path" in e})),
    )


def _replay(observation: NodeObservation, node_dir: Path) -> None:
    """Replay the node's race log with ``open4wd-node replay`` (a short log is no failure: the killed
    node's ends where it was killed) and read its final state hash."""
    logs = sorted(node_dir.glob("races/*.o4wlog"))
    if not logs:
        return
    command = [sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(node_dir), "replay", str(logs[0]),
               "--json", "--allow-incomplete"]
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {}
    observation.replay_ok = done.returncode == 0 and report.get("ok") is True
    observation.replay_status = report.get("status")
    if not observation.replay_ok:
        error = ERROR_LINE.search(done.stderr)
        observation.replay_error = f"{error[1]}: {error[2]}" if error else f"replay exited {done.returncode}"
    try:
        observation.final_hash = next((r.record["stateHash"] for r in LogReader(logs[0]) if r.record.get("kind") == "round-end"),
                                      None)
    except UserError:
        observation.final_hash = None  # a damaged log: replay has said so


def _hostile_seen(harness: _Harness, work_dir: Path) -> HostileSeen | None:
    """What the hostile member did and what the room decided about it (the host's ``room-decision``s)."""
    run = harness.hostile_run
    if run is None:
        return None
    observation = _observe(run, work_dir / "hostile")
    host_peer = harness.peers.get(0)
    decisions = [e for e in harness.runs[0].events if e.get("event") == "room-decision" and e.get("participant") != host_peer]
    declared = max((e.get("count", 0) for e in run.events if e.get("event") == "hostile-declared"), default=0)
    return HostileSeen(observation, declared, [str(d.get("decision")) for d in decisions],
                       any(d.get("removed") for d in decisions))


def _curves(runs: list[NodeRun]) -> dict[str, list[list[int]]]:
    return {f"node{r.index}": [[e["frame"], e["lag"], e["rollback"]] for e in r.events
                               if e.get("event") == "progress" and e.get("round") == 0] for r in runs}


def _pack(work_dir: Path) -> bytes:
    """The race directory as tar.gz, without the nodes' derived caches (rebuilt from the built-ins)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(work_dir.rglob("*")):
            relative = path.relative_to(work_dir)
            if path.is_file() and "cache" not in relative.parts and relative.name != "identity.key":
                tar.add(path, arcname=str(relative))
    return buffer.getvalue()


def share_derived_cache(work_dir: Path, processes: list[str], cache: Path) -> None:
    """Give the processes of a race (their data directories under ``work_dir``) one derived cache, ``cache``:
    each one's ``<data-dir>/cache`` is a link to it. The built-in assets are then baked by the first node
    that starts, not again by every node and every replay; each entry is named by what it was derived from,
    written atomically and checked by ``sim_core`` when it is read, so a shared entry is the one each would
    have made (and a bad one is rebuilt, never trusted)."""
    cache.mkdir(parents=True, exist_ok=True)
    for name in processes:
        (work_dir / name).mkdir(parents=True, exist_ok=True)
        (work_dir / name / "cache").symlink_to(cache, target_is_directory=True)


def run_race(plan: RacePlan, work_dir: Path, cache: Path | None = None) -> RaceResult:
    """Run one race in ``work_dir`` (created, and removed afterwards) and judge it (module docstring). Its
    node and spectator processes share the derived cache ``cache`` (default: one of the race's own;
    ``share_derived_cache``)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    spectating = plan.faults.spectators
    share_derived_cache(work_dir, [f"node{i}" for i in range(plan.nodes)]
                        + [f"spectator{i}" for i in range(spectating.count if spectating else 0)], cache or work_dir / "cache")
    try:
        (work_dir / "plan.json").write_text(json.dumps(plan.to_json(), indent=1))
        harness, failure = trio.run(_race, plan, work_dir, _loopback_block())
        nodes = []
        for run in harness.runs:
            node_dir = work_dir / f"node{run.index}"
            observation = _observe_node(harness, run, node_dir)
            _replay(observation, node_dir)
            nodes.append(observation)
        spectators = []
        for run in harness.spectator_runs:
            spectator_dir = work_dir / f"spectator{run.index}"
            observation = _observe(run, spectator_dir, hung=run.index in harness.spectator_hung,
                                   fired=run.index in harness.spectator_fired)
            _replay(observation, spectator_dir)
            spectators.append(observation)
        hostile = _hostile_seen(harness, work_dir)
        verdict = classify(plan, nodes, failure, harness.flipped, spectators, hostile)
        runs = harness.runs
        results = [r.last("result") or {} for r in runs]
        finished = [res for res in results if res.get("outcome") == "finished"]
        result = RaceResult(
            plan=plan, verdict=verdict, nodes=nodes, frames=max((n.last_frame for n in nodes), default=-1),
            agreed_hashes=min((res["agreed_hashes"] for res in finished), default=0),
            worst_lag=max((res.get("max_lag", 0) for res in results), default=0),
            rollbacks=sum(res.get("rollbacks", 0) for res in results),
            max_rollback=max((res.get("max_rollback", 0) for res in results), default=0),
            elapsed_s=round(time.monotonic() - started, 1), faults_applied=harness.applied, curves=_curves(runs),
            spectators=spectators,
        )
        if verdict.race_class is not RaceClass.AGREED:
            result.page = race_page(work_dir, nodes)
        (work_dir / "verdict.json").write_text(json.dumps(result.row(), indent=1))
        if verdict.race_class is not RaceClass.AGREED:
            result.kept = _pack(work_dir)
        return result
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


