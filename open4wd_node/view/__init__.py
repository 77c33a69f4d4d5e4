"""What a node shows its user beside its event lines: the live view, the race's pictures and pages."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "LiveConsole": "live_console",
    "Screen": "live_console",
    "View": "live_console",
    "showing": "live_console",
    "CarLine": "live_model",
    "CarStatus": "live_model",
    "LiveBoard": "live_model",
    "RaceLine": "live_model",
    "BudgetLine": "live_model",
    "budget_line": "live_model",
    "VoteLine": "live_model",
    "progress_pct": "live_model",
    "board_lines": "live_render",
    "board_renderable": "live_render",
    "car_label": "live_model",
    "race_header": "live_render",
    "budget_text": "live_render",
    "race_lines": "live_render",
    "race_table": "live_render",
    "room_table": "live_render",
    "vote_text": "live_render",
    "MemberLine": "room_view",
    "RoomSummary": "room_view",
    "render": "room_view",
    "summarize": "room_view",
})
