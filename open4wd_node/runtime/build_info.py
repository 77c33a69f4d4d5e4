"""This node's own six-field version record, and what its build produced.

Every wheel's build stamps ``open4wd_node/build_record.json`` into the package (``setup.py``): the modules
it compiled, or why it compiled none, and the git commit of the checkout it was built from. The record is
what ``open4wd-node version`` shows and where the version record's ``commit_hash`` comes from. A node run
from its sources (an editable install, a checkout on the path) has no record: it is pure Python, and its
commit is ``unknown`` unless ``$OPEN4WD_COMMIT_HASH`` says otherwise.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import sim_core
from open4wd_base.errors import LocalError
from protocol.versions.record import ClientVersionInfo, node_version_info
from sim_core.compiled import COMPILED_MODULES, compiled_modules

COMMIT_ENV = "OPEN4WD_COMMIT_HASH"
RECORD_NAME = "build_record.json"


@dataclass(frozen=True)
class BuildRecord:
    """What the build of this install produced (``setup.py`` writes it)."""

    compiled: tuple[str, ...]
    """The modules the build compiled (``sim_core.compiled.COMPILED_MODULES``, or none)."""
    not_compiled_because: str | None
    """Why the build compiled nothing (``OPEN4WD_COMPILE=0``, no C compiler, …); None when it compiled."""
    commit: str | None
    """The git commit the build was made from (``-dirty`` with local changes); None outside a git checkout."""
    built_at_ms: int

    def to_json(self) -> dict[str, object]:
        """The record as ``version --build`` prints it."""
        return {"compiled": list(self.compiled), "not_compiled_because": self.not_compiled_because,
                "commit": self.commit, "built_at_ms": self.built_at_ms}


def build_record() -> BuildRecord | None:
    """This install's build record; None when the node runs from its sources (no build wrote one).
    ``LocalError`` ``build-record-invalid`` when the record is there but unreadable: a damaged install."""
    path = files("open4wd_node") / RECORD_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        raw = json.loads(text)
        compiled, why_not, commit, built = raw["compiled"], raw["not_compiled_because"], raw["commit"], raw["built_at_ms"]
        if (not isinstance(compiled, list) or not all(isinstance(m, str) for m in compiled)
                or not isinstance(why_not, (str, type(None))) or not isinstance(commit, (str, type(None)))
                or type(built) is not int):
            raise TypeError("a field has the wrong type")
    except (ValueError, KeyError, TypeError) as exc:
        raise LocalError("build-record-invalid", f"{path} is damaged ({exc}): reinstall open4wd-node") from None
    return BuildRecord(tuple(compiled), why_not, commit, built)


def compiled_summary() -> str:
    """One line on which parts run compiled in this process, and why not when none do."""
    running = compiled_modules()
    if running:
        whole = "all" if len(running) == len(COMPILED_MODULES) else f"{len(running)} of {len(COMPILED_MODULES)}"
        return f"the simulation's frame ({whole} of its {len(COMPILED_MODULES)} modules, mypyc); everything else interpreted"
    record = build_record()
    why = "run from the sources" if record is None else (record.not_compiled_because or "the compiled modules are missing")
    return f"nothing: pure Python ({why})"


def commit_hash() -> str:
    """``$OPEN4WD_COMMIT_HASH`` when set, else the commit the build record names, else ``unknown``."""
    record = build_record()
    return os.environ.get(COMMIT_ENV) or (record.commit if record is not None and record.commit else "unknown")


def build_timestamp_ms() -> int:
    """Diagnostic only (never compared): when this install was built (its record), or when its sources were
    written (a node run from its sources)."""
    record = build_record()
    return record.built_at_ms if record is not None else int(Path(__file__).stat().st_mtime * 1000)


def own_version_info(economy_config_version: int) -> ClientVersionInfo:
    """This node's version record for the room's compatibility check: the engine id and the
    configured governance epoch, plus diagnostics (build time, commit)."""
    return node_version_info(
        engine_id=sim_core.ENGINE_ID,
        economy_config_version=economy_config_version,
        build_timestamp=build_timestamp_ms(),
        commit_hash=commit_hash(),
    )
