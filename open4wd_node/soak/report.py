"""A soak's report directory: what it is (``soak.json``), each race's row as it finishes
(``results.jsonl``: a stopped soak resumes from it), the kept races (``races/RACE-ID/``), and at the end
``report.json`` (summary and rows) and a self-contained ``report.html`` (inline SVG, no script), which
links each kept race to its replay page (``races/RACE-ID/replay.html``, ``soak.pages``).
"""

from __future__ import annotations

import html
import io
import json
import statistics
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

from open4wd_node.runtime.errors import UserError
from open4wd_node.soak.classify import RaceClass
from open4wd_node.soak.plan import SoakOptions


class ReportDir:
    """The report directory of one soak (module docstring); ``UserError`` ``soak-report-mismatch`` when it
    already holds another soak, ``soak-report-unwritable`` when it cannot be written."""

    def __init__(self, path: Path, options: SoakOptions | None = None) -> None:
        self.path = path
        self.races = path / "races"
        spec = path / "soak.json"
        try:
            if spec.exists():
                recorded = SoakOptions.from_json(json.loads(spec.read_text()))
                if options is not None and recorded != options:
                    raise UserError("soak-report-mismatch",
                                    f"{path} holds another soak ({_differences(recorded, options)}); give the same "
                                    "options to resume it, or another --report directory")
                self.options = recorded
            elif options is None:
                raise UserError("soak-report-missing", f"{path} holds no soak (no soak.json): give the --report "
                                                       "directory of the soak that ran the race")
            else:
                self.races.mkdir(parents=True, exist_ok=True)
                spec.write_text(json.dumps(options.to_json(), indent=1))
                self.options = options
        except OSError as exc:
            raise UserError("soak-report-unwritable", f"cannot use {path} as a report directory: {exc.strerror}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError("soak-report-damaged", f"{spec} is not a soak description ({exc}); "
                                                   "give another --report directory") from None

    def rows(self) -> list[dict[str, Any]]:
        """Every race recorded so far, one per race id (a repro's rows are kept apart), in race order.
        A torn last line (the soak was killed while writing it) is skipped: that race runs again."""
        rows: dict[str, dict[str, Any]] = {}
        results = self.path / "results.jsonl"
        if results.exists():
            for line in results.read_text().splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue
                rows[row["race_id"]] = row
        return sorted(rows.values(), key=lambda r: r["index"])

    def record(self, row: dict[str, Any], kept: bytes | None) -> dict[str, Any]:
        """Keep a finished race: its files under ``races/RACE-ID/`` (unpacked), then its row, with the
        one line that reruns it, appended to ``results.jsonl``."""
        if kept is not None:
            target = self.races / row["race_id"]
            with tarfile.open(fileobj=io.BytesIO(kept), mode="r:gz") as tar:
                tar.extractall(target, filter="data")
            row = {**row, "kept": str(target), "repro": repro_line(row["race_id"], self.path)}
        with (self.path / "results.jsonl").open("a") as out:
            out.write(json.dumps(row) + "\n")
        return row

    def finish(self, session: dict[str, Any]) -> dict[str, Any]:
        """Write ``report.json`` and ``report.html`` from every recorded row; the summary is returned."""
        rows = self.rows()
        summary = summarize(rows, session)
        (self.path / "report.json").write_text(json.dumps({"soak": self.options.to_json(), "summary": summary,
                                                           "races": rows}, indent=1))
        (self.path / "report.html").write_text(render_html(self.options, summary, rows))
        return summary


def repro_line(race_id: str, report: Path) -> str:
    """The command that runs ``race_id`` again with the same seed and faults."""
    return f"open4wd-node soak repro {race_id} --report {report}"


def _differences(recorded: SoakOptions, given: SoakOptions) -> str:
    a, b = recorded.to_json(), given.to_json()
    return ", ".join(f"{k} {a[k]} there, {b[k]} now" for k in a if a[k] != b[k])


