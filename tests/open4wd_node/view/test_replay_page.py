"""The replay page of real race logs (whole nodes in one trio run, autojump clock): what the film holds, what
the page marks for automation, the page as a person sees it (headless Chromium: the DOM after the page's
scripts ran, playing and scrubbing, nothing fetched, a screenshot kept), and ``replay --html``."""

from __future__ import annotations

from functools import partial
from html.parser import HTMLParser
from pathlib import Path

import pytest
import trio
import trio.testing

from open4wd_node.assets.room_assets import NodeRoomAssets
from open4wd_node.assets.store import AssetStore
from open4wd_node.cli.main import main
from open4wd_node.race.log import LogReader
from open4wd_node.race.replay import replay
from open4wd_node.runtime.blocking import blocking_work_inline
from open4wd_node.runtime.config import DEFAULTS
from open4wd_node.view.race_picture import car_places
from open4wd_node.view.replay_film import CENTIMETRES, ReplayVerdict, film_log, state_paths
from open4wd_node.view.replay_page import replay_page
from tests.open4wd_node.race.nodes import race, short_track
from tests.services import Browser, Page, artefact, headless_chromium

CORRUPT_FRAME = 30


def run_race(tmp: Path, n: int, **options) -> list[Path]:
    """A real race between whole nodes; each node's race log, in node order."""
    with blocking_work_inline():  # as the fast_clock fixture (tests/conftest.py) does
        recorders, codes = trio.run(partial(race, tmp, n, **options), clock=trio.testing.MockClock(autojump_threshold=0))
    return [Path(r.of("result")[0]["log"]) for r in recorders]


@pytest.fixture(scope="module")
def agreed(tmp_path_factory) -> tuple[Path, Path]:
    """A two-node race that agreed throughout: node 0's data dir and log."""
    tmp = tmp_path_factory.mktemp("agreed")
    logs = run_race(tmp, 2, track_bytes=short_track(8.0))
    return tmp / "n0", logs[0]


@pytest.fixture(scope="module")
def split(tmp_path_factory) -> tuple[Path, list[Path]]:
    """A three-node race in which node 1 corrupts its own state after frame 30 and is voted out."""
    tmp = tmp_path_factory.mktemp("split")
    return tmp, run_race(tmp, 3, track_bytes=short_track(20.0), faults={1: CORRUPT_FRAME})


def assets(data_dir: Path) -> NodeRoomAssets:
    return NodeRoomAssets(AssetStore.in_data_dir(data_dir), DEFAULTS)


def records(log: Path, kind: str) -> list[dict]:
    return [r.record for r in LogReader(log) if r.record["kind"] == kind]


