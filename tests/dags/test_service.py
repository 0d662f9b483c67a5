"""Airflow as a local service (`make up`): log in through the REST API, unpause
washline_nightly, trigger a run with a Params conf as the UI form would, poll to
success, check the published tables; trigger a run with `"logical_date": null`
and check every task worked on its run_after date (UTC); stop everything
(`make down`).

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
DS = "2025-03-01"
#: a run without a logical date, due at 00:30 on 3 March at UTC+1: 23:30 on 2 March in UTC
RUN_AFTER = "2025-03-03T00:30:00+01:00"
RUN_AFTER_DS = "2025-03-02"
NO_DATE_ROWS = 200


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
    # the no-logical-date run's input: the header and the first NO_DATE_ROWS records of the same feed
    lines = sorted((data / "landing" / "febrl" / DS).glob("*.csv"))[0].read_text().splitlines(keepends=True)
    (data / "landing" / "febrl" / RUN_AFTER_DS).mkdir(parents=True)
    (data / "landing" / "febrl" / RUN_AFTER_DS / "part-0000.csv").write_text("".join(lines[:NO_DATE_ROWS + 1]))
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


def test_trigger_with_params_through_rest_api(service):
    api = service["api"]
    assert api.call("GET", "/api/v2/version")["version"].startswith("3.")
    _unpaused(api)
    run = api.call("POST", "/api/v2/dags/washline_nightly/dagRuns", {
        "dag_run_id": f"ui_like_{DS}",
        "logical_date": f"{DS}T00:00:00Z",
        "conf": {"input_folder": "landing", "staging_conn_id": "washline_staging", "profile": "default"},
    })
    run_id = run["dag_run_id"]
    state, states = _finish(api, run_id)
    assert state == "success", states
    assert states["publish"] == "success"
    conn = sqlite3.connect(service["data"] / "staging" / "w.db")
    published = conn.execute("SELECT COUNT(*) FROM published_records WHERE ds = ?", (DS,)).fetchone()[0]
    conn.close()
    summary = json.loads((service["data"] / "lake" / "reports" / DS / "run_summary.json").read_text())
    assert published == summary["rows"]["curated"] == 1000


def test_run_without_logical_date_works_on_its_run_after_date(service):
    """``"logical_date": null`` (Airflow 3; the UI's trigger form allows it too):
    no ``ds`` in the tasks' context. Every task, the Spark jobs included, works
    on the UTC date of ``run_after``: the cleanse and link jobs write that
    date's folders, staging and the published tables hold that date's slice,
    and the run summary is that date's."""
    api = service["api"]
    _unpaused(api)
    run = api.call("POST", "/api/v2/dags/washline_nightly/dagRuns", {
        "dag_run_id": "no_logical_date", "logical_date": None, "run_after": RUN_AFTER})
    assert run["logical_date"] is None
    state, states = _finish(api, run["dag_run_id"])
    assert state == "success", states
    data = service["data"]
    cleanse = json.loads((data / "lake" / "curated" / f"{RUN_AFTER_DS}.metrics.json").read_text())
    assert cleanse["ds"] == RUN_AFTER_DS and cleanse["rows_in"] == NO_DATE_ROWS  # the cleanse job's --ds
    link = json.loads((data / "lake" / "linked" / RUN_AFTER_DS / "metrics.json").read_text())
    assert link["ds"] == RUN_AFTER_DS and link["references"] == NO_DATE_ROWS  # the link job's --ds
    summary = json.loads((data / "lake" / "reports" / RUN_AFTER_DS / "run_summary.json").read_text())
    assert summary["ds"] == RUN_AFTER_DS and summary["run_id"] == "no_logical_date" and summary["published"]
    conn = sqlite3.connect(data / "staging" / "w.db")
    published = dict(conn.execute("SELECT ds, COUNT(*) FROM published_records GROUP BY ds").fetchall())
    conn.close()
    assert published[RUN_AFTER_DS] == NO_DATE_ROWS and set(published) <= {DS, RUN_AFTER_DS}  # no other date
    log = _task_log(api, "no_logical_date", "cleanse")
    assert f"has no logical date: using the UTC date of its run_after 2025-03-02T23:30:00+00:00 -> " \
           f"ds={RUN_AFTER_DS}" in log


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
