"""Draws a node's ``LiveBoard``: a rich table on a terminal, plain lines elsewhere.

The room phase shows the members, their version checks, who is ready, the notices and the countdown;
the race shows one row per car (position, lap, progress, status) under a line with this node's frame,
lag, rollbacks and last checksum vote. Rounds are 1-based here, as in every readable text.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from open4wd_node.view.events import round_text, short, vote_verdict
from open4wd_node.view.live_model import BudgetLine, CarLine, CarStatus, LiveBoard, RaceLine, VoteLine
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


def car_name(car: CarLine) -> str:
    """A car as the table names it: short PeerId, nickname, and ``(you)`` for this node's."""
    return " ".join(part for part in (short(car.peer), car.name, "(you)" if car.me else "") if part)


def budget_text(budget: BudgetLine) -> str:
    """The budget line: CPU per frame and the parts that take it, e.g.
    ``CPU 0.62 ms/frame · verify 38% · link 22% · shell 20% · simulation 12% · codec 6%``; a pump that
    steps several frames per wake-up says so (``CPU 0.45 ms/frame (2 frames/tick) · …``)."""
    parts = "".join(f" · {part} {pct:.0f}%" for part, pct in budget.shares)
    ticks = f" ({budget.frames_per_tick} frames/tick)" if budget.frames_per_tick > 1 else ""
    return f"CPU {budget.per_frame_us / 1000:.2f} ms/frame{ticks}{parts}"


def race_lines(race: RaceLine) -> list[str]:
    """The race as plain lines."""
    lines = [f"── {race_header(race)}"]
    if race.cpu is not None:
        lines.append(f"   {budget_text(race.cpu)}")
    for car in race.cars:
        lines.append(f"   {car.position}. {car_name(car):<22} lap {car.lap}/{car.laps}  {car.progress_pct:>3}%  "
                     f"{car.status.value}")
    return lines


def race_table(race: RaceLine) -> RenderableType:
    """The race as a rich table with progress bars and coloured statuses."""
    table = Table(expand=False)
    for column, justify in (("pos", "right"), ("car", "left"), ("lap", "right"), ("progress", "left"),
                            ("status", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for car in race.cars:
        filled = car.progress_pct * BAR_CELLS // 100
        bar = Text("█" * filled + "░" * (BAR_CELLS - filled) + f" {car.progress_pct:>3}%")
        table.add_row(str(car.position), Text(car_name(car), style="bold" if car.me else ""), f"{car.lap}/{car.laps}",
                      bar, Text(car.status.value, style=STATUS_STYLE[car.status]))
    header = [Text(race_header(race), style="bold")]
    if race.cpu is not None:
        header.append(Text(budget_text(race.cpu), style="dim"))
    return Group(*header, table)


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
