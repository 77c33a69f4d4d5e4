"""Draws a node's ``LiveBoard``: a rich table on a terminal, plain lines elsewhere.

The room phase shows the members, their version checks, who is ready, the notices and the countdown;
the race shows one row per car (marker, position, lap, progress, status) under a line with this node's
frame, lag, rollbacks and last checksum vote, and on a terminal beside the table the track from above with
every car as its marker (``track_picture``; under the table when the terminal is too narrow). Rounds are
1-based here, as in every readable text.
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from open4wd_node.events.text import round_text, short, vote_verdict
from open4wd_node.view.live_model import BudgetLine, CarStatus, LiveBoard, RaceLine, VoteLine, car_label
from open4wd_node.view.race_picture import car_colour, marker_text
from open4wd_node.view.track_picture import MIN_COLS, TrackPicture
from open4wd_node.view.room_view import RoomSummary, render

STATUS_STYLE = {
    CarStatus.RACING: "green", CarStatus.FINISHED: "bold cyan", CarStatus.DNF: "yellow",
    CarStatus.DISABLED: "yellow", CarStatus.RETIRED: "yellow", CarStatus.RECONNECTING: "magenta",
    CarStatus.LEFT: "red", CarStatus.DESYNC: "bold red",
}
BAR_CELLS = 20


def vote_text(vote: VoteLine | None) -> str:
    """The newest checksum vote in words."""
    if vote is None:
        return "no vote yet"
    if vote.agreed:
        return f"agreed at frame {vote.frame}"
    return f"DISAGREED at frame {vote.frame} ({vote_verdict(vote.outvoted)})"


def race_header(race: RaceLine) -> str:
    """The line above the race table: round, state, frame, lag, rollbacks, last vote."""
    state = "over" if race.over else "racing"
    return (f"{round_text(race.round_index)} of {race.rounds} · {state} · frame {race.frame} · lag {race.lag} · "
            f"rollbacks {race.rollbacks} · last vote: {vote_text(race.vote)}")


def budget_text(budget: BudgetLine) -> str:
    """The budget line: CPU per frame and the parts that take it, e.g.
    ``CPU 2.56 ms/frame · link 47% · shell 24% · step 20% · messages 5% · input 4%``; a pump that steps
    several frames per wake-up says so after the figure (``… ms/frame (2 frames/tick) · …``)."""
    parts = "".join(f" · {part} {pct:.0f}%" for part, pct in budget.shares)
    ticks = f" ({budget.frames_per_tick} frames/tick)" if budget.frames_per_tick > 1 else ""
    return f"CPU {budget.per_frame_us / 1000:.2f} ms/frame{ticks}{parts}"


def race_lines(race: RaceLine) -> list[str]:
    """The race as plain lines."""
    lines = [f"── {race_header(race)}"]
    if race.cpu is not None:
        lines.append(f"   {budget_text(race.cpu)}")
    for car in race.cars:
        lines.append(f"   {car.position}. {car_label(car):<22} lap {car.lap}/{car.laps}  {car.progress_pct:>3}%  "
                     f"{car.status.value}")
    return lines


class Beside:
    """Two renderables side by side when the width allows both (``right`` at least ``right_min`` cells),
    else one under the other. Each side is rendered once, to lines, and the lines joined: the left one at
    its own width (a table that does not expand), which says how much is left for the right one (a grid
    would measure and lay out the table again at every draw)."""

    def __init__(self, left: RenderableType, right: RenderableType, right_min: int, gap: int = 2) -> None:
        self.left, self.right, self.right_min, self.gap = left, right, right_min, gap

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        left = console.render_lines(self.left, options, pad=False)  # a table not expanded keeps its own width
        left_width = max((Segment.get_line_length(line) for line in left), default=0)
        right_width = options.max_width - left_width - self.gap
        if right_width < self.right_min:
            for line in left:
                yield from line
                yield Segment.line()
            yield self.right
            return
        right = console.render_lines(self.right, options.update_width(right_width), pad=False)
        gap = Segment(" " * self.gap)
        for i in range(max(len(left), len(right))):
            line = left[i] if i < len(left) else []
            yield from line
            if i < len(right):
                yield Segment(" " * (left_width - Segment.get_line_length(line)))
                yield gap
                yield from right[i]
            yield Segment.line()


def race_table(race: RaceLine) -> RenderableType:
    """The race as a rich table with progress bars and coloured statuses, each car's row led by its marker
    on the track picture beside the table (``track_picture``)."""
    table = Table(expand=False)
    for column, justify in (("pos", "right"), ("car", "left"), ("lap", "right"), ("progress", "left"),
                            ("status", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for car in race.cars:
        filled = car.progress_pct * BAR_CELLS // 100
        bar = Text("█" * filled + "░" * (BAR_CELLS - filled) + f" {car.progress_pct:>3}%")
        name = Text.assemble((marker_text(car.slot), f"bold {car_colour(car.slot)}"), " ",
                             (car_label(car), "bold" if car.me else ""))
        status = Text(car.status.value, style=STATUS_STYLE[car.status])
        table.add_row(str(car.position), name, f"{car.lap}/{car.laps}", bar, status)
    header = [Text(race_header(race), style="bold")]
    if race.cpu is not None:
        header.append(Text(budget_text(race.cpu), style="dim"))
    body: RenderableType = table if race.picture is None else Beside(table, TrackPicture(race.picture), MIN_COLS)
    return Group(*header, body)


def room_table(room: RoomSummary, notices: list[str], countdown_s: int | None) -> RenderableType:
    """The room as a rich table, its notices and (once the start is locked) the countdown."""
    table = Table(expand=False)
    for column in ("member", "name", "seat", "versions"):
        table.add_column(column)
    for m in room.members:
        table.add_row(short(m.peer) + (" (host)" if m.host else ""), m.nickname,
                      Text(m.seat, style="green" if m.seat == "READY" else ""),
                      Text(m.check, style="bold red" if m.check.startswith("INCOMPATIBLE") else ""))
    parts: list[RenderableType] = [Text(room.header, style="bold"), table]
    parts += [Text(f"notice {n}", style="yellow") for n in notices]
    if countdown_s is not None:
        parts.append(Text(f"start locked: racing in {countdown_s} s", style="bold"))
    return Group(*parts)


def board_renderable(board: LiveBoard, now_ms: int) -> RenderableType | None:
    """The race once one is watched, the room before; None until the room's first state."""
    race = board.race()
    if race is not None:
        return race_table(race)
    room = board.room()
    return None if room is None else room_table(room, board.notices, board.countdown_s(now_ms))


def board_lines(board: LiveBoard) -> list[str]:
    """The plain view (no escape codes): the race, or the room with its notices (the countdown and
    every notice also arrive as event lines)."""
    race = board.race()
    if race is not None:
        return race_lines(race)
    room = board.room()
    return [] if room is None else render(room)
