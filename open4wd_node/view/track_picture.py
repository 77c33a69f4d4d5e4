"""The track and its cars in a terminal: a rich renderable drawn in braille characters.

Each character cell holds 2×4 braille dots, which are about square on a terminal, so the plan keeps its
shape. The ribbon's two edges are drawn when the track is wide enough on screen to tell them apart,
else its centreline; the dots of a track at one size are worked out once (``_track_rows`` caches them),
so a draw only places the cars: each as its marker (its start slot counted from 1, in the slot's colour;
this node's own car in reverse video), leaders drawn last so that they stay on top, with a legend under
the map that names each marker.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from open4wd_node.view.race_picture import CarMark, RacePicture, car_colour, marker_text
from open4wd_node.view.track_map import Plan, TrackMap

BRAILLE_BASE = 0x2800
DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row of 4][column of 2]
MIN_COLS = 16
MAX_COLS = 44
MIN_ROWS = 3
MAX_ROWS = 14
EDGES_FROM_DOTS = 3  # the ribbon at least this many dots wide: draw its two edges, else its centreline
TRACK_STYLE = "grey50"


@dataclass(frozen=True)
class Grid:
    """How plan metres map to the braille dots of ``cols`` × ``rows`` cells: uniform scale, centred."""

    cols: int
    rows: int
    scale: float  # dots per metre
    left: float  # plan x at dot column 0 (before centring)
    top: float
    offset_x: float  # dots added to centre the plan
    offset_y: float

    def dot(self, point: Plan) -> tuple[int, int]:
        """The dot (column, row) a plan point falls on, clamped to the grid."""
        x = int((point[0] - self.left) * self.scale + self.offset_x)
        y = int((point[1] - self.top) * self.scale + self.offset_y)
        return min(max(x, 0), 2 * self.cols - 1), min(max(y, 0), 4 * self.rows - 1)


def grid_for(track: TrackMap, cols: int, max_rows: int = MAX_ROWS) -> Grid:
    """The grid ``cols`` cells wide that shows the whole track, as few rows as its shape needs (at most
    ``max_rows``: a tall track is then narrower than ``cols`` allows)."""
    b = track.bounds
    rows = min(max(math.ceil(2 * cols * b.height / b.width / 4), MIN_ROWS), max_rows)
    scale = min((2 * cols - 1) / b.width, (4 * rows - 1) / b.height)
    return Grid(cols, rows, scale, b.left, b.top, (2 * cols - 1 - b.width * scale) / 2,
                (4 * rows - 1 - b.height * scale) / 2)


def _line_dots(grid: Grid, line: Iterable[Plan]) -> Iterator[tuple[int, int]]:
    """Every dot along a polyline, consecutive points joined (no gaps at any scale)."""
    previous: tuple[int, int] | None = None
    for point in line:
        x, y = grid.dot(point)
        if previous is not None:
            steps = max(abs(x - previous[0]), abs(y - previous[1]))
            for k in range(1, steps):
                yield previous[0] + (x - previous[0]) * k // steps, previous[1] + (y - previous[1]) * k // steps
        yield x, y
        previous = (x, y)


@lru_cache(maxsize=32)
def _track_rows(track: TrackMap, cols: int, max_rows: int) -> tuple[Grid, tuple[str, ...]]:
    """The grid and the track's rows of braille characters (once per track and size)."""
    grid = grid_for(track, cols, max_rows)
    bits = [[0] * grid.cols for _ in range(grid.rows)]
    lines = (track.left, track.right) if track.width_m * grid.scale >= EDGES_FROM_DOTS else (track.centre,)
    for line in lines:
        for x, y in _line_dots(grid, line):
            bits[y // 4][x // 2] |= DOT_BITS[y % 4][x % 2]
    return grid, tuple("".join(chr(BRAILLE_BASE + b) if b else " " for b in row) for row in bits)


_TRACK_STYLE = Style.parse(TRACK_STYLE)
_MARKER_STYLES: dict[tuple[int, bool], Style] = {}


def _marker_style(slot: int, me: bool) -> Style:
    """A marker's style, parsed once: bold in the slot's colour, reversed for this node's own car."""
    return _MARKER_STYLES.setdefault((slot, me), Style.parse(f"bold {car_colour(slot)}" + (" reverse" if me else "")))


def picture_segments(picture: RacePicture, cols: int, max_rows: int = MAX_ROWS) -> Iterator[Segment]:
    """The map ``cols`` cells wide (at most ``max_rows`` high) as rich segments, line by line. A draw cuts
    the track's cached rows at the markers: a few segments per line, no style parsed, no text laid out."""
    grid, rows = _track_rows(picture.track, cols, max_rows)
    marks: dict[int, dict[int, CarMark]] = {}
    for car in sorted(picture.cars, key=lambda c: -c.rank):  # the leader last: on top
        x, y = grid.dot((car.x, car.y))
        marks.setdefault(y // 4, {})[x // 2] = car
    for r, row in enumerate(rows):
        at = 0
        for c, car in sorted(marks.get(r, {}).items()):
            yield Segment(row[at:c], _TRACK_STYLE)
            yield Segment(marker_text(car.slot), _marker_style(car.slot, car.me))
            at = c + 1
        yield Segment(row[at:], _TRACK_STYLE)
        yield Segment.line()


def _legend(picture: RacePicture, cols: int) -> list[Text]:
    """``1 …abcd  2 node1 …`` in the cars' colours, wrapped at ``cols``."""
    lines, line = [], Text(no_wrap=True, overflow="ellipsis")
    for car in picture.cars:
        entry = f"{marker_text(car.slot)} {car.label}"
        if line.cell_len and line.cell_len + 2 + len(entry) > cols:
            lines.append(line)
            line = Text(no_wrap=True, overflow="ellipsis")
        if line.cell_len:
            line.append("  ")
        line.append(entry, f"{car_colour(car.slot)}" + (" bold" if car.me else ""))
    return lines + [line] if line.cell_len else lines


class TrackPicture:
    """A ``RacePicture`` as a rich renderable: as wide as it is given, up to ``max_cols`` cells."""

    def __init__(self, picture: RacePicture, max_cols: int = MAX_COLS, max_rows: int = MAX_ROWS) -> None:
        self.picture, self.max_cols, self.max_rows = picture, max_cols, max_rows

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(MIN_COLS, options.max_width), min(self.max_cols, options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cols = max(min(self.max_cols, options.max_width), MIN_COLS)
        yield from picture_segments(self.picture, cols, self.max_rows)
        yield from _legend(self.picture, cols)
