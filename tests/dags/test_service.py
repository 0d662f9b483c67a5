"""Airflow as a local service (`make up`): log in through the REST API, unpause
washline_nightly, trigger a run as the UI's trigger form would (a Params conf
and, as Airflow 3 allows, no logical date), poll it to success, check that every
task worked on the UTC date of its run_after and that the published tables hold
that slice; then the plugin's report and review tabs, extra links and refusals
on that run; stop everything (`make down`).

One scheduler-driven run serves every test (a run through the scheduler costs
minutes on two shared cores); the Params and the no-logical-date path it covers
are the two ways a user triggers a night from the UI.

Runs in its own AIRFLOW_HOME, data root and port, so it never touches the
developer's `.airflow/` or `data/`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
#: the run has no logical date and is due at 00:30 on 3 March at UTC+1: 23:30 on 2 March in UTC
RUN_AFTER = "2025-03-03T00:30:00+01:00"
DS = "2025-03-02"  # the UTC date of RUN_AFTER: what every task works on
RUN_ID = "ui_like_no_logical_date"
#: records of FEBRL1 landed for the run (the first ROWS of the feed)
ROWS = 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, base: str, password: str):
        self.base = base
        body = json.dumps({"username": "admin", "password": password}).encode()
        req = urllib.request.Request(f"{base}/auth/token", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status in (200, 201)
            self.token = json.load(resp)["access_token"]

    def call(self, method: str, path: str, payload: dict | None = None) -> dict:
        req = urllib.request.Request(
            f"{self.base}{path}", method=method,
            data=None if payload is None else json.dumps(payload).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("service")
    data, home = root / "data", root / "home"
    (data / "staging").mkdir(parents=True)
    port = free_port()
    env = dict(os.environ)
    for key in [k for k in env if k.startswith(("AIRFLOW", "WASHLINE"))]:
        env.pop(key)
    env.update({
        "AIRFLOW_HOME": str(home), "WASHLINE_DATA": str(data), "AIRFLOW_PORT": str(port),
        "AIRFLOW_CONN_WASHLINE_STAGING": json.dumps({"conn_type": "sqlite", "host": str(data / "staging" / "w.db")}),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]",
                                                  "extra": {"deploy-mode": "client"}}),
    })
    subprocess.run([sys.executable, "-m", "washline.demo", "land", "--dataset", "febrl1", "--ds", DS],
                   env=env, check=True, capture_output=True)
    # the run's input: the header and the first ROWS records of the landed feed, in one file
    files = sorted((data / "landing" / "febrl" / DS).glob("*.csv"))
    lines = files[0].read_text().splitlines(keepends=True)
    for path in files:
        path.unlink()
    (data / "landing" / "febrl" / DS / "part-0000.csv").write_text("".join(lines[:ROWS + 1]))
    up = subprocess.run(["make", "-C", str(REPO), "up"], env=env, capture_output=True, text=True, timeout=600)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        password = json.loads((home / "simple_auth_manager_passwords.json.generated").read_text())["admin"]
        yield {"api": Api(f"http://127.0.0.1:{port}", password), "data": data, "home": home, "port": port}
    finally:
        down = subprocess.run(["make", "-C", str(REPO), "down"], env=env, capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stdout + down.stderr
        leftovers = subprocess.run(["pgrep", "-f", str(home)], capture_output=True, text=True).stdout.split()
        assert not leftovers, f"processes still running after make down: {leftovers}"


def _unpaused(api: Api) -> None:
    deadline = time.monotonic() + 120
    while True:  # the dag-processor needs a moment to serialise the DAG
        try:
            api.call("GET", "/api/v2/dags/washline_nightly")
            break
        except urllib.error.HTTPError:
            assert time.monotonic() < deadline, "washline_nightly never appeared"
            time.sleep(2)
    assert api.call("PATCH", "/api/v2/dags/washline_nightly", {"is_paused": False})["is_paused"] is False


def _finish(api: Api, run_id: str) -> tuple[str, dict[str, str]]:
    """Poll the run until it ends; (run state, task id -> state)."""
    deadline = time.monotonic() + 900
    state = None
    while time.monotonic() < deadline:
        state = api.call("GET", f"/api/v2/dags/washline_nightly/dagRuns/{run_id}")["state"]
        if state in ("success", "failed"):
            break
        time.sleep(5)
    tis = api.call("GET", f"/api/v2/dags/washline_nightly/dagRuns/{run_id}/taskInstances")["task_instances"]
    return state, {t["task_id"]: t["state"] for t in tis}


@pytest.fixture(scope="module")
def night(service):
    """The one run: triggered through the REST API with the Params form's conf and
    ``"logical_date": null``; polled to its end. {"run": the POST's answer, "state", "states"}."""
    api = service["api"]
    assert api.call("GET", "/api/v2/version")["version"].startswith("3.")
    _unpaused(api)
    run = api.call("POST", "/api/v2/dags/washline_nightly/dagRuns", {
        "dag_run_id": RUN_ID, "logical_date": None, "run_after": RUN_AFTER,
        "conf": {"input_folder": "landing", "staging_conn_id": "washline_staging", "profile": "default"},
    })
    state, states = _finish(api, run["dag_run_id"])
    return {"run": run, "state": state, "states": states}


def test_trigger_with_params_and_no_logical_date_through_rest_api(service, night):
    """``"logical_date": null`` (Airflow 3; the UI's trigger form allows it too):
    no ``ds`` in the tasks' context. Every task, the Spark jobs included, works
    on the UTC date of ``run_after``: the cleanse and link jobs write that
    date's folders, staging and the published tables hold that date's slice,
    and the run summary is that date's."""
    assert night["run"]["logical_date"] is None and night["run"]["conf"]["profile"] == "default"
    assert night["state"] == "success", night["states"]
    assert night["states"]["publish"] == "success"
    data = service["data"]
    cleanse = json.loads((data / "lake" / "curated" / f"{DS}.metrics.json").read_text())
    assert cleanse["ds"] == DS and cleanse["rows_in"] == ROWS  # the cleanse job's --ds
    link = json.loads((data / "lake" / "linked" / DS / "metrics.json").read_text())
    assert link["ds"] == DS and link["references"] == ROWS  # the link job's --ds
    summary = json.loads((data / "lake" / "reports" / DS / "run_summary.json").read_text())
    assert summary["ds"] == DS and summary["run_id"] == RUN_ID and summary["published"]
    conn = sqlite3.connect(data / "staging" / "w.db")
    published = dict(conn.execute("SELECT ds, COUNT(*) FROM published_records GROUP BY ds").fetchall())
    conn.close()
    assert published == {DS: ROWS} and summary["rows"]["curated"] == ROWS  # that date's slice, no other
    log = _task_log(service["api"], RUN_ID, "cleanse")
    assert f"has no logical date: using the UTC date of its run_after 2025-03-02T23:30:00+00:00 -> " \
           f"ds={DS}" in log


def _task_log(api: Api, run_id: str, task_id: str, try_number: int = 1) -> str:
    """The task's log text through the REST API (structured log lines joined)."""
    body = api.call("GET", f"/api/v2/dags/washline_nightly/dagRuns/{run_id}/taskInstances/{task_id}/logs/{try_number}")
    content = body.get("content")
    if isinstance(content, list):
        return "\n".join(str(c.get("event", c)) if isinstance(c, dict) else str(c) for c in content)
    return str(content)


def cdp_screenshot(url: str, token: str, cookie_url: str, out: Path, wait_text: str, timeout: float = 90.0) -> str:
    """Open ``url`` in headless Chromium logged in with ``token`` (the simple auth
    manager's ``_token`` cookie, set over the DevTools protocol), wait until the
    page text contains ``wait_text``, save a PNG to ``out`` and return the text."""
    import asyncio
    import base64
    import tempfile

    import websockets

    profile = Path(tempfile.mkdtemp(prefix="chromium-"))
    proc = subprocess.Popen(
        ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", "--window-size=1400,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "Chromium did not open its DevTools port"
            time.sleep(0.2)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            page = next(t for t in json.load(resp) if t["type"] == "page")

        async def drive() -> str:
            async with websockets.connect(page["webSocketDebuggerUrl"], max_size=50_000_000) as ws:
                counter = 0

                async def call(method, **params):
                    nonlocal counter
                    counter += 1
                    await ws.send(json.dumps({"id": counter, "method": method, "params": params}))
                    while True:
                        msg = json.loads(await ws.recv())
                        if msg.get("id") == counter:
                            assert "error" not in msg, msg
                            return msg.get("result", {})

                await call("Network.enable")
                await call("Network.setCookie", name="_token", value=token, url=cookie_url)
                await call("Page.navigate", url=url)
                text = ""
                end = time.monotonic() + timeout
                while time.monotonic() < end:
                    await asyncio.sleep(1)
                    res = await call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''")
                    text = res.get("result", {}).get("value", "")
                    if wait_text in text:
                        break
                await asyncio.sleep(1)
                shot = await call("Page.captureScreenshot", format="png")
                out.write_bytes(base64.b64decode(shot["data"]))
                return text

        return asyncio.run(drive())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(),
                    reason="Debian's chromium is not installed (.ci/run installs it)")
def test_ui_dag_page_in_headless_chromium(service):
    """The UI's DAG page, logged in as admin, shows washline_nightly; the
    screenshot is kept as a test artefact under the service's data root."""
    base = f"http://127.0.0.1:{service['port']}"
    out = service["data"] / "ui-washline_nightly.png"
    text = cdp_screenshot(f"{base}/dags/washline_nightly", service["api"].token, base, out, "washline_nightly")
    assert "washline_nightly" in text, text[:2000]
    assert out.stat().st_size > 10_000
    print(f"screenshot: {out}")


# ---------------------------------------------------------------------------
# The washline plugin on the run above: report tab, extra links,
# refusals. These reuse the module's one run (the night fixture).
# ---------------------------------------------------------------------------

def _http(url: str, token: str | None = None) -> tuple[int, str, str]:
    """(status, final URL, body) of a GET, following redirects, with an optional bearer token."""
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.url, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, url, exc.read().decode("utf-8", "replace")


def test_plugin_serves_the_run_s_report_only_to_an_authenticated_reader(service, night):
    api, base = service["api"], f"http://127.0.0.1:{service['port']}"
    run_id = RUN_ID
    page = f"{base}/washline/dags/washline_nightly/runs/{run_id}/report"
    assert _http(page)[0] == 401  # no token
    assert _http(f"{base}/washline/dags/washline_nightly/reports/{DS}/report.html")[0] == 401
    assert _http(page, "not-a-jwt")[0] == 403
    status, final, body = _http(page, api.token)
    assert status == 200 and final.endswith(f"/washline/dags/washline_nightly/reports/{DS}/report.html"), final
    assert f"washline night {DS}" in body and run_id in body and "Published" in body
    # the staging database is two folders up from the reports folder: never served
    (service["data"] / "staging" / "w.db").stat()
    for outside in ("..%2F..%2Fstaging%2Fw.db", f"{DS}%2F..%2F..%2F..%2Fstaging%2Fw.db", "%2Fetc%2Fpasswd"):
        status, _, body = _http(f"{base}/washline/dags/washline_nightly/reports/{outside}", api.token)
        assert status == 403, (outside, status, body[:300])
    # the 404 of a run that does not exist, with a token
    assert _http(f"{base}/washline/dags/washline_nightly/runs/no_such_run/report", api.token)[0] == 404


def test_extra_links_resolve_to_the_run_s_data_docs_and_report(service, night):
    api, base = service["api"], f"http://127.0.0.1:{service['port']}"
    run_id = RUN_ID
    got = {}
    for task, name in (("check_quality", "GX Data Docs"), ("report", "Night report")):
        links = api.call("GET", f"/api/v2/dags/washline_nightly/dagRuns/{run_id}/taskInstances/{task}/links")
        url = links["extra_links"][name]
        assert url and url.startswith("/washline/"), links
        status, final, body = _http(base + url, api.token)
        assert status == 200, (task, url, status, body[:300])
        assert _http(base + url)[0] == 401  # the link is no way around the login
        got[task] = (final, body)
    final, body = got["check_quality"]
    assert final.endswith("/data_docs/local_site/index.html") and "/gx/ui_like_" in final
    assert "Expectation" in body or "expectation" in body  # GX's own Data Docs page
    assert run_id in got["report"][1]


CHARTS_RENDERED = """(doc => Array.from(doc.querySelectorAll('figure.chart')).map(f => {
    const svg = f.querySelector('svg'); const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    return [f.dataset.chart, !!svg, Math.round(r.width), Math.round(r.height), svg ? svg.querySelectorAll('path').length : 0];
}))(%s)"""


@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(),
                    reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_tab_on_the_dag_run_page_and_the_file_in_headless_chromium(service, night):
    """The DAG run page's "Night report" tab shows this run's report (in the
    UI's iframe, from the plugin app); "Link review" shows its review page with
    a working export; and report.html opened from the file renders every chart
    and asks for nothing but itself. Screenshots are kept under the data root."""
    sys.path.insert(0, str(REPO / "tests"))
    from browser import Chromium

    api, base, data = service["api"], f"http://127.0.0.1:{service['port']}", service["data"]
    run_id = RUN_ID
    report_file = data / "lake" / "reports" / DS / "report.html"
    frame = "document.querySelector('iframe')"

    async def in_ui(page):
        await page.goto(f"{base}/dags/washline_nightly/runs/{run_id}/plugin/washline-report")
        await page.wait(f"!!({frame} && {frame}.contentDocument && "
                        f"{frame}.contentDocument.querySelectorAll('figure.chart svg').length >= 5)", 120)
        text = await page.evaluate(f"{frame}.contentDocument.body.innerText")
        charts = await page.evaluate(CHARTS_RENDERED % f"{frame}.contentDocument")
        tabs = await page.evaluate("document.body.innerText")
        await page.screenshot(data / "ui-night-report.png", full_page=False)
        await page.goto(f"{base}/dags/washline_nightly/runs/{run_id}/plugin/washline-review")
        await page.wait(f"!!({frame} && {frame}.contentWindow && {frame}.contentWindow.washlineReview)", 120)
        w = f"{frame}.contentWindow"
        pairs = await page.evaluate(f"{frame}.contentDocument.querySelectorAll('article.pair').length")
        await page.evaluate(f"{frame}.contentDocument.querySelector('article.pair input[value=must_link]').click()")
        await page.evaluate(f"{frame}.contentDocument.getElementById('steward').value = 'ci'")
        exported = await page.evaluate(f"{w}.washlineReview.exportCsv()")
        return text, charts, tabs, pairs, exported

    async def from_file(page):
        await page.goto(report_file.as_uri())
        charts = await page.evaluate(CHARTS_RENDERED % "document")
        await page.screenshot(data / "report.png")
        return charts, list(page.requests)

    with Chromium(1400, 1000) as browser:
        text, charts, tabs, pairs, exported = browser.run(in_ui, cookie=("_token", api.token, base))
    assert "Night report" in tabs and "Link review" in tabs
    assert run_id in text and f"washline night {DS}" in text
    assert [c[0] for c in charts] == ["rows", "sizes", "scores", "seconds", "trend"], charts
    assert all(c[1] and c[2] > 200 and c[3] > 100 and c[4] > 5 for c in charts), charts
    assert pairs > 0
    header, row = exported.strip().split("\n")[:2]
    assert header == "source_a,record_id_a,source_b,record_id_b,decision,decided_by,decided_at,note"
    assert ",must_link,ci," in row
    assert not (data / "decisions").exists()  # exporting wrote nothing on the server

    with Chromium(1200, 900) as browser:
        charts, requests = browser.run(from_file)
    assert all(c[1] and c[2] > 200 and c[3] > 100 and c[4] > 5 for c in charts) and len(charts) == 5, charts
    assert requests == [report_file.as_uri()], requests  # one self-contained file: nothing else is fetched
    assert (data / "report.png").stat().st_size > 50_000
    print(f"screenshots: {data / 'ui-night-report.png'}, {data / 'report.png'}")
