"""The tests' own harness for real services: headless Chromium over the DevTools protocol."""

import pytest
import trio

from tests.services import PageError, headless_chromium

PAGE = """<!doctype html><title>t</title><body><script>
const d = document.createElement('div'); d.dataset.car = '3'; document.body.append(d);
console.log('drawn', 1);
setTimeout(() => { document.body.dataset.later = 'yes'; }, 200);
</script></body>"""


async def test_chromium_runs_a_page_and_reads_its_dom_after_scripts(tmp_path):
    page_file = tmp_path / "page.html"
    page_file.write_text(PAGE)
    async with headless_chromium() as browser:
        page = await browser.open(page_file.as_uri())
        assert await page.evaluate("document.querySelectorAll('[data-car]').length") == 1
        assert await page.wait_for("document.body.dataset.later") == "yes"
        assert page.console == ["drawn 1"]
        with pytest.raises(PageError, match="nope"):
            await page.evaluate("(() => { throw new Error('nope') })()")
        with pytest.raises(PageError, match="stayed false"):
            await page.wait_for("false", timeout_s=0.2)
        shot = await page.screenshot(tmp_path / "shot.png")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


async def test_chromium_leaves_nothing_running():
    async with headless_chromium() as browser:
        port = browser.port
    with pytest.raises(OSError):
        await trio.open_tcp_stream("127.0.0.1", port)
