"""The local control API: a game UI watches the race and presses skills over localhost TCP, JSON lines.

One JSON object per line each way (docs/drivers.md has the whole protocol). Client → node: ``subscribe``
(topics ``frames``, ``standings``, ``events``), ``press`` (an Event skill, used at the next frame) and
``hold`` (a Hold skill on/off). Node → client: ``hello`` on connect and at each new round, ``ack`` for
every accepted request, ``frame``, ``standings``, ``event``, and ``error`` with a stable code for a bad
request. A client can never stall the race: the publisher only queues into a bounded per-client outbox
and a client whose outbox is full is disconnected; a bad request costs an error line, never the node.

The shell runs ``serve`` in its nursery, uses ``server.driver`` as the node's ``Driver``, calls
``publish_frame(world, slot)`` after each step and ``publish_event(event, data)`` for what it emits. A
new world (a new round) is noticed by whichever sees it first, the driver or ``publish_frame``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import trio

from open4wd_node.runtime.errors import UserError
from open4wd_node.drivers.external import ExternalDriver
from open4wd_node.net.outbox import Outbox, flush
from open4wd_node.race.world import chip_skills
from sim_core.specs.inputs import SkillEvent
from sim_core.world import World
from sim_core.errors import SimError
from sim_core.specs.inputs import SKILLS, validate_events
from protocol.identity.keys import PeerId

API_VERSION = 1
TOPICS = ("frames", "standings", "events")
MAX_LINE_BYTES = 4096
OUTBOX_MESSAGES = 256
MAX_CLIENTS = 8
FLUSH_SECONDS = 1  # after a client's end of input, how long its queued replies may take to go out


def _line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), default=str).encode() + b"\n"


def _error(code: str, message: str) -> bytes:
    return _line({"type": "error", "code": code, "message": message})


class _Client:
    """One connection: its topics and its bounded outbox (drained by its writer task)."""

    def __init__(self, outbox: int) -> None:
        self.topics: frozenset[str] = frozenset()
        self.outbox: Outbox[bytes] = Outbox(outbox)
        self.scope = trio.CancelScope()
        self.closed = False

    def queue(self, line: bytes) -> None:
        """Queue without waiting; a full outbox means the client does not keep up: drop it."""
        if not self.outbox.put(line) and not self.closed:
            self.scope.cancel()


class ControlServer:
    """Serves the control API on ``host:port`` (``port`` 0 picks a free port; ``serve`` reports it).

    ``frame_every`` / ``standings_every``: publish a frame / the standings when at least that many frames
    passed since the last one sent (and again after a rollback or a new round).
    """

    def __init__(self, *, peer: PeerId, host: str = "127.0.0.1", port: int = 0, frame_every: int = 1,
                 standings_every: int = 30, outbox: int = OUTBOX_MESSAGES, max_clients: int = MAX_CLIENTS) -> None:
        self.peer, self.host, self.port = peer, host, port
        self.frame_every, self.standings_every = frame_every, standings_every
        self.outbox, self.max_clients = outbox, max_clients
        self.driver = ExternalDriver(on_world=self._follow)
        self._clients: list[_Client] = []
        self._world: World | None = None
        self._slot: int | None = None
        self._skills: tuple[str, ...] = ()
        self._sent: dict[str, int | None] = {"frames": None, "standings": None}  # topic -> frame last published

    @property
    def client_count(self) -> int:
        """Control clients connected now."""
        return len(self._clients)

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``await nursery.start(server.serve)`` returns the bound port.

        Raises ``UserError`` ``control-port-unavailable`` when the address cannot be bound."""
        try:
            listeners = await trio.open_tcp_listeners(self.port, host=self.host)
        except OSError as exc:
            raise UserError("control-port-unavailable",
                            f"cannot listen on {self.host}:{self.port} for the control API ({exc.strerror or exc}); "
                            "choose another port, or 0 for a free one") from None
        self.host, self.port = listeners[0].socket.getsockname()[:2]
        task_status.started(self.port)
        await trio.serve_listeners(self._connection, listeners)

    async def flush(self, timeout_s: float) -> None:
        """Let every client receive what is queued for it (the last events of a match) before stopping."""
        await flush([c.outbox for c in self._clients], timeout_s)

    # -- publishing (sync, never waits) -----------------------------------------------------------------

    def publish_frame(self, world: World, slot: int) -> None:
        """Call after each step with this node's world and its car's slot; rates apply here."""
        self._follow(world, slot)
        frame = world.frame
        if self._due("frames", frame, self.frame_every):
            car: dict[str, int | str | None] = {k: v for k, v in world.car_state(slot).items() if "." not in k}
            car["disable_reason"] = world.disable_reason(slot)
            self._publish("frames", {"type": "frame", "frame": frame, "slot": slot, "car": car})
        if self._due("standings", frame, self.standings_every):
            self._publish("standings", {"type": "standings", "frame": frame, "standings": world.standings()})

    def publish_event(self, event: str, data: Mapping[str, Any]) -> None:
        """Forward one node event (the names and fields of the ``--json`` events)."""
        message = {"type": "event", "event": event}
        message.update((k, v) for k, v in data.items() if k not in message)
        self._publish("events", message)

    def _follow(self, world: World, slot: int) -> None:
        """A new round (or car), seen first by a publish or by the driver: tell every client its slot and
        skills; holds and presses start afresh."""
        if world is self._world and slot == self._slot:
            return
        self._world, self._slot = world, slot
        chip = chip_skills(world, slot)
        self._skills = tuple(s for s in SKILLS if s in chip)
        self._sent = {"frames": None, "standings": None}
        self.driver.reset()
        hello = self._hello()
        for client in self._clients:
            client.queue(hello)

    def _due(self, topic: str, frame: int, every: int) -> bool:
        last = self._sent[topic]
        if not any(topic in c.topics for c in self._clients):
            return False
        if last is not None and last <= frame < last + every:
            return False
        self._sent[topic] = frame
        return True

    def _publish(self, topic: str, message: Mapping[str, Any]) -> None:
        readers = [c for c in self._clients if topic in c.topics]
        if readers:
            line = _line(message)
            for client in readers:
                client.queue(line)

    def _hello(self) -> bytes:
        return _line({"type": "hello", "api": API_VERSION, "peer": self.peer, "slot": self._slot,
                      "skills": list(self._skills), "topics": list(TOPICS)})

    # -- connections ----------------------------------------------------------------------------------

    async def _connection(self, stream: trio.SocketStream) -> None:
        if len(self._clients) >= self.max_clients:
            try:
                await stream.send_all(_error("too-many-clients", f"at most {self.max_clients} control clients"))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            await trio.aclose_forcefully(stream)
            return
        client = _Client(self.outbox)
        self._clients.append(client)
        try:
            with client.scope:
                client.queue(self._hello())
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._write, stream, client)
                    await self._read(stream, client)
                    # the client is done sending: its holds end now, the replies already queued still go out
                    self._leave(client)
                    nursery.cancel_scope.deadline = trio.current_time() + FLUSH_SECONDS
        finally:
            self._leave(client)
            await trio.aclose_forcefully(stream)

    def _leave(self, client: _Client) -> None:
        if client in self._clients:
            self._clients.remove(client)
            self.driver.release(client)
            client.closed = True
            client.outbox.close()

    @staticmethod
    async def _write(stream: trio.SocketStream, client: _Client) -> None:
        try:
            await client.outbox.drain(stream.send_all)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            client.scope.cancel()

    async def _read(self, stream: trio.SocketStream, client: _Client) -> None:
        """Split lines of at most ``MAX_LINE_BYTES``; a longer line is refused and skipped to its end."""
        buffer = bytearray()
        skipping = False
        while True:
            try:
                data = await stream.receive_some(MAX_LINE_BYTES)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not data:
                return
            buffer += data
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end]).rstrip(b"\r")
                del buffer[:end + 1]
                if skipping:
                    skipping = False
                elif len(line) > MAX_LINE_BYTES:
                    client.queue(_error("line-too-long", f"a request line may be at most {MAX_LINE_BYTES} bytes"))
                elif line.strip():
                    client.queue(self._request(client, line))
            if len(buffer) > MAX_LINE_BYTES:
                if not skipping:
                    client.queue(_error("line-too-long", f"a request line may be at most {MAX_LINE_BYTES} bytes"))
                skipping = True
                buffer.clear()

    # -- requests --------------------------------------------------------------------------------------

    def _request(self, client: _Client, line: bytes) -> bytes:
        """Apply one request line; the reply is an ``ack`` or a coded ``error``."""
        try:
            request = json.loads(line)
        except ValueError as exc:  # also bad UTF-8
            return _error("bad-json", f"not valid JSON: {exc}")
        except RecursionError:
            return _error("bad-json", "JSON nested too deeply")
        if not isinstance(request, dict):
            return _error("bad-request", 'a request is a JSON object such as {"op": "subscribe", "topics": ["frames"]}')
        op = request.get("op")
        if op == "subscribe":
            return self._subscribe(client, request)
        if op in ("press", "hold"):
            return self._skill(client, op, request)
        return _error("unknown-op", f"unknown op {op!r}; one of subscribe, press, hold")

    @staticmethod
    def _subscribe(client: _Client, request: dict[str, Any]) -> bytes:
        topics = request.get("topics")
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            return _error("bad-request", "subscribe needs topics: a list of topic names")
        unknown = [t for t in topics if t not in TOPICS]
        if unknown:
            return _error("unknown-topic", f"unknown topic {unknown[0]!r}; topics are {', '.join(TOPICS)}")
        client.topics = frozenset(topics)
        return _line({"type": "ack", "op": "subscribe", "topics": [t for t in TOPICS if t in client.topics]})

    def _skill(self, client: _Client, op: str, request: dict[str, Any]) -> bytes:
        skill, on = request.get("skill"), request.get("on")
        hold = op == "hold"
        if not isinstance(skill, str) or hold and not isinstance(on, bool):
            if hold:
                return _error("bad-request", 'hold needs "skill": a skill name, and "on": true or false')
            return _error("bad-request", 'press needs "skill": a skill name')
        if self._slot is None:
            return _error("no-race", "no round is running yet; skills are accepted once the race starts")
        try:
            validate_events([SkillEvent(skill, op == "hold")], self._skills, self._slot)
        except SimError as exc:
            if exc.code == "input-hold-mismatch":
                other = "press" if op == "hold" else "hold"
                return _error(exc.code, f"{skill} is {'an Event' if op == 'hold' else 'a Hold'} skill: use op {other}")
            return _error(exc.code, exc.message)
        if op == "press":
            self.driver.press(skill)
            return _line({"type": "ack", "op": "press", "skill": skill})
        self.driver.hold(client, skill, bool(on))  # ``on`` is a bool (checked above)
        return _line({"type": "ack", "op": "hold", "skill": skill, "on": on})
