"""A room over real links: the driver of the sans-IO room machines, hosting and joining, notices."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "LinkOutbox": "driver",
    "RoomDriver": "driver",
    "RoomOutcome": "driver",
    "SuccessionPlan": "driver",
    "read_player_commands": "driver",
    "NoticeBoard": "notice_board",
    "HostOptions": "session",
    "JoinOptions": "session",
    "host_room": "session",
    "join_room": "session",
})
