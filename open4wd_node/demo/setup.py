"""What a demo is (``DemoOptions``) and whether it can run (``prepare``), checked before any node starts.

Kept apart from the running (``demo.py``, trio and processes) so that a refused option costs only the
imports its check needs: the asset pipeline, to resolve the track as the host will.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from open4wd_node.assets.store import AssetStore
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.errors import UserError
from open4wd_node.assets.room_assets import NodeRoomAssets
from protocol.errors import ProtocolError
from protocol.room.config import DURATION_DEFAULT_S, MatchConfig
from sim_core.assets.builtins import is_builtin_ref
from sim_core.assets.convert import track_spec
from sim_core.specs.track import TrackSpec


@dataclass(frozen=True)
class DemoOptions:
    """A demo: how many nodes race how many rounds and laps, in which mode and with how many frames per
    pump tick, with which seeds, on which track, and optionally which node corrupts its state at which
    frame of round 1."""

    nodes: int = 4
    rounds: int = 1
    laps: int = 1
    mode: str = "rollback"
    frames_per_tick: int = 1  # every node's (docs/node.md "Frames per tick")
    seed: int = 0
    corrupt: tuple[int, int] | None = None  # (node, frame)
    track: str = "builtin:track-02"
    time_limit_s: int = DURATION_DEFAULT_S  # each round's (the soak shortens it)
    transport: str = "tcp"  # what the nodes link over (``open4wd_node.demo.transport``)
    turn: bool | None = None  # over webrtc: every link through a local coturn (None: where coturn is installed)


def prepare(options: DemoOptions, ctx: NodeContext) -> Path:
    """Check what the nodes would refuse, then create the run's directory (returned): no node has
    started yet, and a refused option leaves nothing behind."""
    config = _match_config(options, ctx)
    _check_corrupt(options, config)
    root = ctx.data_dir / "demo"
    try:
        root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=root))
    except OSError as exc:
        raise UserError("demo-data-dir-unwritable",
                        f"cannot create the demo's node directories under {root}: {exc.strerror}; "
                        "give --data-dir a writable directory") from None


def _match_config(options: DemoOptions, ctx: NodeContext) -> MatchConfig:
    """The host's own check of its track (it resolves as a track), made with the store the host will
    have: a fresh node's, which holds the built-ins only."""
    if not is_builtin_ref(options.track):
        raise UserError("demo-track-invalid", f"--track {options.track}: every demo node starts with an empty "
                                              "asset store, so the demo races on built-in tracks only (builtin:track-NN)")
    try:
        config = MatchConfig.uniform(options.track, options.rounds, options.laps, options.time_limit_s)
        _assets(ctx).track_digests(config)
    except ProtocolError as exc:
        raise UserError("demo-track-invalid", f"--track: {exc.message}") from None
    return config


def _assets(ctx: NodeContext) -> NodeRoomAssets:
    """The assets a fresh node has: the built-ins only."""
    return NodeRoomAssets(AssetStore.in_data_dir(ctx.data_dir), ctx.config)


def track_spec_of(options: DemoOptions, ctx: NodeContext) -> TrackSpec:
    """The demo's track as the nodes race it (after ``prepare`` accepted it): what its picture is drawn on."""
    return track_spec(_assets(ctx).resolve(options.track), track_id=options.track, lap_count=options.laps,
                      time_limit_s=options.time_limit_s)


def _check_corrupt(options: DemoOptions, config: MatchConfig) -> None:
    """The corrupted node is one of the demo's, and the frame one that round 1 can reach (its time
    limit): a later one would never fire, and the demo would wait for a leave that cannot come."""
    if options.corrupt is None:
        return
    node, frame = options.corrupt
    frames = config.rounds[0].duration_limit_s * 60
    if not 0 <= node < options.nodes or not 0 <= frame < frames:
        raise UserError("demo-invalid", f"--corrupt {node}@{frame}: NODE is one of 0..{options.nodes - 1} and FRAME "
                                        f"a frame of round 1, 0..{frames - 1} (its {config.rounds[0].duration_limit_s} s limit)")
