"""The race pictures as people meet them, with real processes: a demo on a terminal (a pseudo-terminal, so
the demo draws its live view) and on its live page in headless Chromium, the demo's logs as replay pages,
and a spectator's live page (``watch --web``) seen moving. Every wait is for an event (a line, a frame
number, a changed position), bounded by a generous ceiling that only a hang reaches."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import trio

from open4wd_node.cli.main import main
from open4wd_node.race.log import LogReader
from tests.node_process import Process
from tests.open4wd_node.view.test_replay_page import opened_replay_page
from tests.services import Page, artefact, headless_chromium

HANG_LIMIT_S = 300
RACE_START_S = 180.0  # the room, the countdown and the first frames on a loaded machine
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")
BRAILLE = re.compile("[\u2801-\u28ff]")


class Terminal:
    """A process whose stdout and stderr are a pseudo-terminal 160 columns wide; what it drew is kept."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.master, self.output, self.changed = master, b"", threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # the process closed the terminal (EIO)
                chunk = b""
            with self.changed:
                self.output += chunk
                self.changed.notify_all()
            if not chunk:
                return

    def text(self) -> str:
        """What was drawn so far, without the escape codes."""
        return ANSI.sub("", self.output.decode(errors="replace"))

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first match of ``pattern`` in what was drawn (waiting for it, up to the hang limit)."""
        with self.changed:
            found = self.changed.wait_for(lambda: re.search(pattern, self.text()) or self.proc.poll() is not None,
                                          timeout=HANG_LIMIT_S)
        match = re.search(pattern, self.text())
        assert match, f"{pattern!r} never appeared; the end of the output: {self.text()[-2000:]} ({found})"
        return match


async def positions(page: Page) -> dict[str, str]:
    return await page.evaluate("Object.fromEntries([...document.querySelectorAll('svg.map [data-car]')]"
                               ".map(g => [g.dataset.car, g.getAttribute('transform')]))")


async def seen_moving(page: Page, cars: int) -> None:
    """The live page shows ``cars`` markers on a track, and a second of race later they are elsewhere."""
    await page.wait_for(f"document.querySelectorAll('svg.map [data-car]').length === {cars} && "
                        "document.querySelectorAll('svg.map path[data-track]').length === 1 && "
                        "+document.body.dataset.frame > 0", timeout_s=RACE_START_S)
    frame = await page.evaluate("+document.body.dataset.frame")
    before = await positions(page)
    await page.wait_for(f"+document.body.dataset.frame >= {frame + 60}", timeout_s=RACE_START_S)  # a second of race
    after = await positions(page)
    assert set(after) == set(before) and after != before, (before, after)
    assert page.exceptions == []


def checksums(log: Path) -> list[dict]:
    return [r.record for r in LogReader(log) if r.record["kind"] == "checksum"]


async def test_a_demo_shows_its_race_on_the_terminal_and_the_live_page_and_its_logs_replay_as_pages(tmp_path):
    env = {**os.environ, "TERM": "xterm-256color", "OPEN4WD_DATA_DIR": str(tmp_path)}
    env.pop("COLUMNS", None), env.pop("LINES", None)
    demo = Terminal([sys.executable, "-m", "open4wd_node.cli.main", "demo", "--nodes", "3", "--track", "builtin:track-01",
                     "--corrupt", "2@150", "--web", "127.0.0.1:0"], env)
    try:
        url = (await trio.to_thread.run_sync(demo.wait_for, r"live page: (http://127\.0\.0\.1:[0-9]+/)"))[1]
        async with headless_chromium("--window-size=1000,800") as browser:
            page = await browser.open(url)
            await seen_moving(page, 3)
            await page.screenshot(artefact("demo-live-page.png"))
        # on the terminal, during the race: the track in braille beside the table, a marker for every node
        await trio.to_thread.run_sync(demo.wait_for, "node2 .*desync")  # node 2 was voted out: well into the race
        drawn = demo.text()
        assert BRAILLE.search(drawn)
        for node in range(3):
            assert re.search(rf"\b[1-3] node{node}\b", drawn), f"no marker for node{node}"
        assert await trio.to_thread.run_sync(lambda: demo.proc.wait(timeout=HANG_LIMIT_S)) == 0, demo.text()[-3000:]
    finally:
        if demo.proc.poll() is None:
            os.killpg(demo.proc.pid, signal.SIGTERM)
            demo.proc.wait(timeout=60)
        os.close(demo.master)
    (run,) = (tmp_path / "demo").iterdir()
    log = next((run / "node0" / "races").glob("*.o4wlog"))
    page_file = tmp_path / "node0.html"
    assert main(["--data-dir", str(run / "node0"), "replay", str(log), "--html", str(page_file), "--states", str(run)]) == 0
    votes = checksums(log)
    split = next(v["frame"] for v in votes if len(set(v["hashes"].values())) > 1)
    async with headless_chromium("--window-size=1100,1700") as browser:
        page, dom = await opened_replay_page(browser, page_file)
        assert dom == {"cars": 3, "track": 1, "votes": [v["frame"] for v in votes], "split": str(split), "differences": 1,
                       "fetched": 0, "frame": "0"}
        assert page.exceptions == []
        await page.screenshot(artefact("demo-replay-page.png"))


async def test_watch_web_serves_a_page_that_a_browser_sees_moving(tmp_path):
    listen = ("--listen", "127.0.0.1:0")
    host = Process(tmp_path, "host", "host", "--track", "builtin:track-01", "--laps", "1", "--min-players", "2",
                   "--max-players", "2", "--spectators", "1", "--auto-ready", *listen)
    processes = [host]
    try:
        invites = (await trio.to_thread.run_sync(host.wait_for, "room-created"))["invites"]
        watcher = Process(tmp_path, "watcher", "watch", invites["spectator"], "--web", "127.0.0.1:0", *listen)
        processes.append(watcher)
        url = (await trio.to_thread.run_sync(watcher.wait_for, "live-page"))["url"]
        assert re.fullmatch(r"http://127\.0\.0\.1:[0-9]+/", url)
        await trio.to_thread.run_sync(watcher.wait_for, "joined")  # a spectator is admitted before the match starts
        processes.append(Process(tmp_path, "player", "join", invites["participant"], "--auto-ready", *listen))
        async with headless_chromium("--window-size=1000,800") as browser:
            page = await browser.open(url)
            await seen_moving(page, 2)
            await page.screenshot(artefact("watch-live-page.png"))
    finally:
        for process in processes:
            if process.proc.poll() is None:
                process.proc.send_signal(signal.SIGTERM)
        codes = [await trio.to_thread.run_sync(process.wait) for process in processes]
    assert all(code in (0, 143) for code in codes), codes  # stopped by the test, or already done
