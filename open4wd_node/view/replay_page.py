"""The replay page: one self-contained HTML file of a race log's film (``replay_film``).

A pure function of the film (``replay_page``); ``write_replay_page`` films a log and writes its page.
Per round a player: the track from above with one marker per car, play / pause, a speed choice and a
scrubber over every filmed frame; under it a timeline with every checksum vote (coloured by its outcome,
``data-vote="<frame>"``; a click jumps there), the input changes the peers had to predict per second
(what rollbacks are made of) and the log's notes; then each car's rank and laps over time. A match
whose votes split carries ``data-split-frame`` (and ``data-split-round``) on its body, and a section
that names the split frame, every hash counted there and, given the saved states of that frame, the
first fields each minority state differs in.

Nothing is fetched when the page is viewed: SVG, style sheet, script and data are inline, and the page's
Content-Security-Policy refuses any other source.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any

from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.runtime.atomic_file import write_atomic
from open4wd_node.runtime.errors import UserError
from open4wd_node.events.text import round_text, short
from open4wd_node.view.page_parts import MARKERS_SCRIPT, json_script, map_svg, page_head, swatch
from open4wd_node.view.race_picture import car_colour
from open4wd_node.view.replay_film import (
    CENTIMETRES, ROLLBACK_BUCKET, FilmRound, ReplayFilm, Split, ReplayVerdict, film_log, state_paths,
)

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
WIDTH = 1000  # the timeline's and charts' user units across
VOTE_ROW, BAR_ROW, NOTE_ROW = 14, 44, 70  # the timeline's rows (y of each row's middle)
TIMELINE_HEIGHT = 84
CHART_HEIGHT = 120
RESULT_WORDS = {"agreed": "agreed", "majority": "this node in the majority", "minority": "this node outvoted",
                "tie": "no strict majority", "mismatch": "this spectator's hash differed"}

VOTE_KEY = ('<p class="dim key">votes: <span class="agreed">■</span> agreed · <span class="majority">■</span> this node '
            'in the majority · <span class="minority">■</span> this node outvoted (a spectator: its hash differed) · '
            '<span class="tie">■</span> no strict majority · the red line: where the votes split · '
            '▲ the log\'s notes (click a mark to go there)</p>')

PLAYER_SCRIPT = """
const film = JSON.parse(document.getElementById('film').textContent);
document.querySelectorAll('section.round').forEach((section) => {
  const round = film.rounds[+section.dataset.index];
  const markers = o4wCarMarkers(section.querySelector('svg.map'));
  const scrubber = section.querySelector('[data-scrubber]');
  const label = section.querySelector('[data-frame-label]');
  const play = section.querySelector('[data-play]');
  const speed = section.querySelector('[data-speed]');
  const cursors = section.querySelectorAll('[data-cursor]');
  const last = Math.max(round.last, 1);
  let timer = null;
  function show(k) {
    k = Math.max(0, Math.min(round.xy.length - 1, k));
    const row = round.xy[k];
    for (const slot in markers) {
      o4wPlaceCar(markers[slot], row[2 * slot] / film.scale, row[2 * slot + 1] / film.scale);
    }
    const frame = round.first + k * round.stride;
    scrubber.value = k;
    label.textContent = 'frame ' + frame + ' of ' + round.last;
    section.dataset.frame = frame;
    const x = (frame / last * film.width).toFixed(1);
    cursors.forEach(c => { c.setAttribute('x1', x); c.setAttribute('x2', x); });
  }
  function stop() { clearInterval(timer); timer = null; play.textContent = 'Play'; section.dataset.playing = 'no'; }
  function start() {
    if (+scrubber.value >= round.xy.length - 1) show(0);
    play.textContent = 'Pause'; section.dataset.playing = 'yes';
    timer = setInterval(() => {
      const step = Math.max(1, Math.round(+speed.value * 2 / round.stride));
      const k = +scrubber.value + step;
      show(k);
      if (k >= round.xy.length - 1) stop();
    }, 1000 / 30);
  }
  play.addEventListener('click', () => timer === null ? start() : stop());
  scrubber.addEventListener('input', () => show(+scrubber.value));
  section.querySelectorAll('[data-vote],[data-note]').forEach(mark => mark.addEventListener('click', () => {
    stop(); show(Math.round((+mark.dataset.at - round.first) / round.stride));
  }));
  show(0);
});
document.body.dataset.ready = 'yes';
"""


def _x(frame: int, last: int) -> float:
    return round(frame / max(last, 1) * WIDTH, 1)


def _timeline(film: ReplayFilm, r: FilmRound, split: Split | None) -> str:
    """Votes, predicted input changes per second and notes over the round's frames."""
    last = r.last_frame
    parts = [f'<svg class="timeline" viewBox="0 0 {WIDTH} {TIMELINE_HEIGHT}"">',
             f'<line class="row" x1="0" y1="{VOTE_ROW}" x2="{WIDTH}" y2="{VOTE_ROW}"/>',
             f'<line class="row" x1="0" y1="{BAR_ROW + 12}" x2="{WIDTH}" y2="{BAR_ROW + 12}"/>']
    if split is not None and split.round_index == r.round_index:
        x = _x(split.frame, last)
        parts.append(f'<line class="split-line" x1="{x}" y1="0" x2="{x}" y2="{TIMELINE_HEIGHT}"/>')
    peak = max(r.predicted, default=0) or 1
    for bucket, count in enumerate(r.predicted):
        if count:
            height = round(24 * count / peak, 1)
            parts.append(f'<rect class="bar" x="{_x(bucket * ROLLBACK_BUCKET, last)}" y="{BAR_ROW + 12 - height}" '
                         f'width="{max(_x(ROLLBACK_BUCKET, last) - 1, 1)}" height="{height}">'
                         f"<title>frames {bucket * ROLLBACK_BUCKET}–{(bucket + 1) * ROLLBACK_BUCKET - 1}: "
                         f"{count} input changes the peers had to predict</title></rect>")
    for vote in r.votes:
        hashes = ", ".join(f"{short(p)} {h[:8]}" for p, h in sorted(vote.hashes.items()))
        outvoted = f"; outvoted {', '.join(short(p) for p in vote.dissenters)}" if vote.dissenters else ""
        parts.append(f'<rect data-vote="{vote.frame}" data-round="{r.round_index}" data-result="{escape(vote.result)}" '
                     f'data-at="{vote.frame}" class="{escape(vote.result)}" x="{_x(vote.frame, last) - 3}" '
                     f'y="{VOTE_ROW - 8}" width="6" height="16"><title>frame {vote.frame}: '
                     f"{escape(RESULT_WORDS.get(vote.result, vote.result))}{outvoted} ({escape(hashes)})</title></rect>")
    for note in r.notes:
        x = _x(note.frame, last)
        parts.append(f'<path data-note="{escape(note.kind)}" data-at="{note.frame}" class="note" '
                     f'd="M{x} {NOTE_ROW - 6}l5 10h-10z"><title>frame {note.frame}: {escape(note.text)}</title></path>')
    parts += [f'<text x="2" y="{VOTE_ROW - 9}">votes</text>', f'<text x="2" y="{BAR_ROW - 8}">predicted input changes / s</text>',
              f'<text x="2" y="{NOTE_ROW + 14}">notes</text>',
              f'<line class="cursor" data-cursor x1="0" y1="0" x2="0" y2="{TIMELINE_HEIGHT}"/></svg>']
    return "".join(parts)


