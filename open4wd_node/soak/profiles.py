"""The soak's fault profiles as typed data: what each race of a profile does to its nodes and links.

A profile is a recipe; ``draw_faults`` turns it into one race's concrete ``Faults`` from that race's own
seeded generator, so the same race seed always gives the same faults (``soak repro``). The faults act
only through the product's own means: the impairment proxy in front of every node
(``open4wd_node.net.impair``), the node's ``--fault`` option, signals to its process (SIGSTOP and
SIGCONT, SIGKILL), for ``spectators`` the ``open4wd-node watch`` processes the race starts beside its
nodes and signals to them, and for ``webrtc`` and ``turn`` what the nodes link over (``LinkTransport``: the
local signaling service, and coturn, the race starts for them). docs/soak.md describes each profile and
the outcome its rules document.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from open4wd_node.runtime.errors import UserError


class Profile(StrEnum):
    """A soak profile: the kind of trouble its races meet."""

    CLEAN = "clean"
    LATENCY = "latency"
    JITTER_LOSS = "jitter-loss"
    STALL = "stall"
    KILL = "kill"
    DISCONNECT = "disconnect"
    CORRUPT = "corrupt"
    TAMPER = "tamper"
    SPECTATORS = "spectators"
    PARTITION = "partition"
    HOSTILE_READY = "hostile-ready"
    THIN_LINK = "thin-link"
    WEBRTC = "webrtc"
    TURN = "turn"


def parse_profiles(text: str) -> tuple[Profile, ...]:
    """``clean,stall,…`` (or ``all``) as profiles, in the order given, each once; ``UserError``
    ``soak-invalid`` naming the allowed ones for anything else."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == ["all"]:
        return tuple(Profile)
    chosen: list[Profile] = []
    for name in names:
        if name not in Profile.__members__.values():
            raise UserError("soak-invalid", f"--profiles takes a comma list of {', '.join(Profile)} (or all), got {name[:40]!r}")
        if Profile(name) not in chosen:
            chosen.append(Profile(name))
    if not chosen:
        raise UserError("soak-invalid", f"--profiles names no profile; choose among {', '.join(Profile)} (or all)")
    return tuple(chosen)


@dataclass(frozen=True)
class Hiccup:
    """The proxy in front of ``node`` forwards nothing, both ways, for ``seconds`` from ``at_s`` seconds
    into the race: a burst of delay, as a lossy link's retransmissions give TCP."""

    node: int
    at_s: float
    seconds: float


@dataclass(frozen=True)
class LinkTrouble:
    """What every proxy does to both directions of every link: delay ± jitter (ms), a bandwidth cap
    (bytes per second, None: none), and the hiccups."""

    delay_ms: int = 0
    jitter_ms: int = 0
    bandwidth_bytes_per_s: int | None = None
    hiccups: tuple[Hiccup, ...] = ()


@dataclass(frozen=True)
class NodeStop:
    """SIGSTOP ``node`` at ``at_s`` seconds into its race, SIGCONT ``seconds`` later."""

    node: int
    at_s: float
    seconds: float


@dataclass(frozen=True)
class NodeKill:
    """SIGKILL (kill -9) ``node`` at ``at_s`` seconds into its race."""

    node: int
    at_s: float


@dataclass(frozen=True)
class NodeFault:
    """The node's own ``--fault``: ``corrupt-state@FRAME``, ``disconnect@FRAME:SECONDS`` or
    ``cut-link@FRAME:SECONDS``."""

    node: int
    kind: str  # "corrupt-state", "disconnect" or "cut-link"
    frame: int
    seconds: int = 0

    def option(self) -> list[str]:
        """The node's command-line option."""
        spec = f"{self.kind}@{self.frame}" + (f":{self.seconds}" if self.kind != "corrupt-state" else "")
        return ["--fault", spec]


@dataclass(frozen=True)
class Tamper:
    """Flip the byte at ``offset`` of one race-mesh link's stream, in the direction from the dialling
    node: the link through the proxy of the node second in PeerId order, which exactly one peer (the
    first) dials (docs/node.md, race mesh). Known only once the room named every node."""

    offset: int


class LinkTransport(StrEnum):
    """What a race's links run over."""

    TCP = "tcp"  # TCP + Noise: every node listens on its own loopback address, behind its impairment proxy
    WEBRTC = "webrtc"  # no node listens: WebRTC through a local signaling service, host candidates on 127.0.0.1
    TURN = "turn"  # the same, every node relay-only (``--reachability relay``) through a local coturn


class SpectatorFaultKind(StrEnum):
    """What happens to one spectator process mid-race."""

    STOP = "stop"  # SIGSTOP, SIGCONT ``seconds`` later
    KILL = "kill"  # SIGKILL


@dataclass(frozen=True)
class SpectatorFault:
    """Spectator ``spectator`` is stopped or killed ``at_s`` seconds into the race."""

    spectator: int
    kind: SpectatorFaultKind
    at_s: float
    seconds: float = 0.0


@dataclass(frozen=True)
class Spectators:
    """``count`` ``open4wd-node watch`` processes follow the race (admitted before any joiner starts, as a
    spectator must be before the match starts); ``fault`` stops or kills one of them."""

    count: int
    fault: SpectatorFault | None = None


@dataclass(frozen=True)
class Hostile:
    """A hostile member (``python -m open4wd_node.faults.hostile``) joins the room as it opens, before any
    joiner, and declares Ready with a car every honest node refuses, again and again, for ``seconds``."""

    seconds: int