def summarize(rows: list[dict[str, Any]], session: dict[str, Any]) -> dict[str, Any]:
    """Counts per class and per profile, the frames-to-detection figures, and this session's pace."""
    detections = sorted(r["detection_frames"] for r in rows if r["detection_frames"] is not None)
    corruptions = [r for r in rows if r["profile"] == "corrupt" and any("corrupt-state" in f for f in _fired(r))]
    per_profile: dict[str, Counter[str]] = {}
    for row in rows:
        per_profile.setdefault(row["profile"], Counter())[row["class"]] += 1
    return {
        "races": len(rows),
        "classes": {c.value: sum(r["class"] == c.value for r in rows) for c in RaceClass},
        "profiles": {p: dict(c) for p, c in per_profile.items()},
        "corruptions": len([r for r in rows if r["profile"] == "corrupt"]),
        "corruptions_fired": len(corruptions),
        "corruptions_detected": sum(r["class"] == RaceClass.DETECTED.value for r in rows if r["profile"] == "corrupt"),
        "detection_frames": {"median": statistics.median(detections) if detections else None,
                             "worst": detections[-1] if detections else None, "all": detections},
        "worst_lag": max((r["worst_lag"] for r in rows), default=0),
        "max_rollback": max((r["max_rollback"] for r in rows), default=0),
        "realtime_ratio": _ratios(rows),
        "session": session,
    }


