"""report.html in a real browser: headless Chromium driven over the DevTools protocol.

Why the DevTools protocol and not console logging to stderr: it reports console
errors, uncaught exceptions and failed loads as structured events, lets the test
ask the page whether every chart image decoded (naturalWidth/Height), lists every
network request (a self-contained report makes none beyond file: and data:),
and takes the screenshot, all from Python with one small dependency
(websocket-client) and no Node toolchain. A control page with a deliberate
console error proves the error capture works.
"""
from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from mpibench.results import report

from test_results_report import write_run_dir

pytestmark = pytest.mark.browser

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1400,900"]
FIRST_SCREEN = (1400, 900)
START_TIMEOUT_S = 60


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    reason = "headless Chromium is not installed (make system-deps installs Debian's chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason + "; CI=true, so this is a failure, not a skip")
    pytest.skip(reason)


class DevTools:
    """A minimal DevTools-protocol session with one page."""

    def __init__(self, ws_url: str):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict] = []

    def call(self, method: str, **params) -> dict:
        call_id = next(self.ids)
        self.ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == call_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str, timeout_s: float = 30) -> dict:
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline:
            for event in self.events[seen:]:
                if event.get("method") == method:
                    self.events.remove(event)
                    return event
            seen = len(self.events)
            self.events.append(json.loads(self.ws.recv()))
        raise AssertionError(f"no {method} within {timeout_s} s")

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
            elif method == "Network.loadingFailed":
                found.append(f"load failed: {params.get('errorText')}")
        return found

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path) -> None:
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        self.ws.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    exe = chromium_path()
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        port_file, deadline = profile / "DevToolsActivePort", time.monotonic() + START_TIMEOUT_S
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"chromium did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t.get("type") == "page")
        session = DevTools(page["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log", "Network"):
            session.call(f"{domain}.enable")
        yield session
        session.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_error_capture_works_on_a_page_with_an_error(browser, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>console.error("deliberate")</script>'
                   '<img src="data:image/png;base64,AAAA"></body></html>')
    browser.open(bad.as_uri())
    time.sleep(0.2)  # let the console event arrive
    browser.call("Runtime.evaluate", expression="1")
    assert any("deliberate" in e for e in browser.errors())
    sizes = browser.evaluate("Array.from(document.images).map(i => i.naturalWidth)")
    assert sizes == [0]  # a broken image is seen as broken


def test_report_loads_clean_and_every_chart_renders(browser, tmp_path):
    out = write_run_dir(tmp_path / "run")
    path = Path(report.build(str(out)))
    browser.call("Emulation.setDeviceMetricsOverride", width=FIRST_SCREEN[0], height=FIRST_SCREEN[1],
                 deviceScaleFactor=1, mobile=False)
    browser.open(path.as_uri())
    decoded = browser.evaluate(
        "Promise.all(Array.from(document.images).map(i => i.decode().then("
        "() => [i.alt, i.naturalWidth, i.naturalHeight], () => [i.alt, 0, 0])))")
    assert len(decoded) == 2, decoded  # scaling and bench; the scenario charts are inline SVG
    assert all(w > 100 and h > 100 for _, w, h in decoded), decoded
    assert browser.evaluate("document.querySelectorAll('h2').length") == 5
    assert browser.evaluate("document.title") == "mpibench report"
    assert browser.errors() == []
    assert all(u.startswith(("file:", "data:")) for u in browser.requests()), browser.requests()


def box(browser, selector: str) -> dict | None:
    return browser.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
                            " const r = e.getBoundingClientRect();"
                            " return {top: r.top, bottom: r.bottom, width: r.width, height: r.height}; })()")


def test_first_screen_holds_the_verdict_and_the_matrix_and_the_charts_their_marks(browser, tmp_path):
    out = write_run_dir(tmp_path / "run")
    path = Path(report.build(str(out)))
    browser.call("Emulation.setDeviceMetricsOverride", width=FIRST_SCREEN[0], height=FIRST_SCREEN[1],
                 deviceScaleFactor=1, mobile=False)
    browser.open(path.as_uri())
    banner, matrix = box(browser, "#verdict"), box(browser, "#matrix")
    assert banner and matrix, (banner, matrix)
    assert 0 <= banner["top"] < matrix["top"] and matrix["bottom"] <= FIRST_SCREEN[1], (banner, matrix)
    assert browser.evaluate("document.querySelector('#verdict').dataset.verdict") == "fail"
    assert "FAIL" in browser.evaluate("document.querySelector('#verdict .word').textContent")
    # every matrix cell links to a panel that exists
    targets = browser.evaluate("Array.from(document.querySelectorAll('#matrix td.cell a'))"
                               ".map(a => !!document.getElementById(a.hash.slice(1)))")
    assert len(targets) == 6 and all(targets)
    # the marks are drawn, with a size, where they belong
    drawn = browser.evaluate(
        "(() => { const n = s => Array.from(document.querySelectorAll(s))"
        ".filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 || r.height > 0; }).length;"
        " return {baseline: n('#sc-kill-mid-ring path.baseline'), epochs: n('svg .epoch-end'),"
        " outages: n('#sc-split-brain rect.outage'), kills: n('#sc-kill-mid-ring .fault-kill'),"
        " baselineInNone: n('#sc-none path.baseline')}; })()")
    assert drawn == {"baseline": 4, "epochs": drawn["epochs"], "outages": 1, "kills": 1, "baselineInNone": 0}, drawn
    assert drawn["epochs"] >= 6
    # the outage gap: the line has no segment across steps 1-2
    gap = browser.evaluate(
        "(() => { const r = document.querySelector('#sc-split-brain rect.outage').getBBox();"
        " const p = document.querySelector('#sc-split-brain path.series.loss');"
        " const xs = p.getAttribute('d').split(' ').map(sp => sp.replace(/^M/, '').split('L')"
        ".map(pt => parseFloat(pt.split(',')[0])));"
        " return xs.map(seg => seg.filter(x => x > r.x && x < r.x + r.width).length); })()")
    assert len(gap) >= 2 and not any(gap), gap  # two sub-paths (and a dash for a lone point), none inside
    shot = tmp_path / "report.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    kept = os.environ.get("MPIBENCH_SCREENSHOT")
    if kept:
        shutil.copy(shot, kept)