@dataclass(frozen=True)
class Faults:
    """Everything one race meets; an empty ``Faults()`` is a clean race."""

    links: LinkTrouble = field(default_factory=LinkTrouble)
    stop: NodeStop | None = None
    kill: NodeKill | None = None
    node_fault: NodeFault | None = None
    tamper: Tamper | None = None
    transport: LinkTransport = LinkTransport.TCP
    spectators: Spectators | None = None
    hostile: Hostile | None = None

    @property
    def partition(self) -> bool:
        """Whether the race's one fault is a cut of one link (profile ``partition``)."""
        return self.node_fault is not None and self.node_fault.kind == "cut-link"

    @property
    def victim(self) -> int | None:
        """The one node a fault singles out (stopped, killed, corrupted, cut off), if any."""
        for fault in (self.stop, self.kill, self.node_fault):
            if fault is not None:
                return fault.node
        return None

    def to_json(self) -> dict[str, Any]:
        """As plain JSON (``report.json``, the race's ``plan.json``)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Faults:
        """The inverse of ``to_json``."""
        links = dict(data["links"])
        links["hiccups"] = tuple(Hiccup(**h) for h in links["hiccups"])
        return cls(
            links=LinkTrouble(**links),
            stop=NodeStop(**data["stop"]) if data["stop"] else None,
            kill=NodeKill(**data["kill"]) if data["kill"] else None,
            node_fault=NodeFault(**data["node_fault"]) if data["node_fault"] else None,
            tamper=Tamper(**data["tamper"]) if data["tamper"] else None,
            transport=LinkTransport(data.get("transport", LinkTransport.TCP)),  # .get: plans of before
            spectators=_spectators_from_json(data.get("spectators")),
            hostile=Hostile(**data["hostile"]) if data.get("hostile") else None,
        )


def _spectators_from_json(data: dict[str, Any] | None) -> Spectators | None:
    if not data:
        return None
    fault = data["fault"]
    return Spectators(data["count"], SpectatorFault(fault["spectator"], SpectatorFaultKind(fault["kind"]), fault["at_s"],
                                                    fault["seconds"]) if fault else None)


FAULT_WINDOW_S = (2.0, 8.0)
"""When a stop or a kill comes, in seconds of race: early enough that the rules it sets off (a 10 s
link timeout, a 15 s reconnect window) decide before a 1-lap soak race ends."""
MAX_SPECTATORS = 2
THIN_LINK_BYTES_PER_S = 32 * 1024
"""Profile ``thin-link``: every direction of every link carries at most this many bytes a second."""
PARTITION_SECONDS = (3, 10)
HOSTILE_SECONDS = 120
"""Profile ``hostile-ready``: how long the hostile member keeps trying (it stops sooner once barred)."""
"""Profile ``partition``: how long the one link stays cut."""
FAULT_FRAMES = (120, 480)
"""Where a ``--fault`` fires, in frames of round 1: a corruption then leaves time for the three
checksum votes (every 120 frames) that vote the corrupted node out."""


def draw_faults(profile: Profile, rng: random.Random, nodes: int, race_seconds: int) -> Faults:
    """One race's faults of ``profile`` for ``nodes`` nodes, drawn from ``rng`` (the race's own)."""
    def moment() -> float:
        return round(rng.uniform(*FAULT_WINDOW_S), 2)

    if profile is Profile.LATENCY:
        return Faults(links=LinkTrouble(delay_ms=50, jitter_ms=30))
    if profile is Profile.JITTER_LOSS:
        delay = rng.randint(5, 40)
        hiccups: list[Hiccup] = []
        for node in range(nodes):
            at = rng.uniform(1.0, 4.0)
            while at < race_seconds:
                hiccups.append(Hiccup(node, round(at, 2), round(rng.uniform(0.1, 0.8), 2)))
                at += rng.uniform(2.0, 6.0)
        return Faults(links=LinkTrouble(delay_ms=delay, jitter_ms=delay,
                                        bandwidth_bytes_per_s=rng.randint(24, 96) * 1024, hiccups=tuple(hiccups)))
    if profile is Profile.STALL:
        return Faults(stop=NodeStop(rng.randrange(nodes), moment(), round(rng.uniform(1.0, 10.0), 2)))
    if profile is Profile.KILL:
        return Faults(kill=NodeKill(rng.randrange(nodes), moment()))
    if profile is Profile.DISCONNECT:
        return Faults(node_fault=NodeFault(rng.randrange(nodes), "disconnect", rng.randint(*FAULT_FRAMES), rng.randint(2, 20)))
    if profile is Profile.PARTITION:
        return Faults(node_fault=NodeFault(rng.randrange(nodes), "cut-link", rng.randint(*FAULT_FRAMES),
                                           rng.randint(*PARTITION_SECONDS)))
    if profile is Profile.HOSTILE_READY:
        return Faults(hostile=Hostile(HOSTILE_SECONDS))
    if profile is Profile.THIN_LINK:
        return Faults(links=LinkTrouble(bandwidth_bytes_per_s=THIN_LINK_BYTES_PER_S))
    if profile is Profile.CORRUPT:
        return Faults(node_fault=NodeFault(rng.randrange(nodes), "corrupt-state", rng.randint(*FAULT_FRAMES)))
    if profile is Profile.TAMPER:
        return Faults(tamper=Tamper(rng.randint(2_000, 40_000)))
    if profile is Profile.WEBRTC:
        return Faults(transport=LinkTransport.WEBRTC)
    if profile is Profile.TURN:
        return Faults(transport=LinkTransport.TURN)
    if profile is Profile.SPECTATORS:
        count = rng.randint(1, MAX_SPECTATORS)
        kind = rng.choice((None, *SpectatorFaultKind))
        fault = None if kind is None else SpectatorFault(rng.randrange(count), kind, moment(), round(
            rng.uniform(1.0, 10.0), 2) if kind is SpectatorFaultKind.STOP else 0.0)
        return Faults(spectators=Spectators(count, fault))
    return Faults()
