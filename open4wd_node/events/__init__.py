"""What a node tells its user: the typed events (the shell's beside the room's and the race's), the one
sink they go to, their JSON and readable forms, and the round a live view watches."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "CpuReading": "round_watch",
    "PumpLag": "round_watch",
    "RoundWatch": "round_watch",
    "EventSink": "sink",
    "event_json": "sink",
    "event_text": "text",
    "round_text": "text",
    "short": "text",
    "status_text": "text",
    "vote_verdict": "text",
    "EVENT_CLASSES": "vocabulary",
    "InRound": "vocabulary",
    "NodeEvent": "vocabulary",
    "ShellEvent": "vocabulary",
})