def _ratios(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per profile, the slowest and the median ``realtime_ratio`` of its races that ran to their end."""
    by_profile: dict[str, list[float]] = {}
    for row in rows:
        if row.get("realtime_ratio") is not None:
            by_profile.setdefault(row["profile"], []).append(row["realtime_ratio"])
    return {p: {"worst": min(r), "median": statistics.median(r)} for p, r in by_profile.items()}


def _fired(row: dict[str, Any]) -> list[str]:
    """What a race's faults were, as the plan says (a corruption fires inside the node)."""
    fault = row["plan"]["faults"]["node_fault"]
    return [f"{fault['kind']}@{fault['frame']}"] if fault else []


# ---- report.html --------------------------------------------------------------------------------------

CLASS_COLOURS = {"agreed": "#3a7d44", "detected": "#4a6fa5", "false-desync": "#c0392b", "crash": "#8e44ad",
                 "hang": "#d35400", "replay-failed": "#b7950b", "undetected": "#7f8c8d", "spectator-desync": "#a93226",
                 "slow": "#e67e22"}
SAMPLE_RACES = 6


def render_html(options: SoakOptions, summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The self-contained report page."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>open4wd-node soak report</title><style>"
        "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#eee}"
        "td.l,th.l{text-align:left}code{font-size:90%}</style></head><body>",
        "<h1>open4wd-node soak</h1>",
        f"<p>{summary['races']} of {options.races} races; seed {options.seed}; nodes {options.nodes[0]}–{options.nodes[1]}; "
        f"mode {e(options.mode)}; {options.laps} lap(s) of <code>{e(options.track)}</code>, "
        f"{options.race_seconds} s limit; profiles {e(', '.join(options.profiles))}.</p>",
        "<h2>Summary</h2>", _summary_table(summary),
        "<h2>Outcome per profile</h2>", _profile_table(summary),
        "<h2>Frames to detection</h2>",
        "<p>From the frame after which a node corrupted its state to the checksum vote that voted it out "
        f"(median {summary['detection_frames']['median']}, worst {summary['detection_frames']['worst']}; "
        f"{summary['corruptions_detected']} of {summary['corruptions']} corruptions detected).</p>",
        _histogram(summary["detection_frames"]["all"]),
        "<h2>Lag and rollback depth over time (a sample of races)</h2>",
        *(_curves(row) for row in _sample(rows)),
        "<h2>Races not agreed</h2>", _kept_table(rows),
        "</body></html>",
    ]
    return "\n".join(parts)


def _summary_table(summary: dict[str, Any]) -> str:
    cells = "".join(f"<tr><th class='l' style='color:{CLASS_COLOURS[c]}'>{c}</th><td>{n}</td></tr>"
                    for c, n in summary["classes"].items())
    session = summary["session"]
    pace = (f"<tr><th class='l'>races per hour (this session)</th><td>{session.get('races_per_hour')}</td></tr>"
            f"<tr><th class='l'>races at once</th><td>{session.get('workers')}</td></tr>"
            f"<tr><th class='l'>load average (1 min) at the end</th><td>{session.get('load_average')}</td></tr>")
    return f"<table><tr><th class='l'>class</th><th>races</th></tr>{cells}{pace}</table>"


def _profile_table(summary: dict[str, Any]) -> str:
    classes = [c.value for c in RaceClass]
    head = "".join(f"<th>{c}</th>" for c in classes)
    body = "".join(f"<tr><th class='l'>{html.escape(p)}</th>" + "".join(f"<td>{counts.get(c, 0) or ''}</td>" for c in classes)
                   + "</tr>" for p, counts in summary["profiles"].items())
    return f"<table><tr><th class='l'>profile</th>{head}</tr>{body}</table>"


def _histogram(values: list[int], width: int = 640, height: int = 200) -> str:
    if not values:
        return "<p>(no corruption was detected in this soak)</p>"
    bins = 12
    low, high = min(values), max(values)
    step = max(1, -(-(high - low + 1) // bins))
    counts = Counter((v - low) // step for v in values)
    top = max(counts.values())
    bar = width / bins
    rects = "".join(
        f"<rect x='{i * bar + 1:.1f}' y='{height - 20 - (height - 40) * n / top:.1f}' width='{bar - 2:.1f}' "
        f"height='{(height - 40) * n / top:.1f}' fill='#4a6fa5'><title>{low + i * step}–{low + (i + 1) * step - 1}"
        f" frames: {n}</title></rect><text x='{i * bar + bar / 2:.1f}' y='{height - 24 - (height - 40) * n / top:.1f}' "
        f"font-size='10' text-anchor='middle'>{n}</text>"
        for i, n in sorted(counts.items()))
    axis = (f"<text x='0' y='{height - 4}' font-size='10'>{low}</text>"
            f"<text x='{width}' y='{height - 4}' font-size='10' text-anchor='end'>{low + bins * step - 1} frames</text>")
    return f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>{rects}{axis}</svg>"


def _sample(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Up to ``SAMPLE_RACES`` races with curves: one per profile first, the races not agreed before the others."""
    ordered = sorted((r for r in rows if any(r["curves"].values())), key=lambda r: (r["class"] == "agreed", r["index"]))
    chosen: list[dict[str, Any]] = []
    for row in ordered:
        if row["profile"] not in {c["profile"] for c in chosen}:
            chosen.append(row)
    chosen += [r for r in ordered if r not in chosen]
    return chosen[:SAMPLE_RACES]


def _curves(row: dict[str, Any], width: int = 640, height: int = 140) -> str:
    curves = row["curves"]
    frames = max((point[0] for points in curves.values() for point in points), default=1) or 1
    top = max((max(point[1], point[2]) for points in curves.values() for point in points), default=1) or 1
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]

    def polyline(points: list[tuple[int, int]], colour: str, dash: str) -> str:
        coords = " ".join(f"{5 + (width - 10) * f / frames:.1f},{height - 15 - (height - 30) * v / top:.1f}" for f, v in points)
        return f"<polyline points='{coords}' fill='none' stroke='{colour}' stroke-width='1.5' stroke-dasharray='{dash}'/>"

    lines = []
    for i, (_, points) in enumerate(sorted(curves.items())):
        colour = palette[i % len(palette)]
        lines.append(polyline([(p[0], p[1]) for p in points], colour, ""))
        lines.append(polyline([(p[0], p[2]) for p in points], colour, "4 3"))
    title = (f"{html.escape(row['race_id'])}: {html.escape(row['class'])} — {row['nodes']} nodes, frames 0–{frames}, "
             f"scale 0–{top} frames; solid: lag, dashed: deepest rollback per second; "
             + ", ".join(f"<span style='color:{palette[i % len(palette)]}'>{html.escape(n)}</span>"
                         for i, n in enumerate(sorted(curves))))
    return (f"<p>{title}</p><svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
            f"style='border:1px solid #ddd'>{''.join(lines)}</svg>")


def _kept_table(rows: list[dict[str, Any]]) -> str:
    kept = [r for r in rows if r["class"] != RaceClass.AGREED.value]
    if not kept:
        return "<p>(every race agreed)</p>"
    body = "".join(
        f"<tr><td class='l'>{html.escape(r['race_id'])}</td><td class='l' style='color:{CLASS_COLOURS.get(r['class'], '#000')}'>"
        f"{html.escape(r['class'])}</td><td class='l'>{html.escape(r['reason'])}</td><td class='l'>{_page_link(r)}</td>"
        f"<td class='l'><code>{html.escape(r.get('repro', ''))}</code></td></tr>" for r in kept)
    head = "".join(f"<th class='l'>{h}</th>" for h in ("race", "class", "why", "replay", "rerun"))
    return f"<table><tr>{head}</tr>{body}</table>"


def _page_link(row: dict[str, Any]) -> str:
    """A kept race's replay page, linked relative to the report (so the directory can move), or why none."""
    if row.get("replay_page"):
        href = html.escape(f"races/{row['race_id']}/{row['replay_page']}", quote=True)
        return f"<a href='{href}' data-replay='{html.escape(row['race_id'], quote=True)}'>page</a>"
    return html.escape(row.get("replay_page_error", "no page"))
