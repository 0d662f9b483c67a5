"""Real corruption in a throwaway PostgreSQL cluster must give FAIL with block numbers.

The cluster is created by this module with ``initdb`` (as the ``postgres``
user when the tests run as root: initdb refuses root), on its own free port
and socket directory, and is stopped and removed at the end. The shared
service on 5432 is never touched: a plain SELECT on a corrupt heap can PANIC
a server.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from washline.integrity import Verdict, run_check

pytestmark = [pytest.mark.postgres]

PAGE = 8192


def _bindir() -> Path | None:
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
        if (Path(out) / "initdb").exists():
            return Path(out)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, bindir: Path, root: Path, port: int):
        self.bindir, self.root, self.port = bindir, root, port
        self.data, self.sock, self.log = root / "data", root / "sock", root / "server.log"
        self.as_postgres = os.geteuid() == 0

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / argv[0]), *argv[1:]]
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def start(self):
        opts = (f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 -c autovacuum=off "
                "-c fsync=off -c shared_buffers=16MB -c max_connections=10")
        proc = self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start")
        assert proc.returncode == 0, proc.stdout + proc.stderr + (self.log.read_text() if self.log.exists() else "")

    def stop(self, mode: str = "fast"):
        return self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def connect(self):
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True)


@pytest.fixture(scope="module")
def cluster():
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb) not found")
    root = Path(tempfile.mkdtemp(prefix="washline-pgcluster-"))
    c = Cluster(bindir, root, _free_port())
    try:
        c.sock.mkdir()
        if c.as_postgres:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(c.sock, "postgres", "postgres")
        proc = c.run("initdb", "-D", str(c.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        c.start()
        yield c
    finally:
        c.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def loaded(cluster):
    """Staging tables with a few pages of rows; returns the relation file paths."""
    from washline.staging.load import ensure_schema

    with cluster.connect() as conn:
        ensure_schema(conn, "postgres")
        conn.execute(
            "INSERT INTO staging_records (ds, load_id, record_id, source, given_name, surname) "
            "SELECT '2025-01-01', 'r', 'rec-' || lpad(g::text, 6, '0'), 's', 'given' || g, 'surname' || g "
            "FROM generate_series(1, 3000) g")
        conn.execute(
            "INSERT INTO staging_links (ds, load_id, source, record_id, cluster_id, iteration, mu, quality, "
            "cluster_size) "
            "SELECT '2025-01-01', 'r', 's', 'rec-' || lpad(g::text, 6, '0'), 'c-' || lpad((g / 2)::text, 6, '0'), "
            "1, 0.6, 1.0, 2 FROM generate_series(1, 3000) g")
        conn.execute("CHECKPOINT")
        heap = conn.execute("SELECT pg_relation_filepath('staging_records')").fetchone()[0]
        index = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'staging_links'::regclass ORDER BY c.relname LIMIT 1").fetchone()[0]
        index_name = conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'staging_links'::regclass ORDER BY c.relname LIMIT 1").fetchone()[0]
    return {"heap": cluster.data / heap, "index": cluster.data / index, "index_name": index_name}


@pytest.fixture
def conn_id(cluster, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_PG_THROWAWAY", json.dumps(
        {"conn_type": "postgres", "host": "127.0.0.1", "port": cluster.port, "login": "postgres",
         "schema": "postgres"}))
    return "pg_throwaway"


def test_clean_cluster_passes(loaded, conn_id):
    report = run_check(conn_id)
    assert report.verdict is Verdict.PASS, report.render()
    assert "heapallindexed" not in " ".join(report.coverage)
    assert "bt_index_check('" in report.command and "true)" in report.command
    physical = run_check(conn_id, mode="physical_only")
    assert physical.verdict is Verdict.PASS and "false)" in physical.command
    assert any("heapallindexed" in c for c in physical.coverage)


def test_overwritten_heap_and_index_pages_fail_with_block_numbers(cluster, loaded, conn_id):
    assert cluster.stop("fast").returncode == 0
    heap_block, index_block = 2, 1
    with open(loaded["heap"], "r+b") as fh:
        # Three line pointers of heap block 2 now say LP_NORMAL, offset 8000,
        # length 600: the tuple would run past the end of the 8 KiB page.
        fh.seek(heap_block * PAGE + 24)
        fh.write(struct.pack("<I", 8000 | (1 << 15) | (600 << 17)) * 3)
    with open(loaded["index"], "r+b") as fh:
        # Rewrite one key inside the first leaf page: same length, so the page
        # stays well-formed, but the keys are out of order.
        fh.seek(index_block * PAGE)
        page = bytearray(fh.read(PAGE))
        at = page.find(b"c-000050")
        assert at > 0, "key not on the first leaf page"
        page[at:at + 8] = b"z-000050"
        fh.seek(index_block * PAGE)
        fh.write(page)
    cluster.start()
    report = run_check(conn_id)
    assert report.verdict is Verdict.FAIL, report.render()
    heap = [f for f in report.findings if f.obj == "staging_records" and f.index is None]
    assert heap and all(f.location == f"block {heap_block}" for f in heap), report.render()
    idx = [f for f in report.findings if f.index == loaded["index_name"]]
    assert idx and all(f.location == f"block {index_block}" for f in idx), report.render()
    assert report.consistency_errors == len(report.findings)


def test_lost_connection_is_error(cluster, loaded, conn_id):
    """A server that goes away (as after a PANIC) gives ERROR, never PASS."""
    assert cluster.stop("immediate").returncode == 0
    try:
        report = run_check(conn_id, tables=["staging_records"])
        assert report.verdict is Verdict.ERROR and report.error
    finally:
        cluster.start()
