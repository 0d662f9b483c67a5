"""End to end: `airflow dags test washline_nightly` on FEBRL1 (1,000 records),
with real spark-submit, real SQLite staging, real GX — then the same date again.

The F1 floor is set a few points under the figure measured when the test was
written (see benchmarks/README.md), so a real regression in linkage fails it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DS = "2025-02-01"
F1_FLOOR = 0.85


@pytest.fixture(scope="module")
def run_env(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    env = dict(os.environ)
    env.update({
        "WASHLINE_DATA": str(data),
        "AIRFLOW_HOME": env.get("AIRFLOW_HOME", str(REPO / ".airflow")),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(REPO / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps(
            {"conn_type": "spark", "host": "local[2]", "extra": {"deploy-mode": "client"}}),
        "AIRFLOW_CONN_WASHLINE_STAGING": json.dumps(
            {"conn_type": "sqlite", "host": str(data / "staging" / "washline.db")}),
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    })
    if not (Path(env["AIRFLOW_HOME"]) / "airflow.db").exists():
        pytest.skip("Airflow metadata DB missing: run the suite through `make test`")
    (data / "staging").mkdir()
    subprocess.run([sys.executable, "-m", "washline.demo", "land", "--dataset", "febrl1", "--ds", DS],
                   env=env, check=True, capture_output=True, text=True)
    return env, data


def dags_test(env, data, attempt):
    log = data / f"dags-test-{attempt}.log"
    with log.open("w") as fh:
        proc = subprocess.run([str(BIN / "airflow"), "dags", "test", "washline_nightly", DS],
                              env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=1200)
    text = log.read_text()
    assert proc.returncode == 0, text[-6000:]
    summary = json.loads((data / "lake" / "reports" / DS / "run_summary.json").read_text())
    return summary, text


def published(data):
    conn = sqlite3.connect(data / "staging" / "washline.db")
    try:
        recs = conn.execute("SELECT record_id FROM published_records WHERE ds = ? ORDER BY record_id", (DS,)).fetchall()
        links = conn.execute("SELECT record_id, cluster_id FROM published_links WHERE ds = ? ORDER BY record_id",
                             (DS,)).fetchall()
        orphans = conn.execute(
            "SELECT COUNT(*) FROM published_records r LEFT JOIN published_links l "
            "ON l.ds = r.ds AND l.record_id = r.record_id WHERE r.ds = ? AND l.cluster_id IS NULL", (DS,)).fetchone()[0]
    finally:
        conn.close()
    return recs, links, orphans


def test_nightly_runs_end_to_end_and_reruns_idempotently(run_env):
    env, data = run_env
    summary, log = dags_test(env, data, 1)
    assert summary["published"] is True, summary
    rows = summary["rows"]
    assert rows["in"] == 1000
    assert rows["curated"] + rows["quarantined"] == rows["in"]
    assert rows["loaded"] == rows["published"] == rows["curated"]
    assert summary["checks"]["integrity"] == "PASS"
    assert summary["checks"]["quality"] in ("PASS", "WARN")
    assert summary["pairwise"]["f1"] >= F1_FLOOR, summary["pairwise"]
    assert all(v is not None and v >= 0 for v in summary["seconds"].values()), summary["seconds"]
    recs, links, orphans = published(data)
    assert len(recs) == rows["curated"] and len(set(recs)) == len(recs)
    assert orphans == 0 and len(links) == len(recs)
    assert "SparkJobOperator" in log or "spark-submit" in log.lower()

    summary2, _ = dags_test(env, data, 2)
    recs2, links2, _ = published(data)
    assert summary2["published"] is True
    assert recs2 == recs and links2 == links  # same rows, no duplicates