def _chart(r: FilmRound, series: list[tuple[int, ...]], title: str, lowest: int, highest: int, invert: bool) -> str:
    """One line per car of a per-slot series sampled at the round's ``timeline_frames``."""
    last, span = r.last_frame, max(highest - lowest, 1)
    pad = 10

    def y(value: int) -> float:
        share = (value - lowest) / span
        return round(pad + (share if invert else 1 - share) * (CHART_HEIGHT - 2 * pad), 1)

    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {CHART_HEIGHT}"">',
             f'<text x="2" y="10">{escape(title)}</text>',
             f'<line class="axis" x1="0" y1="{CHART_HEIGHT - pad}" x2="{WIDTH}" y2="{CHART_HEIGHT - pad}"/>']
    for slot in range(len(series[0]) if series else 0):
        points = " ".join(f"{_x(frame, last)},{y(row[slot])}" for frame, row in zip(r.timeline_frames, series, strict=True))
        parts.append(f'<polyline data-series="{slot}" fill="none" stroke-width="2" vector-effect="non-scaling-stroke" '
                     f'stroke="var(--car{slot})" points="{points}"/>')
    parts.append(f'<line class="cursor" data-cursor x1="0" y1="0" x2="0" y2="{CHART_HEIGHT}"/></svg>')
    return "".join(parts)


