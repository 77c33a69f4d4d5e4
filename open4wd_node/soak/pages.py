"""The replay page of a kept race (``replay.html`` in the race's directory), which ``report.html`` links.

Made in the race's task, beside its files, so that a remote worker's page comes home packed with them:
from the race log of the first node whose log replayed (a majority node's, in a race that split), else
the first node that left a log, with every node's saved states (the split frame's first differing
fields). An agreed race keeps no files, so it gets no page (docs/soak.md, "Report").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from open4wd_base.errors import CodedError
from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.assets.store import AssetStore
from open4wd_node.runtime.config import NodeConfig
from open4wd_node.soak.classify import NodeObservation
from open4wd_node.view.replay_film import ReplayVerdict
from open4wd_node.view.replay_page import write_replay_page

PAGE = "replay.html"


def race_page(work_dir: Path, nodes: Sequence[NodeObservation]) -> dict[str, str]:
    """Write the race's page; the row's fields that say where it is (``replay_page``, relative to the kept
    race's directory, and ``replay_page_node``) or why there is none (``replay_page_error``)."""
    for node in sorted(nodes, key=lambda n: (n.replay_ok is not True, n.index)):
        node_dir = work_dir / f"node{node.index}"
        logs = sorted(node_dir.glob("races/*.o4wlog"))
        if logs:
            break
    else:
        return {"replay_page_error": "no node left a race log"}
    verdict = (ReplayVerdict(True, f"{node.replay_status}, every recorded hash reproduced") if node.replay_ok
               else ReplayVerdict(False, node.replay_error or "the log was not verified"))
    try:
        write_replay_page(logs[0], work_dir / PAGE, NodeRoomAssets(AssetStore.in_data_dir(node_dir), NodeConfig()),
                          verdict, [work_dir])
    except CodedError as exc:
        return {"replay_page_error": f"{exc.code}: {exc.message}"}
    return {"replay_page": PAGE, "replay_page_node": f"node{node.index}"}
