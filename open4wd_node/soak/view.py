"""The soak's progress on a terminal: a rich progress bar over the races, with the count of each class."""

from __future__ import annotations

from collections import Counter
from types import TracebackType
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from open4wd_node.soak.classify import RaceClass
from open4wd_node.soak.report import CLASS_COLOURS


class SoakProgress:
    """``with SoakProgress(rows_already_done, races) as p: ... p.add(row)`` as each race finishes; each
    race not agreed is also printed as one line with its reason (above the bar)."""

    def __init__(self, done: list[dict[str, Any]], races: int) -> None:
        self.counts = Counter(row["class"] for row in done)
        self.progress = Progress(TextColumn("soak"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("{task.fields[classes]}"))
        self.task = self.progress.add_task("races", total=races, completed=len(done), classes=self._classes())

    def _classes(self) -> str:
        return "  ".join(f"[{CLASS_COLOURS[c.value]}]{c.value} {self.counts[c.value]}[/]"
                         for c in RaceClass if self.counts[c.value])

    def add(self, row: dict[str, Any]) -> None:
        """A race finished."""
        self.counts[row["class"]] += 1
        self.progress.update(self.task, advance=1, classes=self._classes())
        if row["class"] != RaceClass.AGREED.value:
            self.progress.console.print(f"{row['race_id']}: {row['class']}: {row['reason']}", markup=False, highlight=False)

    def __enter__(self) -> SoakProgress:
        self.progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.progress.stop()
