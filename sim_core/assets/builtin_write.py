"""Write or compare the generated built-ins and their ``SHA256SUMS`` list in a directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sim_core.assets.builtin_gen import generate
from sim_core.assets.builtins import DIGEST_FILE


def render() -> dict[str, bytes]:
    """File name → bytes for the 27 GLBs plus the digest list, in a fixed order."""
    files = {f"{stem}.glb": data for stem, data in generate().items()}
    sums = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in files.items())
    return {**files, DIGEST_FILE: sums.encode("ascii")}


def write_builtins(target: Path) -> list[str]:
    """Generate the built-ins and their digest list into ``target`` (created if missing); the names written."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in render().items():
        (target / name).write_bytes(data)
        written.append(name)
    return written


def check_builtins(target: Path) -> list[str]:
    """Names whose shipped bytes differ from a fresh generation (missing files included)."""
    return [name for name, data in render().items() if not (target / name).is_file() or (target / name).read_bytes() != data]
