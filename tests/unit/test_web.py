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


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """One published night with its pages written (shared by the tests: they only read it)."""
    from washline.report_html import write_report

    root = tmp_path_factory.mktemp("web")
    paths, summary = published_night(root)
    write_report(paths, summary)
    (root / "staging").mkdir()
    (root / "staging" / "w.db").write_text("not for the browser")
    return root, paths


@pytest.fixture
def client(lake, monkeypatch):
    if not (os.environ.get("AIRFLOW_HOME") and os.path.exists(os.path.join(os.environ["AIRFLOW_HOME"], "airflow.db"))):
        pytest.skip("Airflow metadata DB missing: run through `make test`")
    from fastapi.testclient import TestClient

    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from washline.web import create_app

    root, paths = lake
    monkeypatch.setenv("WASHLINE_DATA", str(root))
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


def test_a_run_s_tab_redirects_to_its_date_s_report_or_says_whose_it_is(client, monkeypatch):
    """The run → date lookup is the metadata database's (the api-server test
    covers it); here it is given, to check what each run's tab gets."""
    import washline.web as web
    from report_lake import RUN_ID

    c, tokens, paths = client
    monkeypatch.setattr(web, "run_date", lambda dag_id, run_id: {RUN_ID: paths.ds, "older": paths.ds,
                                                                 "running": "2025-02-01"}.get(run_id))
    auth = {"Authorization": f"Bearer {tokens['viewer']}"}
    from urllib.parse import quote

    r = c.get(f"/dags/washline_nightly/runs/{quote(RUN_ID, safe='')}/report", headers=auth, follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == f"../../reports/{paths.ds}/report.html"
    r = c.get(f"/dags/washline_nightly/runs/{quote(RUN_ID, safe='')}/report", headers=auth)
    assert r.status_code == 200 and RUN_ID in r.text  # followed: the report itself
    r = c.get("/dags/washline_nightly/runs/older/review", headers=auth, follow_redirects=False)
    assert r.status_code == 200 and "is another run&#x27;s" in r.text and RUN_ID in r.text
    assert f"href='../../reports/{paths.ds}/review.html'" in r.text
    r = c.get("/dags/washline_nightly/runs/running/report", headers=auth)
    assert r.status_code == 404 and "has not written" in r.text
    assert c.get("/dags/washline_nightly/runs/nope/report", headers=auth).status_code == 404
    assert c.get("/dags/washline_integrity/runs/x/report", headers=auth).status_code == 404
    r = c.get(f"/dags/washline_nightly/runs/{quote(RUN_ID, safe='')}/datadocs", headers=auth, follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"].endswith("/data_docs/local_site/index.html")
    assert c.get(r.headers["location"].replace("../../", "/dags/washline_nightly/"), headers=auth).status_code == 200
    assert c.get("/dags/washline_nightly/runs/older/datadocs", headers=auth).status_code == 404  # its own docs only