def _standings(film: ReplayFilm, r: FilmRound) -> str:
    peers = r.peers
    rows = {row["peer"]: row for row in (r.standings or [])}
    body = []
    for peer in sorted(peers, key=lambda p: rows.get(p, {}).get("rank", 99)):
        slot = r.slots[peer]
        row = rows.get(peer)
        result = "" if row is None else (f"{row['rank']}. {row['status']}"
                                         + (f" at frame {row['finished_frame']}" if row["status"] == "finished" else ""))
        body.append(f"<tr><td>{swatch(slot)}{slot + 1}</td><td>{escape(film.label(peer))}</td><td>{escape(result)}</td></tr>")
    return f"<table><tr><th>car</th><th>peer</th><th>result</th></tr>{''.join(body)}</table>"


def _round_section(film: ReplayFilm, index: int, r: FilmRound) -> str:
    first = r.positions[0] if r.positions else ()
    cars = [(slot, short(peer), first[2 * slot] / CENTIMETRES if first else 0.0,
             first[2 * slot + 1] / CENTIMETRES if first else 0.0) for slot, peer in enumerate(r.peers)]
    votes = len(r.votes)
    agreed = sum(v.result == "agreed" for v in r.votes)
    colours = "".join(f"--car{slot}: {c};" for slot, c in _colours(len(r.slots)))
    laps_top = max((max(row) for row in r.laps), default=1)
    return (
        f'<section class="round" data-index="{index}" data-round="{r.round_index}" style="{colours}">'
        f"<h2>{round_text(r.round_index)} · {escape(_track_name(r.track_ref))} · {r.last_frame} frames · "
        f"{votes} checksum votes ({agreed} agreed)</h2>"
        f"{map_svg(r.track, cars)}"
        f'<div class="controls"><button data-play type="button">Play</button>'
        f'<select data-speed aria-label="speed"><option value="1">1×</option><option value="2">2×</option>'
        f'<option value="4" selected>4×</option><option value="8">8×</option></select>'
        f'<input data-scrubber type="range" min="0" max="{max(len(r.positions) - 1, 0)}" value="0" step="1" '
        f'aria-label="frame"><span data-frame-label class="dim"></span></div>'
        f"{_timeline(film, r, film.split)}{VOTE_KEY}"
        f"{_chart(r, r.ranks, 'rank over time (1 at the top)', 1, len(r.slots), invert=True)}"
        f"{_chart(r, r.laps, 'laps done over time', 0, laps_top, invert=False)}"
        f"{_standings(film, r)}"
        f"<p class=\"dim\">{''.join(escape(f'frame {n.frame}: {n.text}. ') for n in r.notes)}</p>"
        "</section>"
    )


def _track_name(ref: str) -> str:
    """A track as the page names it: a built-in by its name, an asset by the start of its content id."""
    return ref if ref.startswith("builtin:") or len(ref) <= 20 else f"track {ref[:12]}…"


def _colours(count: int) -> list[tuple[int, str]]:
    return [(slot, car_colour(slot)) for slot in range(count)]


