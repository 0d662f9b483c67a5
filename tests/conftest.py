"""Shared fixtures: a small local Spark session and repo paths.

The Spark fixture follows Splink's test set-up: no UI, few shuffle partitions,
UTC session time zone.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

#: JVM options for the short-lived Spark drivers the suite starts: each test's own spark-submit and
#: every spark-submit of a DAG run (they inherit the environment). The C1 compiler only
#: (``TieredStopAtLevel=1``): those JVMs live seconds to a few minutes on inputs of a few thousand
#: rows, where the C2 compiler's threads spend more of the two cores than its code saves (a
#: spark-submit of the cleanse job on FEBRL1: 75-97 s -> 57 s on a loaded 2-core box). The ``spark``
#: fixture's JVM lives as long as the worker and keeps the defaults (C1 only made the in-process link
#: tests slower: 506 s -> 552 s). Results do not depend on it (Java arithmetic is strict); executors
#: of the standalone-cluster test and production runs keep the JVM's defaults. A SPARK_SUBMIT_OPTS
#: already set (even empty) wins.
SPARK_TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1"
#: ... and map the Spark classes from a class-data-sharing archive when there is one (tests/spark_cds.py:
#: the cleanse job of a 400-row night through spark-submit 19.5 s -> 14.5 s of CPU); the first session
#: that runs Spark builds it (pytest_configure below)
SPARK_TEST_JVM_OPTS_C1 = SPARK_TEST_JVM_OPTS


def _with_cds(opts: str) -> str:
    import spark_cds  # tests/spark_cds.py

    archive = spark_cds.existing_archive()
    return f"{opts} -XX:SharedArchiveFile={archive}" if archive is not None else opts


SPARK_TEST_JVM_OPTS = _with_cds(SPARK_TEST_JVM_OPTS_C1)
os.environ.setdefault("SPARK_SUBMIT_OPTS", SPARK_TEST_JVM_OPTS)

#: The retry delay of the DAGs' tasks in every DAG run of the suite (``airflow dags test`` and the
#: service inherit the environment; washline.paths.retry_delay reads it when the DAG file is parsed):
#: the tests that kill a job (tests/dags/test_faults.py, test_nightly_e2e.py) assert that Airflow
#: retries it, not how long it waits first, and the default 30 s was 30 s of idle waiting per retry.
#: A WASHLINE_RETRY_DELAY_SECONDS already set wins.
TEST_RETRY_DELAY_SECONDS = "2"
os.environ.setdefault("WASHLINE_RETRY_DELAY_SECONDS", TEST_RETRY_DELAY_SECONDS)


def pytest_configure(config):
    """Build the class-data-sharing archive of the suite's Spark JVMs once (tests/spark_cds.py) before a
    session that may run Spark: in the xdist controller before its workers start (they then pick it
    up when they import this file), or in a session without xdist. ``make test-fast`` (``-m`` with
    ``not spark``) never builds it."""
    global SPARK_TEST_JVM_OPTS
    if _xdist(config) or "not spark" in (config.getoption("markexpr", "") or ""):
        return
    import spark_cds

    if spark_cds.existing_archive() is None and spark_cds.ensure_archive(SPARK_TEST_JVM_OPTS_C1) is not None:
        opts = _with_cds(SPARK_TEST_JVM_OPTS_C1)
        if os.environ.get("SPARK_SUBMIT_OPTS") == SPARK_TEST_JVM_OPTS:  # ours, not one set from outside
            os.environ["SPARK_SUBMIT_OPTS"] = opts
        SPARK_TEST_JVM_OPTS = opts


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def sqlcapture():
    """``benchmarks/sqlcapture.py`` (SQL statement capture and reading; not part of the product)."""
    return _benchmark_module("sqlcapture")


@pytest.fixture(scope="session")
def benchmark_module():
    """``benchmark_module("name")`` → ``benchmarks/name.py`` as a module (loaded once per session)."""
    return _benchmark_module


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The recorded real-world inputs beside the repo; tests skip without them."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    from hdwm.spark import get_spark

    # this JVM lives as long as the worker: the JVM's default compilers (see SPARK_TEST_JVM_OPTS)
    ours = os.environ.get("SPARK_SUBMIT_OPTS") == SPARK_TEST_JVM_OPTS
    if ours:
        del os.environ["SPARK_SUBMIT_OPTS"]
    try:
        session = _fixture_session(get_spark)
    finally:
        if ours:
            os.environ["SPARK_SUBMIT_OPTS"] = SPARK_TEST_JVM_OPTS
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()
    # py4j logs from __del__ after pytest closed its capture streams; keep it quiet.
    import logging

    logging.getLogger("py4j").setLevel(logging.ERROR)


def _fixture_session(get_spark):
    return get_spark(
        "washline-tests",
        {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "2g",
        },
    )


# --------------------------------------------------------------------------
# Staging databases: a fresh SQLite file per test, and a throwaway PostgreSQL
# database on the local service (127.0.0.1:5432, trust auth) per session.
# --------------------------------------------------------------------------

def _benchmark_module(name: str):
    """``benchmarks/<name>.py`` as a module (benchmark helpers the tests share; not part of the product)."""
    import importlib.util
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_nights = _benchmark_module("registry_nights")  # standard library only at import
PG_HOST, PG_PORT, PG_USER = _nights.PG_HOST, _nights.PG_PORT, _nights.PG_USER


@pytest.fixture(scope="session")
def pg_database():
    """Name of a PostgreSQL database created for this test session, dropped after
    (``benchmarks/registry_nights.scratch_postgres``)."""
    try:
        scratch = _nights.scratch_postgres("washline_test")
        name = scratch.__enter__()
    except Exception as exc:  # a laptop without PostgreSQL: skip, CI has it
        pytest.skip(f"PostgreSQL not reachable on {PG_HOST}:{PG_PORT}: {exc}")
    try:
        yield name
    finally:
        scratch.__exit__(None, None, None)


@pytest.fixture(params=["sqlite", "postgres"])
def staging_conn(request, tmp_path, monkeypatch):
    """An Airflow connection id (set through AIRFLOW_CONN_*) to an empty staging database."""
    import json

    if request.param == "sqlite":
        conn = {"conn_type": "sqlite", "host": str(tmp_path / "staging.db")}
    else:
        import psycopg

        dbname = request.getfixturevalue("pg_database")
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=dbname, autocommit=True) as c:
            for table in ("staging_records", "staging_links", "staging_clusters", "published_records",
                          "published_links", "published_clusters", "publish_log", "staging_entity_members",
                          "staging_entities", "staging_entity_changes", "entity_members", "entities",
                          "entity_changes"):
                c.execute(f'DROP TABLE IF EXISTS "{table}"')
        conn = {"conn_type": "postgres", "host": PG_HOST, "port": PG_PORT, "login": PG_USER, "schema": dbname}
    monkeypatch.setenv("AIRFLOW_CONN_TEST_STAGING", json.dumps(conn))
    return "test_staging"


# --------------------------------------------------------------------------
# Early set-up: the DAG runs of the modules that define ``EARLY`` start in a
# background thread when the session starts, and those modules run last
# (tests/early.py says why and how).
# --------------------------------------------------------------------------

def _early_chain(item):
    module = getattr(item, "module", None)
    chain = getattr(module, "EARLY", None)
    return chain if hasattr(chain, "wanted") else None


def _xdist(config) -> bool:
    """True in a pytest-xdist worker (``make test`` runs ``-n 2 --dist loadfile``)."""
    return hasattr(config, "workerinput")


#: Under xdist the heaviest modules go first, so the two workers start on them and the many short
#: modules fill in around them (loadfile hands out whole modules in collection order when run with
#: ``--no-loadscope-reorder``). The DAG-run modules, most ``airflow dags test`` runs first; then every
#: other module with a Spark test; then the rest, each group in collection order.
DAG_RUN_MODULES = ("test_registry_e2e.py", "test_faults.py", "test_nightly_e2e.py", "test_service.py")


def _xdist_rank(item) -> tuple[int, int]:
    name = item.path.name
    if name in DAG_RUN_MODULES:
        return 0, DAG_RUN_MODULES.index(name)
    return (1 if item.get_closest_marker("spark") or item.get_closest_marker("airflow") else 2), 0


@pytest.hookimpl(tryfirst=True)  # before -m deselection, so `-m "not spark"` sees the marker
def pytest_itemcollected(item):
    """A test that takes the ``spark`` fixture (itself or through another fixture) starts Spark: it
    gets the ``spark`` marker even where its module forgot it, so ``make test-fast`` never starts Spark."""
    if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
        item.add_marker(pytest.mark.spark)


@pytest.hookimpl(trylast=True)  # after -m / -k deselection
def pytest_collection_modifyitems(session, config, items):
    if _xdist(config):
        # the early background thread is off in workers (see _early_setup): order by weight instead,
        # whole modules (a module's rank is its heaviest test's), each module in its own order
        rank: dict = {}
        for item in items:
            rank[item.path] = min(rank.get(item.path, (3, 0)), _xdist_rank(item))
        items.sort(key=lambda item: rank[item.path])
        return
    early, others = [], []
    for item in items:
        (others if _early_chain(item) is None else early).append(item)
    # stable: each module keeps its own order; the modules go last, by their chain's order
    early.sort(key=lambda item: _early_chain(item).order)
    items[:] = others + early


@pytest.fixture(scope="session", autouse=True)
def _early_setup(request, tmp_path_factory):
    import early

    early.TMP_PATH_FACTORY = tmp_path_factory
    chains = {}
    for item in request.session.items:  # the selected tests only: the steps they use, and what those need
        if (chain := _early_chain(item)) is not None:
            chain.want({*getattr(item, "fixturenames", ()), getattr(item, "originalname", item.name)})
            chains[id(chain)] = chain
    early.SESSION_CHAINS[:] = chains.values()
    background = early.Background(list(chains.values()))
    # Under xdist the other core already has a worker of its own, and each worker collects every
    # module but runs only those it is sent: a background thread there would run other workers' DAG
    # runs a second time. Each step then runs where its fixture or test takes it.
    if chains and os.environ.get("WASHLINE_TEST_EARLY", "1") != "0" and not _xdist(request.config):
        background.start()
    try:
        yield
    finally:
        if background.is_alive():
            background.stop()
        early.run_finalizers()


def pytest_terminal_summary(terminalreporter):
    import sys

    early = sys.modules.get("early")
    lines = early.summary_lines() if early is not None else []
    if lines:
        terminalreporter.write_sep("-", "early set-up (tests/early.py)")
        for line in lines:
            terminalreporter.write_line(line)
