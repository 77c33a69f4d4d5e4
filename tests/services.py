"""Real services the tests start (coturn, headless Chromium): found on ``PATH``, or the test is skipped.

CI installs them (``.ci/run``: Debian's ``coturn`` and ``chromium``) and sets
``OPEN4WD_REQUIRE_SERVICES=1``, which turns a missing service into a failure: there, a test that needs
one can never pass by being skipped.
"""

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import open_websocket_url

REQUIRE = "OPEN4WD_REQUIRE_SERVICES"


def require_binary(name: str, package: str) -> str:
    """The path of ``name``; skips the test when it is missing (fails under ``OPEN4WD_REQUIRE_SERVICES=1``)."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (Debian package {package})"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


# ---- headless Chromium, driven over the DevTools protocol ---------------------------------------------

CHROMIUM_FLAGS = (
    # as root, without a screen, and without reaching for Google's hosts on a closed network
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)
BROWSER_START_S = 20.0
MAX_DEVTOOLS_MESSAGE = 64 * 1024 * 1024  # a screenshot comes back whole, base64


class PageError(AssertionError):
    """A page's script threw, or a DevTools command failed."""


class Page:
    """One browser tab: evaluate JavaScript in it, read what its console and exceptions said, take a
    screenshot. ``console`` and ``exceptions`` fill as the page runs."""

    def __init__(self, ws: Any, nursery: trio.Nursery) -> None:
        self._ws = ws
        self._next_id = 0
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}
        self.console: list[str] = []
        self.exceptions: list[str] = []
        nursery.start_soon(self._read)

    async def _read(self) -> None:
        while True:
            message = json.loads(await self._ws.get_message())
            if "id" in message:
                answer = self._waiting.pop(message["id"], None)
                if answer is not None:
                    answer.send_nowait(message)
            elif message.get("method") == "Runtime.consoleAPICalled":
                self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in message["params"]["args"]))
            elif message.get("method") == "Runtime.exceptionThrown":
                details = message["params"]["exceptionDetails"]
                self.exceptions.append(details.get("exception", {}).get("description") or details.get("text", "?"))

    async def command(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command's result; ``PageError`` when it fails."""
        self._next_id += 1
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[self._next_id] = send
        await self._ws.send_message(json.dumps({"id": self._next_id, "method": method, "params": params}))
        answer = await receive.receive()
        if "error" in answer:
            raise PageError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer["result"]
        return result

    async def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` (a promise is awaited), as JSON data; ``PageError`` when it throws."""
        result = await self.command("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise PageError(details.get("exception", {}).get("description") or details.get("text", "?"))
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout_s: float = 10.0, interval_s: float = 0.05) -> Any:
        """Evaluate ``expression`` until it is truthy; its value. ``PageError`` after ``timeout_s`` (the
        page's console and exceptions in the message)."""
        with trio.move_on_after(timeout_s):
            while not (value := await self.evaluate(expression)):
                await trio.sleep(interval_s)
            return value
        raise PageError(f"{expression!r} stayed false for {timeout_s} s; console: {self.console}; "
                        f"exceptions: {self.exceptions}")

    async def screenshot(self, path: Path) -> Path:
        """A PNG of the page as it is now, written to ``path``."""
        result = await self.command("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(result["data"]))
        return path


class Browser:
    """A headless Chromium: ``open(url)`` gives a ``Page`` (``headless_chromium``)."""

    def __init__(self, port: int, browser_path: str, nursery: trio.Nursery) -> None:
        self.port = port
        self.browser_path = browser_path  # the browser-wide DevTools endpoint
        self._nursery = nursery

    async def _connect(self, path: str) -> Any:
        return await self._nursery.start(_hold_websocket, f"ws://127.0.0.1:{self.port}{path}")

    async def open(self, url: str) -> Page:
        """A new tab at ``url``, once its document has loaded."""
        browser = Page(await self._connect(self.browser_path), self._nursery)
        target = await browser.command("Target.createTarget", url="about:blank")
        page = Page(await self._connect(f"/devtools/page/{target['targetId']}"), self._nursery)
        await page.command("Runtime.enable")
        await page.command("Page.enable")
        await page.command("Page.navigate", url=url)
        await page.wait_for("document.readyState === 'complete'")
        return page


async def _hold_websocket(url: str, *, task_status: trio.TaskStatus[Any]) -> None:
    async with open_websocket_url(url, max_message_size=MAX_DEVTOOLS_MESSAGE, message_queue_size=1024) as ws:
        task_status.started(ws)
        await trio.sleep_forever()


@asynccontextmanager
async def headless_chromium(*extra_flags: str) -> AsyncIterator[Browser]:
    """A headless Chromium with an empty profile of its own, driven over the DevTools protocol on
    loopback; killed and its profile removed when the block ends. Skips the test when Chromium is
    missing (``require_binary``)."""
    binary = require_binary("chromium", "chromium")
    with tempfile.TemporaryDirectory(prefix="open4wd-chromium-") as profile:
        # its own process group: the end kills Chromium's helper processes too, which otherwise may still
        # be writing into the profile while it is removed
        process = await trio.lowlevel.open_process(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra_flags, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            active = Path(profile) / "DevToolsActivePort"
            with trio.fail_after(BROWSER_START_S):
                while not (active.exists() and len(active.read_text().splitlines()) >= 2):
                    if process.returncode is not None:
                        raise PageError(f"chromium exited with status {process.returncode} at start")
                    await trio.sleep(0.05)
            port, browser_path = active.read_text().splitlines()[:2]
            async with trio.open_nursery() as nursery:
                yield Browser(int(port), browser_path, nursery)
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                await process.wait()
                with trio.move_on_after(BROWSER_START_S):  # the helpers die at once; their exit is a moment
                    while _group_alive(process.pid):
                        await trio.sleep(0.02)


def _group_alive(group: int) -> bool:
    """Whether any process of process group ``group`` still exists."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