class Marks(HTMLParser):
    """The elements of a page that carry the automation marks, by mark."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.found: dict[str, list[dict[str, str | None]]] = {}
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, _ in attrs:
            if name.startswith("data-"):
                self.found.setdefault(name, []).append(dict(attrs))


def test_the_film_of_an_agreed_race_holds_every_frame_every_vote_and_no_split(agreed):
    data_dir, log = agreed
    film = film_log(log, assets(data_dir), ReplayVerdict(True, "complete"))
    (r,) = film.rounds
    frames = records(log, "frame")
    assert r.first_frame == 0 and r.stride == 1 and r.last_frame == len(frames)
    assert len(r.positions) == len(frames) + 1 and all(len(row) == 2 * 2 for row in r.positions)
    assert [v.frame for v in r.votes] == [c["frame"] for c in records(log, "checksum")]
    assert all(v.result == "agreed" and not v.split for v in r.votes) and film.split is None
    (end,) = records(log, "round-end")
    assert r.standings == end["standings"]
    laps = {row["slot"]: row["laps"] for row in end["standings"]}
    assert r.laps[-1] == tuple(laps[s] for s in range(2))
    page = replay_page(film)
    marks = Marks(page).found
    assert len(marks["data-car"]) == 2 and len(marks["data-track"]) == 1
    assert [m["data-vote"] for m in marks["data-vote"]] == [str(v.frame) for v in r.votes]
    assert "data-split-frame" not in marks


def test_the_films_positions_are_the_simulations_own(agreed):
    """The last filmed positions are where the re-simulated world has its cars after the last frame."""
    data_dir, log = agreed
    film = film_log(log, assets(data_dir), ReplayVerdict(True, "complete"))
    (r,) = film.rounds
    from open4wd_node.race.replay import _locked_start  # the world the log's round was raced in, rebuilt

    from open4wd_node.race.world import build_round_world
    from sim_core.specs.inputs import SkillEvent

    header, start = records(log, "header")[0], records(log, "round-start")[0]
    locked, rounds = _locked_start(header, assets(data_dir))
    world = build_round_world(assets(data_dir), locked.match_id, 0, rounds[0], start["slots"],
                              {p: locked.car(p, 0) for p in locked.roster})
    for frame in records(log, "frame"):
        world.step({slot: [SkillEvent(s, h) for s, h in events] for slot, _, events, _, _ in frame["inputs"] if events})
    expected = []
    for place in car_places(world):
        x, y = r.track.place(place.arc_um, place.lat_um, place.h_um)
        expected += [round(x * CENTIMETRES), round(y * CENTIMETRES)]
    assert r.positions[-1] == tuple(expected)
    assert r.positions[0] != r.positions[-1]  # the cars did move


def test_a_split_race_names_the_split_frame_and_the_fields_the_outvoted_state_differs_in(split):
    tmp, logs = split
    majority, outvoted = logs[0], logs[1]
    first_split = next(c for c in records(majority, "checksum") if len(set(c["hashes"].values())) > 1)
    assert first_split["frame"] > CORRUPT_FRAME
    film = film_log(majority, assets(tmp / "n0"), ReplayVerdict(True, "complete"), state_paths([tmp]))
    assert film.split is not None and (film.split.round_index, film.split.frame) == (0, first_split["frame"])
    assert film.states_seen == 3  # every node saved its state of that frame
    (difference,) = film.differences
    outvoted_peer = records(outvoted, "header")[0]["node"]
    assert difference.node == outvoted_peer and difference.reference != outvoted_peer
    assert difference.total >= 1 and all(a != b for _, a, b in difference.fields)
    assert any(name.startswith("car[") for name, _, _ in difference.fields)
    page = replay_page(film)
    marks = Marks(page).found
    assert marks["data-split-frame"][0]["data-split-frame"] == str(first_split["frame"])
    assert len(marks["data-car"]) == 3
    assert len(marks["data-vote"]) == len(records(majority, "checksum"))
    assert {m["data-result"] for m in marks["data-vote"]} >= {"agreed", "majority"}
    alone = film_log(majority, assets(tmp / "n0"), ReplayVerdict(True, "complete"))  # only its own state: nothing to compare
    assert alone.split == film.split and alone.differences == [] and alone.states_seen == 1
    assert "give the others' with <code>--states</code>" in replay_page(alone)


def test_replay_html_writes_the_page_of_a_log_that_does_not_verify_and_still_refuses_it(split, tmp_path, capsys):
    tmp, logs = split
    out = tmp_path / "outvoted.html"
    status = main(["--data-dir", str(tmp / "n1"), "replay", str(logs[1]), "--html", str(out), "--states", str(tmp)])
    err = capsys.readouterr().err
    assert status == 1 and "error[replay-mismatch]" in err and f"replay page: {out}" in err
    page = out.read_text()
    assert 'class="bad">replay: replay-mismatch' in page and "data-split-frame=" in page
    assert main(["--data-dir", str(tmp / "n1"), "replay", str(logs[1]), "--html", str(tmp_path / "no" / "dir" / "x.html")]) == 1
    assert "error[replay-page-unwritable]" in capsys.readouterr().err


# ---- as a person sees it ---------------------------------------------------------------------------------

REPLAY_DOM = """({
    cars: document.querySelectorAll('svg.map [data-car]').length,
    track: document.querySelectorAll('svg.map path[data-track]').length,
    votes: [...document.querySelectorAll('[data-vote]')].map(v => +v.dataset.vote),
    split: document.body.dataset.splitFrame,
    differences: document.querySelectorAll('[data-differences]').length,
    fetched: performance.getEntriesByType('resource').length,
    frame: document.querySelector('section.round').dataset.frame })"""


async def opened_replay_page(browser: Browser, page_file: Path) -> tuple[Page, dict]:
    """A replay page once its scripts ran, and what its DOM then holds (``REPLAY_DOM``)."""
    page = await browser.open(page_file.as_uri())
    await page.wait_for("document.body.dataset.ready === 'yes'")
    return page, await page.evaluate(REPLAY_DOM)


async def markers(page: Page) -> dict[str, str]:
    return await page.evaluate("Object.fromEntries([...document.querySelectorAll('[data-car]')]"
                               ".map(g => [g.dataset.car, g.getAttribute('transform')]))")


async def test_the_replay_page_in_a_browser_plays_scrubs_and_fetches_nothing(split, tmp_path, capsys):
    tmp, logs = split
    page_file = tmp_path / "majority.html"
    assert main(["--data-dir", str(tmp / "n0"), "replay", str(logs[0]), "--html", str(page_file), "--states", str(tmp),
                 "--json"]) == 0
    capsys.readouterr()
    film = film_log(logs[0], assets(tmp / "n0"), ReplayVerdict(True, ""), state_paths([tmp]))
    (r,) = film.rounds
    async with headless_chromium("--window-size=1100,1700") as browser:
        page, dom = await opened_replay_page(browser, page_file)
        assert dom == {"cars": 3, "track": 1, "votes": [c["frame"] for c in records(logs[0], "checksum")],
                       "split": str(film.split.frame), "differences": 1, "fetched": 0, "frame": "0"}
        start = await markers(page)
        await page.evaluate("document.querySelector('[data-play]').click()")
        await page.wait_for("+document.querySelector('section.round').dataset.frame >= 120")  # it plays
        assert await markers(page) != start
        await page.evaluate("document.querySelector('[data-play]').click()")  # pause
        await page.evaluate(f"""(() => {{ const s = document.querySelector('[data-scrubber]');
            s.value = {len(r.positions) - 1}; s.dispatchEvent(new Event('input')); }})()""")
        last = r.positions[-1]
        shown = await markers(page)
        for slot in range(3):
            x, y = (float(v) for v in shown[str(slot)].removeprefix("translate(").removesuffix(")").split())
            assert (round(x * CENTIMETRES), round(y * CENTIMETRES)) == (last[2 * slot], last[2 * slot + 1])
        await page.evaluate(f"document.querySelector('[data-vote=\"{film.split.frame}\"]')"
                            ".dispatchEvent(new MouseEvent('click'))")  # a vote mark jumps to its frame
        assert await page.evaluate("document.querySelector('section.round').dataset.frame") == str(film.split.frame)
        assert page.exceptions == []
        await page.screenshot(artefact("replay-page-split.png"))


def test_replay_html_of_a_log_the_verifier_accepts(agreed, tmp_path, capsys):
    data_dir, log = agreed
    out = tmp_path / "page.html"
    assert main(["--data-dir", str(data_dir), "replay", str(log), "--html", str(out)]) == 0
    assert capsys.readouterr().out.startswith("replay complete")
    report = replay(log, assets(data_dir))
    page = out.read_text()
    assert 'class="ok">replay: replay complete' in page and f"{report.votes_verified} checksum votes verified" in page


def test_a_kept_soak_race_gets_the_page_of_a_node_whose_log_replayed(split, tmp_path):
    """The soak's race directory (``nodeN/`` per node) gets ``replay.html`` from the first node whose log
    replayed, with every node's saved states; without any log, the row says so."""
    import shutil

    from open4wd_node.soak.classify import NodeObservation
    from open4wd_node.soak.pages import race_page

    tmp, logs = split
    work = tmp_path / "race"
    for i in range(3):
        shutil.copytree(tmp / f"n{i}", work / f"node{i}")
    nodes = [NodeObservation(0, replay_ok=False, replay_error="replay-torn: cut"), NodeObservation(1, replay_ok=False),
             NodeObservation(2, replay_ok=True, replay_status="complete")]
    assert race_page(work, nodes) == {"replay_page": "replay.html", "replay_page_node": "node2"}
    marks = Marks((work / "replay.html").read_text()).found
    assert "data-split-frame" in marks and len(marks["data-car"]) == 3 and marks["data-differences"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert race_page(empty, nodes) == {"replay_page_error": "no node left a race log"}
