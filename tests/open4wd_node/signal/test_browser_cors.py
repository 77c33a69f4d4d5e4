"""A game page in headless Chromium, served from another origin, fetches TURN credentials from the
service's /turn-token: the browser's own CORS preflight and checks pass (the spec's server, without CORS,
cannot be read from such a page); with an allow-list that leaves the page's origin out, the browser
refuses to give the page the reply."""

from __future__ import annotations

import json

import pytest
import trio

from protocol.signaling.turn import turn_request_body
from tests.open4wd_node.signal.helpers import SECRET, running_service
from tests.protocol.signaling.helpers import ALICE
from tests.services import headless_chromium

PAGE = b"<!doctype html><title>game</title><p>a game page</p>"


async def serve_page(*, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """A page on its own origin (another port of 127.0.0.1)."""
    async def answer(stream: trio.SocketStream) -> None:
        with trio.move_on_after(10):
            await stream.receive_some(65536)
            await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
                                  b"Connection: close\r\n\r\n%s" % (len(PAGE), PAGE))
        await trio.aclose_forcefully(stream)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(answer, listeners)


FETCH = """fetch(%s, {method: 'POST', headers: {'content-type': 'application/json'}, body: %s})
  .then(r => r.json()).then(j => JSON.stringify(j)).catch(e => 'refused: ' + e)"""


@pytest.mark.parametrize("origins", [("*",), ("https://other.example",)])
async def test_a_page_on_another_origin_reads_turn_credentials_only_when_allowed(origins):
    async with running_service(SECRET, cors_origins=origins) as run, trio.open_nursery() as nursery:
        page_port = await nursery.start(serve_page)
        async with headless_chromium() as browser:
            page = await browser.open(f"http://127.0.0.1:{page_port}/")
            body = turn_request_body(ALICE, run.service.now_ms()).decode()
            result = await page.evaluate(FETCH % (json.dumps(f"http://{run.address}/turn-token"), json.dumps(body)))
        nursery.cancel_scope.cancel()
    if origins == ("*",):
        assert json.loads(result)["username"].endswith(ALICE.peer_id)
    else:
        assert result.startswith("refused: TypeError")
