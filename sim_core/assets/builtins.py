"""The shipped built-in assets: refs ``builtin:<type>-NN`` / ``builtin:track-NN``, bytes checked against
the shipped digest list before use (builtin-assets.md §3: trust comes from SHA-256, not from the path).
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources

from sim_core.assets import constants as C
from sim_core.assets.admission import AdmittedAsset, admit_cached
from sim_core.errors import SimError

PREFIX = "builtin:"
DIGEST_FILE = "SHA256SUMS"
ARCHETYPES = ("speed", "heavy", "control")
TRACK_THEMES = ("practice", "speed", "combat")
BUILTIN_STEMS: tuple[str, ...] = tuple(f"{t}-{n:02d}" for t in C.PART_TYPES for n in (1, 2, 3)) + (
    "track-01",
    "track-02",
    "track-03",
)
BUILTIN_REFS: tuple[str, ...] = tuple(PREFIX + s for s in BUILTIN_STEMS)


def is_builtin_ref(ref: str) -> bool:
    """Whether ``ref`` names a built-in (``builtin:…``); it may still be an unknown one (``stem_of``)."""
    return ref.startswith(PREFIX)


def stem_of(ref: str) -> str:
    """The file stem of a known built-in ref; ``SimError`` (``unknown-builtin``, naming the allowed refs) otherwise."""
    stem = ref[len(PREFIX) :] if ref.startswith(PREFIX) else None
    if stem not in BUILTIN_STEMS:
        raise SimError(
            "unknown-builtin",
            f"{ref!r} is not a built-in; known: builtin:<type>-01…03 for {', '.join(C.PART_TYPES)} and builtin:track-01…03",
        )
    return stem


def type_of(ref: str) -> str:
    """The asset type of a built-in ref (``chassis`` … ``weapon``, ``track``); ``SimError`` (``unknown-builtin``)
    for a ref that names no built-in."""
    return stem_of(ref).rsplit("-", 1)[0]


def describe(ref: str) -> str:
    """The built-in's theme in words: its archetype (speed, heavy, control) or track theme (practice,
    speed, combat); ``SimError`` (``unknown-builtin``) for a ref that names no built-in."""
    stem = stem_of(ref)
    kind, number = stem.rsplit("-", 1)
    return (TRACK_THEMES if kind == "track" else ARCHETYPES)[int(number) - 1]


@functools.cache
def _data_dir() -> resources.abc.Traversable:
    return resources.files("sim_core").joinpath("data/builtin")


@functools.cache
def shipped_digests() -> dict[str, str]:
    """file name → SHA-256 hex from the shipped ``SHA256SUMS`` (sha256sum format)."""
    out = {}
    for line in _data_dir().joinpath(DIGEST_FILE).read_text(encoding="ascii").splitlines():
        digest, name = line.split(maxsplit=1)
        out[name.lstrip("*")] = digest
    return out


def builtin_bytes(ref: str) -> bytes:
    """The shipped GLB of a built-in, refused unless its SHA-256 matches the digest list."""
    return _checked_builtin(ref)[0]


def _checked_builtin(ref: str) -> tuple[bytes, str]:
    """The shipped bytes and their SHA-256, which equals the digest list's entry."""
    name = stem_of(ref) + ".glb"
    try:
        data = _data_dir().joinpath(name).read_bytes()
    except OSError as exc:
        raise SimError("builtin-missing",
                       f"built-in file {name} is not installed ({exc.strerror}); reinstall open4wd-node") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != shipped_digests().get(name):
        raise SimError("builtin-digest-mismatch",
                       f"built-in file {name} does not match its shipped SHA-256; reinstall open4wd-node")
    return data, digest


def admitted_builtin(ref: str) -> AdmittedAsset:
    """A built-in through the same admission as any stranger's asset (no fast path): its bytes are read
    and checked on every call, and what admission concluded about them comes from the cache."""
    data, digest = _checked_builtin(ref)
    return admit_cached(data, digest)
