"""The fuzzing invariant and the pieces every target shares.

A target is a function of one input (``bytes``). Whatever the input, the target may return or raise a
``CodedError`` (the project's one refusal type: ``PeerError``, ``LocalError``, ``SimError``,
``UserError``); anything else that escapes is a finding. ``check`` runs one input under a per-input
time limit (SIGALRM: a hang becomes ``InputTimedOut``, a finding too); memory is bounded by the
campaign (``RLIMIT_AS`` here, ``-rss_limit_mb`` under atheris), where running out is a ``MemoryError``
finding rather than a dead machine.

Multi-message targets read their input as frames (``frames``): ``u16 length ‖ bytes``, repeated, the
last frame taking whatever is left, so that a mutator can change one message and keep the others.
"""

from __future__ import annotations

import random
import resource
import signal
import struct
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from open4wd_base.errors import CodedError

T = TypeVar("T")
CORPUS_ROOT = Path(__file__).parent / "corpus"
INPUT_TIME_LIMIT_S = 10.0  # per input; only a hang reaches it (the slowest door, a bake, takes ~0.1 s)
WARM_UP_TIME_LIMIT_S = 300.0  # a door's first input, which also builds its fixtures (worlds, stores, handshakes)
MEMORY_LIMIT_BYTES = 2 << 30  # address space of a campaign process
MAX_INPUT_BYTES = 256 * 1024  # what the mutator grows an input to, at most


def scratch_dir(door: str) -> Path:
    """A door's working directory for the life of this process, made on first use and removed when the
    process exits: a door that reads real files (a store, a config, a race log) writes them here, so a
    campaign or a test run leaves nothing behind in the system's temporary directory. (A process ended
    by ``os._exit``, as libFuzzer ends one on a crash, skips the removal.)"""
    if door not in _SCRATCH:
        _SCRATCH[door] = tempfile.TemporaryDirectory(prefix=f"open4wd-fuzz-{door}-")
    return Path(_SCRATCH[door].name)


_SCRATCH: dict[str, tempfile.TemporaryDirectory[str]] = {}  # held, so each is removed at exit and not before


@dataclass(frozen=True)
class Target:
    """One door: its name (also its corpus folder under ``fuzz/corpus``) and its one-input function."""

    name: str
    one_input: Callable[[bytes], object]
    doc: str

    @property
    def corpus_dir(self) -> Path:
        """Where its seed inputs are committed."""
        return CORPUS_ROOT / self.name

    def seeds(self) -> list[bytes]:
        """Its committed seed inputs, in name order (reproducible)."""
        return [p.read_bytes() for p in sorted(self.corpus_dir.glob("*")) if p.is_file()]


class InputTimedOut(Exception):
    """An input ran past ``INPUT_TIME_LIMIT_S`` (a hang, or work not bounded by the input's size)."""


@dataclass
class Finding:
    """An input that broke the invariant, with what escaped."""

    target: str
    data: bytes
    error: BaseException

    def describe(self) -> str:
        """One line: the target, what escaped and the input's size."""
        return f"{self.target}: {type(self.error).__name__}: {self.error} ({len(self.data)} bytes)"


def frames(data: bytes) -> Iterator[bytes]:
    """Split an input into frames: ``u16be length ‖ bytes`` repeated; a short tail is one last frame."""
    offset = 0
    while offset < len(data):
        if offset + 2 > len(data):
            yield data[offset:]
            return
        (length,) = struct.unpack_from(">H", data, offset)
        yield data[offset + 2 : offset + 2 + length]
        offset += 2 + length


def join_frames(parts: list[bytes]) -> bytes:
    """The inverse of ``frames`` (seeds are written with it)."""
    return b"".join(struct.pack(">H", len(p)) + p for p in parts)


def coded(call: Callable[..., T], *args: Any) -> T | None:
    """``call(*args)``, with a ``CodedError`` (an expected refusal) turned into None."""
    try:
        return call(*args)
    except CodedError:
        return None


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise InputTimedOut(f"the input ran longer than {INPUT_TIME_LIMIT_S:g} s")


def check(target: Target, data: bytes, time_limit_s: float = INPUT_TIME_LIMIT_S) -> Finding | None:
    """Run one input; the ``Finding`` when anything but a ``CodedError`` escapes or it runs too long."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit_s)
    try:
        target.one_input(data)
    except CodedError:
        return None
    except (Exception, RecursionError, InputTimedOut) as exc:
        return Finding(target.name, data, exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return None


def warm_up(target: Target) -> Finding | None:
    """Run the door's first seed once under ``WARM_UP_TIME_LIMIT_S``: a door builds its fixtures (a world
    of the built-in round, an asset store, a handshake) on its first input, seconds of CPU that a loaded
    machine can stretch past the per-input limit; once built they are shared, and every input, this seed
    included, then runs under ``INPUT_TIME_LIMIT_S``. The ``Finding`` if the seed itself breaks the invariant."""
    seeds = target.seeds()
    return check(target, seeds[0] if seeds else b"", WARM_UP_TIME_LIMIT_S)


def bound_memory(limit: int = MEMORY_LIMIT_BYTES) -> None:
    """Cap this process's address space for a campaign (a runaway allocation is a MemoryError finding)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))


_INTERESTING = (b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\xcf" + b"\xff" * 8,
                b"\xdd\xff\xff\xff\xff", b"1e999999999999", b"-0", b"NaN", b"\xed\xa0\x80", b"[[[[[[[[", b"{}", b'""')


def mutate(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """One to four mutations of ``data`` (flip, set, insert, delete, copy, splice with another input,
    interesting values): the seeded mutator of the smoke runs and of campaigns without atheris."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(7)
        at = rng.randint(0, len(out))
        if choice == 0 and out:
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
        elif choice == 1 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice == 2:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif choice == 3 and out:
            del out[at : at + rng.randint(1, 16)]
        elif choice == 4 and out:
            start = rng.randrange(len(out))
            out[at:at] = out[start : start + rng.randint(1, 32)]
        elif choice == 5 and pool:
            other = rng.choice(pool)
            cut = rng.randint(0, len(other))
            out = out[:at] + bytearray(other[cut:])
        else:
            out[at:at] = rng.choice(_INTERESTING)
    return bytes(out[:MAX_INPUT_BYTES])


@dataclass
class RunReport:
    """What one run of the seeded mutator did."""

    target: str
    executions: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)


def run_mutator(target: Target, executions: int, seed: int, time_limit_s: float = INPUT_TIME_LIMIT_S,
                stop_at_first: bool = False) -> RunReport:
    """Every seed once, then mutations of seeds and of inputs that were refused late, up to ``executions``
    inputs in all; bounded by work, reproducible from ``seed``."""
    rng = random.Random(f"{target.name}/{seed}")
    pool = target.seeds() or [b""]
    report = RunReport(target.name)
    started = time.perf_counter()
    warm = warm_up(target)
    if warm is not None:
        report.findings.append(warm)
        if stop_at_first:
            report.seconds = time.perf_counter() - started
            return report
    for index in range(executions):
        data = pool[index] if index < len(pool) else mutate(rng.choice(pool), rng, pool)
        finding = check(target, data, time_limit_s)
        report.executions += 1
        if finding is not None:
            report.findings.append(finding)
            if stop_at_first:
                break
        elif index >= len(pool) and len(pool) < 256 and rng.random() < 0.02:
            pool.append(data)  # keep a few survivors: deeper inputs to mutate next
    report.seconds = time.perf_counter() - started
    return report
