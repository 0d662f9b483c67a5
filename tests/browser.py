"""Headless Chromium (Debian's /usr/bin/chromium) driven over the DevTools
protocol, for the page tests: open a URL (optionally logged in to Airflow
with its ``_token`` cookie), evaluate JavaScript, record every request the
page makes, take a screenshot.

    with Chromium() as browser:
        browser.run(lambda page: page.goto("file:///…/report.html"))

Tests that use it skip when Chromium is absent (``.ci/run`` installs it).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")


class Page:
    """One browser tab over an open DevTools websocket (use inside ``Chromium.run``)."""

    def __init__(self, ws):
        self.ws = ws
        self.requests: list[str] = []  # every URL the page asked for (Network.requestWillBeSent)
        self._pending: dict[int, asyncio.Future] = {}
        self._next = 0
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self):
        async for raw in self.ws:
            msg = json.loads(raw)
            if "id" in msg and msg["id"] in self._pending:
                self._pending.pop(msg["id"]).set_result(msg)
            elif msg.get("method") == "Network.requestWillBeSent":
                self.requests.append(msg["params"]["request"]["url"])

    async def call(self, method: str, **params):
        self._next += 1
        fut = asyncio.get_running_loop().create_future()
        self._pending[self._next] = fut
        await self.ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        msg = await asyncio.wait_for(fut, 60)
        assert "error" not in msg, msg
        return msg.get("result", {})

    async def evaluate(self, expression: str, await_promise: bool = False):
        res = await self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                              awaitPromise=await_promise)
        if "exceptionDetails" in res:
            raise AssertionError(f"JavaScript error in {expression[:200]!r}: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    async def goto(self, url: str, ready: str = "document.readyState === 'complete'", timeout: float = 60):
        await self.call("Page.navigate", url=url)
        await asyncio.sleep(0.3)
        await self.wait(ready, timeout)

    async def wait(self, expression: str, timeout: float = 60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if await self.evaluate(expression):
                    return True
            except AssertionError:
                pass  # e.g. the frame is not there yet
            await asyncio.sleep(0.5)
        raise AssertionError(f"timed out waiting for {expression}")

    async def screenshot(self, out: Path, full_page: bool = True) -> Path:
        params = {"format": "png"}
        if full_page:
            metrics = await self.call("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params.update(clip={"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000),
                                "scale": 1}, captureBeyondViewport=True)
        shot = await self.call("Page.captureScreenshot", **params)
        out.write_bytes(base64.b64decode(shot["data"]))
        return out


class Chromium:
    """A headless Chromium process with its own throwaway profile."""

    def __init__(self, width: int = 1280, height: int = 900):
        self.size = f"{width},{height}"

    def __enter__(self) -> "Chromium":
        self.profile = Path(tempfile.mkdtemp(prefix="chromium-"))
        self.proc = subprocess.Popen(
            [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-extensions",
             f"--user-data-dir={self.profile}", "--remote-debugging-port=0", f"--window-size={self.size}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
            time.sleep(0.2)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            self.ws_url = next(t for t in json.load(resp) if t["type"] == "page")["webSocketDebuggerUrl"]
        return self

    def run(self, scenario, cookie: tuple[str, str, str] | None = None):
        """Run ``async scenario(page)`` in the tab; ``cookie`` = (name, value, url) set first."""
        import websockets

        async def main():
            async with websockets.connect(self.ws_url, max_size=100_000_000) as ws:
                page = Page(ws)
                try:
                    await page.call("Network.enable")
                    await page.call("Page.enable")
                    if cookie:
                        await page.call("Network.setCookie", name=cookie[0], value=cookie[1], url=cookie[2])
                    return await scenario(page)
                finally:
                    page._reader.cancel()

        return asyncio.run(main())

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)
