"""What the replay page and the live page share: the track map as SVG markup, the car markers, the style
sheet and the script that moves the markers. Pure text builders: nothing here reads a clock or a file.

Both pages are self-contained (inline SVG, CSS and script; a Content-Security-Policy that lets them fetch
nothing but, for the live page, its own event stream), and mark what automation reads: the track path
``data-track``, each car marker ``data-car="<slot>"``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from open4wd_node.view.race_picture import car_colour, marker_text
from open4wd_node.view.track_map import Plan, TrackMap

MARGIN_M = 0.6  # around the track's box, so that a car on the edge is drawn whole

STYLE = """
:root { color-scheme: dark; --fg: #e8e8e8; --dim: #9a9a9a; --bg: #16181c; --panel: #1f2228; --track: #3a3f47; }
body { margin: 0; padding: 1rem 1.5rem; background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, sans-serif; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; } h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
.dim { color: var(--dim); } .ok { color: #6fcf72; } .bad { color: #ff6b6b; }
section { background: var(--panel); border-radius: 8px; padding: .8rem 1rem; margin: 1rem 0; }
svg.map { width: 100%; max-width: 900px; height: auto; max-height: 65vh; display: block; background: #101216;
  border-radius: 6px; }
svg.map .ribbon { fill: none; stroke: var(--track); stroke-linejoin: round; stroke-linecap: butt; }
svg.map .edge { fill: none; stroke: #6b7280; }
svg.map .start { stroke: #fafafa; }
svg.map [data-car] text { font-weight: 700; fill: #fff; text-anchor: middle; dominant-baseline: central; }
svg.map [data-car] .label { fill: var(--fg); text-anchor: start; font-weight: 400; }
.controls { display: flex; gap: .6rem; align-items: center; margin: .5rem 0; max-width: 900px; }
.controls input[type=range] { flex: 1; }
svg.timeline, svg.chart { width: 100%; max-width: 900px; height: auto; display: block; margin-top: .4rem; }
svg.timeline .row, svg.chart .axis { fill: none; stroke: #353a42; }
svg.timeline text, svg.chart text { fill: var(--dim); font-size: 11px; }
[data-vote] { cursor: pointer; } [data-vote].agreed { fill: #4caf50; } [data-vote].majority { fill: #ffb74d; }
[data-vote].minority, [data-vote].mismatch { fill: #ff5252; } [data-vote].tie { fill: #ce93d8; }
.key .agreed { color: #4caf50; } .key .majority { color: #ffb74d; } .key .minority { color: #ff5252; }
.key .tie { color: #ce93d8; }
.bar { fill: #64b5f6; } .note { fill: #bdbdbd; } .split-line { stroke: #ff5252; stroke-width: 2; }
.cursor { stroke: #fff; stroke-width: 1.5; }
table { border-collapse: collapse; margin: .4rem 0; } td, th { padding: .15rem .6rem; text-align: left; }
th { color: var(--dim); font-weight: 500; } code { font-size: 12px; }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 50%; margin-right: .3em; }
"""

MARKERS_SCRIPT = """
function o4wPlaceCar(marker, x, y) { marker.setAttribute('transform', 'translate(' + x + ' ' + y + ')'); }
function o4wCarMarkers(svg) {
  const bySlot = {};
  svg.querySelectorAll('[data-car]').forEach(g => { bySlot[g.dataset.car] = g; });
  return bySlot;
}
"""


def page_head(title: str, csp: str) -> str:
    """The document's head: charset, title, the Content-Security-Policy and the shared style sheet."""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{STYLE}</style></head>")


def json_script(element_id: str, data: Any) -> str:
    """Data for the page's script, inline (``</`` escaped, so no string in it can close the element)."""
    text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _path(points: Sequence[Plan], closed: bool) -> str:
    head = f"M{points[0][0]:.2f} {points[0][1]:.2f}"
    body = "".join(f"L{x:.2f} {y:.2f}" for x, y in points[1:])
    return head + body + ("Z" if closed else "")


def marker_radius(track: TrackMap) -> float:
    """A car marker's radius in plan metres: readable on a small track, not a blot on a large one."""
    b = track.bounds
    return round(max(track.width_m * 0.12, max(b.width, b.height) / 120), 3)


def car_marker(slot: int, label: str, x: float, y: float, radius: float) -> str:
    """One car's marker: a disc in its slot's colour with its number, and its label beside it."""
    size = radius * 1.3
    return (f'<g data-car="{slot}" class="car" transform="translate({x:.2f} {y:.2f})">'
            f'<title>{escape(label)}</title>'
            f'<circle r="{radius}" fill="{car_colour(slot)}" stroke="#000" stroke-width="{radius / 8:.3f}"/>'
            f'<text font-size="{size:.3f}">{marker_text(slot)}</text>'
            f'<text class="label" x="{radius * 1.3:.3f}" y="{-radius * 1.1:.3f}" font-size="{size * 0.8:.3f}">'
            f"{escape(label)}</text></g>")


def map_svg(track: TrackMap, cars: Iterable[tuple[int, str, float, float]]) -> str:
    """The track from above (ribbon, edges, start line; the centreline path carries ``data-track``) with
    one marker per car ``(slot, label, x, y)``; coordinates are plan metres."""
    b = track.bounds
    box = f"{b.left - MARGIN_M:.2f} {b.top - MARGIN_M:.2f} {b.width + 2 * MARGIN_M:.2f} {b.height + 2 * MARGIN_M:.2f}"
    radius = marker_radius(track)
    start_left, start_right = track.left[0], track.right[0]
    parts = [
        f'<svg class="map" xmlns="http://www.w3.org/2000/svg" viewBox="{box}" role="img" aria-label="the track from above">',
        f'<path class="ribbon" data-track="{"loop" if track.loop else "linear"}" d="{_path(track.centre, track.loop)}" '
        f'stroke-width="{track.width_m:.3f}"/>',
        f'<path class="edge" d="{_path(track.left, track.loop)}" stroke-width="{track.width_m / 40:.3f}"/>',
        f'<path class="edge" d="{_path(track.right, track.loop)}" stroke-width="{track.width_m / 40:.3f}"/>',
        f'<line class="start" x1="{start_left[0]:.2f}" y1="{start_left[1]:.2f}" x2="{start_right[0]:.2f}" '
        f'y2="{start_right[1]:.2f}" stroke-width="{track.width_m / 15:.3f}"/>',
        '<g class="cars">',
        *(car_marker(slot, label, x, y, radius) for slot, label, x, y in cars),
        "</g></svg>",
    ]
    return "".join(parts)


def swatch(slot: int) -> str:
    """A small disc in the slot's colour, for tables and legends."""
    return f'<span class="swatch" style="background:{car_colour(slot)}"></span>'
