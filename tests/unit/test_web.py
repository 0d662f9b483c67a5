"""The plugin's FastAPI app (washline.web) in-process, with Airflow's real
auth manager (the simple auth manager of the test configuration) issuing and
checking the JWTs: no token is refused, a token of a user the auth manager
does not let read the DAG's runs is refused, and nothing outside the reports
folder is served. The api-server test (tests/dags/test_service.py) checks the
same through the real api-server and the UI."""

from __future__ import annotations

import os

import pytest

from report_lake import published_night
from washline.web import Refused, resolve_report_file


def test_paths_outside_the_reports_folder_are_refused(tmp_path):
    root = tmp_path / "lake" / "reports"
    (root / "2025-01-01").mkdir(parents=True)
    (root / "2025-01-01" / "report.html").write_text("x")
    (tmp_path / "secret.txt").write_text("s")
    (root / "2025-01-01" / "out").symlink_to(tmp_path)
    assert resolve_report_file(root, "2025-01-01/report.html") == (root / "2025-01-01" / "report.html").resolve()
    assert resolve_report_file(root, "2025-01-01/missing.html") is None
    assert resolve_report_file(root, "2025-01-01") is None  # a folder is not a file
    for bad in ("../secret.txt", "2025-01-01/../../secret.txt", str(tmp_path / "secret.txt"), "/etc/passwd",
                "2025-01-01/out/secret.txt", "2025-01-01/report.html\x00.png"):
        with pytest.raises(Refused):
            resolve_report_file(root, bad)


@pytest.fixture
def client(tmp_path, monkeypatch):
    if not (os.environ.get("AIRFLOW_HOME") and os.path.exists(os.path.join(os.environ["AIRFLOW_HOME"], "airflow.db"))):
        pytest.skip("Airflow metadata DB missing: run through `make test`")
    from fastapi.testclient import TestClient

    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from washline.web import create_app

    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    from washline.report_html import write_report

    paths, summary = published_night(tmp_path)
    write_report(paths, summary)
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / "w.db").write_text("not for the browser")
    am = init_auth_manager()
    tokens = {role: am.generate_jwt(SimpleAuthManagerUser(username=f"u-{role}", role=role))
              for role in ("admin", "viewer", None)}
    return TestClient(create_app()), tokens, paths


def test_a_request_without_a_token_is_refused(client):
    c, tokens, paths = client
    r = c.get(f"/dags/washline_nightly/reports/{paths.ds}/report.html")
    assert r.status_code == 401
    assert c.get("/").status_code == 401
    r = c.get(f"/dags/washline_nightly/reports/{paths.ds}/report.html", headers={"Authorization": "Bearer forged"})
    assert r.status_code == 403


def test_a_user_without_dag_access_is_refused(client):
    c, tokens, paths = client
    r = c.get(f"/dags/washline_nightly/reports/{paths.ds}/report.html",
              headers={"Authorization": f"Bearer {tokens[None]}"})
    assert r.status_code == 403  # authenticated, but the auth manager grants a user without a role nothing


@pytest.mark.parametrize("how", ["bearer", "cookie"])
def test_a_reader_gets_the_report_with_a_policy_that_forbids_fetching(client, how):
    c, tokens, paths = client
    kw = ({"headers": {"Authorization": f"Bearer {tokens['viewer']}"}} if how == "bearer"
          else {"cookies": {"_token": tokens["viewer"]}})
    r = c.get(f"/dags/washline_nightly/reports/{paths.ds}/report.html", **kw)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in r.headers["content-security-policy"]
    assert paths.ds in r.text
    assert c.get(f"/dags/washline_nightly/reports/{paths.ds}/gx", **kw).status_code == 404  # a folder


def test_traversal_out_of_the_reports_folder_is_refused(client):
    c, tokens, paths = client
    auth = {"Authorization": f"Bearer {tokens['admin']}"}
    for bad in ("..%2F..%2Fstaging%2Fw.db", f"{paths.ds}%2F..%2F..%2F..%2Fstaging%2Fw.db", "%2Fetc%2Fpasswd"):
        r = c.get(f"/dags/washline_nightly/reports/{bad}", headers=auth)
        assert r.status_code == 403, (bad, r.status_code, r.text[:200])
        assert "not for the browser" not in r.text
    assert c.get("/dags/washline_nightly/reports/2099-01-01/report.html", headers=auth).status_code == 404


def test_only_the_nightly_dag_has_reports(client):
    c, tokens, paths = client
    r = c.get(f"/dags/washline_integrity/reports/{paths.ds}/report.html",
              headers={"Authorization": f"Bearer {tokens['admin']}"})
    assert r.status_code == 404


def test_the_index_lists_the_nights_with_a_report(client):
    c, tokens, paths = client
    r = c.get("/", headers={"Authorization": f"Bearer {tokens['viewer']}"})
    assert r.status_code == 200
    assert f"dags/washline_nightly/reports/{paths.ds}/report.html" in r.text
