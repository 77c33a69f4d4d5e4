"""The event list of docs/node.md ("Events"): every event a node prints, with its keys (optional ones in
brackets), read from the doc's table so that tests hold the doc and the code to each other."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "node.md"


@dataclass(frozen=True)
class DocumentedEvent:
    name: str
    keys: frozenset[str]  # every key the event may have
    optional: frozenset[str]  # the keys one view of it leaves out


def documented_events() -> dict[str, DocumentedEvent]:
    """The rows of the table under "## Events", by event name."""
    section = DOC.read_text().split("\n## Events\n", 1)[1].split("\n## ", 1)[0]
    events: dict[str, DocumentedEvent] = {}
    for line in section.splitlines():
        row = re.fullmatch(r"\| `([a-z-]+)` \| (.+?) \| .+ \|", line)
        if row is None:
            continue
        keys = re.findall(r"(\[?)`([a-z_]+)`\]?", row[2])
        assert row[1] not in events, f"{row[1]} is listed twice"
        events[row[1]] = DocumentedEvent(row[1], frozenset(k for _, k in keys), frozenset(k for b, k in keys if b))
    return events


def assert_documented(name: str, data: dict) -> None:
    """A printed event (its name and JSON keys, ``event`` aside) is one the doc lists, with listed keys."""
    documented = documented_events().get(name)
    assert documented is not None, f"the event {name!r} is printed but not in docs/node.md's list"
    keys = set(data) - {"event"}
    assert keys <= documented.keys, f"{name}: keys {sorted(keys - documented.keys)} are not documented"
    assert documented.keys - documented.optional <= keys, f"{name}: documented keys are missing"
