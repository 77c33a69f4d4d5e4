"""A match over the race mesh: the runner, the mesh, the frame pump, the round's world, the race log and replay."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Driver": "driver",
    "FrameObserver": "driver",
    "EndReason": "log",
    "LogReader": "log",
    "LogRecord": "log",
    "LogStatus": "log",
    "RaceLogWriter": "log",
    "encode_record": "log",
    "end_record": "log",
    "Mesh": "mesh",
    "FramePump": "pump",
    "ReplayReport": "replay",
    "replay": "replay",
    "unfinished": "replay",
    "MatchReport": "runner",
    "MatchRunner": "runner",
    "RaceOptions": "runner",
    "context_warnings": "state_files",
    "read_state_file": "state_files",
    "state_differences": "state_files",
    "write_state_file": "state_files",
    "WorldAdapter": "world",
    "build_round_world": "world",
    "chip_skills": "world",
    "round_seed": "world",
})