def _split_section(film: ReplayFilm, split: Split) -> str:
    majority = split.majority
    rows = "".join(
        f"<tr><td>{escape(film.label(peer))}</td><td><code>{escape(digest[:16])}…</code></td>"
        f"<td class=\"{'ok' if digest == majority else 'bad'}\">{'majority' if digest == majority else 'differs'}</td></tr>"
        for peer, digest in sorted(split.hashes.items())
    )
    parts = [f'<section class="split"><h2 class="bad">The votes split at {round_text(split.round_index)}, '
             f"frame {split.frame}</h2><table><tr><th>voter</th><th>state hash</th><th></th></tr>{rows}</table>"]
    if not film.differences:
        parts.append(f'<p class="dim">{film.states_seen} saved state(s) of this frame were given; comparing needs one of '
                     "the majority and one that differs (every node writes its own beside its race log, "
                     "<code>&lt;log&gt;.states/</code>: give the others' with <code>--states</code>).</p>")
    for diff in film.differences:
        fields = "".join(f"<tr><td><code>{escape(name)}</code></td><td>{a}</td><td>{b}</td><td>{b - a:+d}</td></tr>"
                         for name, a, b in diff.fields)
        hidden = diff.total - len(diff.fields)
        more = f"<p class=\"dim\">… and {hidden} more differing fields</p>" if hidden else ""
        parts.append(f"<h3>{escape(film.label(diff.node))} against {escape(film.label(diff.reference))}: "
                     f"{diff.total} differing field(s), the first:</h3><table data-differences=\"{escape(diff.node)}\">"
                     f"<tr><th>field</th><th>majority</th><th>{escape(short(diff.node))}</th><th>difference</th></tr>{fields}</table>{more}")
    parts.append("</section>")
    return "".join(parts)


def film_data(film: ReplayFilm) -> dict[str, Any]:
    """What the page's script plays: per round the filmed positions (centimetres) and their frames."""
    return {"scale": CENTIMETRES, "width": WIDTH, "rounds": [
        {"round": r.round_index, "first": max(r.first_frame, 0), "stride": r.stride, "last": r.last_frame,
         "xy": r.positions or [[0, 0] * len(r.slots)]}
        for r in film.rounds]}


def replay_page(film: ReplayFilm) -> str:
    """The whole page of ``film`` as HTML text."""
    split = film.split
    body_marks = f' data-split-frame="{split.frame}" data-split-round="{split.round_index}"' if split else ""
    verdict = f'<p class="{"ok" if film.verdict.ok else "bad"}">replay: {escape(film.verdict.text)}</p>'
    role = "a spectator's" if film.role == "spectator" else "a racer's"
    return (
        page_head(f"race replay {film.match_id[:16]}", CSP)
        + f'<body data-match="{escape(film.match_id)}"{body_marks}>'
        + f"<h1>Race replay: match {escape(film.match_id[:16])}…</h1>"
        + f'<p class="dim">{role} race log, written by {escape(short(film.node))}; positions re-simulated from '
        + "its confirmed inputs, frame by frame.</p>"
        + verdict
        + (_split_section(film, split) if split else "")
        + "".join(_round_section(film, i, r) for i, r in enumerate(film.rounds))
        + json_script("film", film_data(film))
        + f"<script>{MARKERS_SCRIPT}{PLAYER_SCRIPT}</script></body></html>\n"
    )


def write_replay_page(log: Path, page: Path, assets: NodeRoomAssets, verdict: ReplayVerdict, states: Iterable[Path] = ()) -> None:
    """Film ``log`` and write its page to ``page`` (whole or not at all); ``states``: saved-state files or
    directories of them, the other nodes' (the log's own are always read). ``UserError``
    ``replay-page-unwritable`` when the file cannot be written, and ``film_log``'s."""
    html = replay_page(film_log(log, assets, verdict, state_paths(states)))
    try:
        write_atomic(page, html.encode(), durable=False)
    except OSError as exc:
        raise UserError("replay-page-unwritable", f"cannot write {page}: {exc.strerror or exc}") from None
