"""The cleanse job end to end: FEBRL1 plus a malformed extra file, run
in-process on the session fixture and once as a real ``spark-submit``."""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import json
import logging
import os
import re
import subprocess
import sys
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from washline.landing import land_febrl

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "spark_jobs" / "cleanse.py"
DS = "2025-01-01"
HEADER = "rec_id,given_name,surname,street_number,address_1,address_2,suburb,postcode,state,date_of_birth,soc_sec_id"

# line number -> (what it is, quarantine reason or None if it must be curated)
EXTRA_LINES = {
    2: ("rec-9001-org,  mary   ann ,smith,1,main  street,,perth,6000,wa,20240230,123", None),
    3: ("rec-9002-org,john,doe,2,high street,,perth,60x0,wa,2001-02-03,456", None),
    4: ("rec-9003-org,too,few,fields", "column_count"),
    5: ("rec-9004-org,a,b,c,d,e,f,1234,g,19990101,789,EXTRA", "column_count"),
    6: (",no,id,3,x street,,y,2000,nsw,19800101,1", "missing_record_id"),
    7: ("rec-223-org,dup,licate,6,tullaroop street,willaroo,st james,4011,wa,19081209,6988048", "duplicate_record_id"),
    8: ("", None),  # blank line: skipped and counted, not a row
    9: ('rec-9005-org,"unbalanced,q,1,x,,y,2000,nsw,19800101,1', "malformed"),
    10: ('rec-9006-org,ok,row,5,"quoted, street",,perth,0800,nt,03/04/1990,999', None),
}


def load_job():
    spec = importlib.util.spec_from_file_location("washline_cleanse_job", JOB)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_extra(folder: Path) -> Path:
    path = folder / "part-0002.csv"
    lines = [HEADER] + [EXTRA_LINES[n][0] for n in sorted(EXTRA_LINES)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def job_args(landing: Path, out: Path, ds: str = DS, *extra: str) -> list[str]:
    return [
        "--landing", str(landing), "--ds", ds,
        "--curated", str(out / "curated" / ds), "--quarantine", str(out / "quarantine" / ds),
        "--metrics", str(out / "metrics" / f"{ds}.json"), *extra,
    ]


@pytest.fixture(scope="module")
def job():
    return load_job()


class Tee(io.StringIO):
    """Keeps what is written and passes it on (so ``-s`` still shows it)."""

    def __init__(self, other):
        super().__init__()
        self.other = other

    def write(self, text):
        self.other.write(text)
        return super().write(text)


@pytest.fixture(scope="module")
def febrl_run(tmp_path_factory, spark, job):
    """FEBRL1 in two parts plus the malformed extra file, cleansed once with
    tiny file splits so line numbering across splits is exercised."""
    root = tmp_path_factory.mktemp("cleanse")
    landing, out = root / "landing", root / "out"
    land_febrl("febrl1", DS, landing, parts=2)
    write_extra(landing / "febrl" / DS)
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "16384")  # ~3 splits per 45 KB part
    log = Tee(sys.stderr)
    try:
        with contextlib.redirect_stderr(log):  # the job's progress lines (hdwm.progress) go to stderr
            rc = job.main(job_args(landing, out), spark=spark)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)
    metrics = json.loads((out / "metrics" / f"{DS}.json").read_text())
    return {"rc": rc, "landing": landing, "out": out, "metrics": metrics, "log": log.getvalue()}


FILE_LINE = re.compile(
    r"^\[cleanse\] file (?P<name>\S+): read=(?P<read>\d+) curated=(?P<curated>\d+) "
    r"quarantined=(?P<quarantined>\d+) by_reason=(?P<reasons>none|\([^)]*\)) blank=(?P<blank>\d+) "
    r"total=\(files=(?P<done>\d+)/(?P<of>\d+) read=(?P<t_read>\d+) curated=(?P<t_curated>\d+) "
    r"quarantined=(?P<t_quarantined>\d+)\) \((?P<elapsed>\d+\.\d)s since start\)$")


def reasons_of(text: str) -> dict[str, int]:
    return {} if text == "none" else {k: int(v) for k, v in (kv.split("=") for kv in text.strip("()").split())}


def test_task_log_tells_each_file_with_its_counts_and_a_running_total(febrl_run):
    """Progress lines: one [cleanse] line per event; per landing file its
    name relative to the landing root, rows read / curated / quarantined by
    reason, and the running total with the seconds since the job started."""
    lines = [line for line in febrl_run["log"].splitlines() if line.startswith("[cleanse] ")]
    events = [re.sub(r"[:(].*", "", line[len("[cleanse] "):]).strip() for line in lines]
    day = febrl_run["landing"] / "febrl" / DS
    names = sorted(f"febrl/{DS}/{p.name}" for p in day.glob("*.csv"))
    assert events == ["start", "source febrl", "source febrl", *[f"file {n}" for n in names],
                      "write curated and quarantine Parquet", "done"], lines
    physical = {f"febrl/{DS}/{p.name}": p.read_text().splitlines() for p in day.glob("*.csv")}
    assert f"source febrl: read: files=3 lines={sum(map(len, physical.values()))} blank=1 (stage " in lines[1]

    extra = f"febrl/{DS}/part-0002.csv"
    expected_reasons = Counter(reason for _, reason in EXTRA_LINES.values() if reason)
    found = [FILE_LINE.match(line) for line in lines if line.startswith("[cleanse] file ")]
    assert all(found), lines
    running = Counter()
    elapsed = []
    for i, m in enumerate(found, 1):
        name, read, curated, quarantined = m["name"], int(m["read"]), int(m["curated"]), int(m["quarantined"])
        blank = sum(1 for line in physical[name][1:] if not line.strip())
        assert read == len(physical[name]) - 1 - blank  # rows = lines after the header, blank ones aside
        assert int(m["blank"]) == blank
        assert read == curated + quarantined
        assert reasons_of(m["reasons"]) == (dict(expected_reasons) if name == extra else {})
        assert sum(reasons_of(m["reasons"]).values()) == quarantined
        running.update(read=read, curated=curated, quarantined=quarantined)
        assert (int(m["done"]), int(m["of"])) == (i, 3)
        assert (int(m["t_read"]), int(m["t_curated"]), int(m["t_quarantined"])) == (
            running["read"], running["curated"], running["quarantined"])
        elapsed.append(float(m["elapsed"]))
    assert elapsed == sorted(elapsed) and elapsed[0] > 0
    mt = febrl_run["metrics"]
    assert (running["read"], running["curated"], running["quarantined"]) == (
        mt["rows_in"], mt["rows_curated"], mt["rows_quarantined"])
    assert (f"write curated and quarantine Parquet: curated={mt['rows_curated']} "
            f"quarantined={mt['rows_quarantined']} (stage ") in lines[-2]
    by_reason = " ".join(f"{k}={v}" for k, v in mt["quarantined_by_reason"].items() if v)
    assert lines[-1].startswith(f"[cleanse] done: ds={DS} files=3 rows_in={mt['rows_in']} "
                                f"curated={mt['rows_curated']} quarantined={mt['rows_quarantined']} "
                                f"by_reason=({by_reason}) ")
    # counts, names and paths only: no row of the input reaches the log
    assert not any(rid in febrl_run["log"] for rid in ("rec-9001-org", "rec-9003-org", "unbalanced", "no,id"))


def test_counts_and_invariant(febrl_run):
    m = febrl_run["metrics"]
    assert febrl_run["rc"] == 0
    assert m["ds"] == DS and m["sources"] == ["febrl"] and m["files"] == 3
    assert m["rows_in"] == 1000 + 8
    assert m["rows_in"] == m["rows_curated"] + m["rows_quarantined"]
    assert m["rows_quarantined"] == 5 and m["rows_curated"] == 1003
    assert m["quarantined_by_reason"] == {
        "bad_header": 0, "malformed": 1, "column_count": 2, "missing_record_id": 1, "duplicate_record_id": 1,
        "encoding": 0, "control_char": 0, "field_too_long": 0,
    }
    # FEBRL1 ships 3 impossible birth dates; the extra file adds Feb 30 and a bad postcode
    assert m["fixed_by_rule"]["bad_date"] == 4
    assert m["fixed_by_rule"]["bad_postcode"] == 1
    assert m["fixed_by_rule"]["bad_phone"] == 0
    assert m["blank_lines_skipped"] == 1
    assert m["seconds"] > 0
    assert set(m) >= {"ds", "sources", "files", "rows_in", "rows_curated", "rows_quarantined",
                      "quarantined_by_reason", "fixed_by_rule", "seconds"}


def test_curated_schema_and_values(febrl_run, spark):
    from pyspark.sql import types as T

    curated = spark.read.parquet(str(febrl_run["out"] / "curated" / DS))
    types = {f.name: f.dataType for f in curated.schema.fields}
    assert list(types) == [
        "record_id", "source", "truth_entity", "given_name", "surname", "street_number", "address_1",
        "address_2", "suburb", "postcode", "state", "date_of_birth", "soc_sec_id", "ds", "source_file", "line_number",
    ]
    assert types["date_of_birth"] == T.DateType() and types["line_number"] == T.LongType()
    assert all(types[c] == T.StringType() for c in types if c not in ("date_of_birth", "line_number"))
    assert curated.count() == 1003
    assert curated.select("record_id").distinct().count() == 1003

    rows = {r["record_id"]: r for r in curated.filter("record_id like 'rec-900%' or record_id in ('rec-223-org', 'rec-10-dup-0')").collect()}
    # good rows of the malformed file still flow
    assert set(rows) == {"rec-9001-org", "rec-9002-org", "rec-9006-org", "rec-223-org", "rec-10-dup-0"}
    r = rows["rec-9001-org"]
    assert r["given_name"] == "MARY ANN" and r["address_1"] == "MAIN STREET" and r["date_of_birth"] is None
    assert r["truth_entity"] == "9001" and r["source"] == "febrl" and r["ds"] == DS
    assert r["source_file"].endswith("part-0002.csv") and r["line_number"] == 2
    assert rows["rec-9002-org"]["postcode"] is None
    assert rows["rec-9002-org"]["date_of_birth"] == date(2001, 2, 3)
    assert rows["rec-9006-org"]["postcode"] == "0800"
    assert rows["rec-9006-org"]["date_of_birth"] == date(1990, 4, 3)
    assert rows["rec-9006-org"]["address_1"] == "QUOTED, STREET"
    # the first copy of a duplicated id is the one kept
    assert rows["rec-223-org"]["source_file"].endswith("part-0000.csv") and rows["rec-223-org"]["surname"] == "WALLER"
    assert rows["rec-10-dup-0"]["truth_entity"] == "10"
    assert rows["rec-10-dup-0"]["street_number"] is None  # missing in FEBRL -> null


def test_line_numbers_are_exact_across_file_splits(febrl_run, spark):
    expected = {}
    for path in sorted((febrl_run["landing"] / "febrl" / DS).glob("part-000[01].csv")):
        with path.open(newline="") as fh:
            for line_number, row in enumerate(csv.reader(fh), start=1):
                if line_number > 1:
                    expected[row[0]] = (path.name, line_number)
    curated = (
        spark.read.parquet(str(febrl_run["out"] / "curated" / DS))
        .filter("source_file not like '%part-0002.csv'")
        .select("record_id", "source_file", "line_number")
        .collect()
    )
    got = {r["record_id"]: (r["source_file"].rsplit("/", 1)[-1], r["line_number"]) for r in curated}
    assert got == expected


def test_quarantine_rows_carry_reason_raw_and_location(febrl_run, spark):
    quarantine = spark.read.parquet(str(febrl_run["out"] / "quarantine" / DS))
    assert quarantine.columns == ["ds", "source", "source_file", "line_number", "raw", "reason", "detail"]
    rows = sorted(quarantine.collect(), key=lambda r: r["line_number"])
    expected = {n: (text, reason) for n, (text, reason) in EXTRA_LINES.items() if reason}
    assert [r["line_number"] for r in rows] == sorted(expected)
    for r in rows:
        text, reason = expected[r["line_number"]]
        assert r["reason"] == reason and r["raw"] == text
        assert r["source"] == "febrl" and r["ds"] == DS and r["source_file"].endswith("part-0002.csv")
        assert r["detail"]
    by_reason = {r["reason"]: r["detail"] for r in rows}
    assert "expected 11 fields" in by_reason["column_count"]
    assert "part-0000.csv:2" in by_reason["duplicate_record_id"]


def test_rerun_replaces_the_slice(febrl_run, spark, job):
    out = febrl_run["out"]
    assert job.main(job_args(febrl_run["landing"], out), spark=spark) == 0
    assert spark.read.parquet(str(out / "curated" / DS)).count() == 1003
    assert spark.read.parquet(str(out / "quarantine" / DS)).count() == 5
    assert json.loads((out / "metrics" / f"{DS}.json").read_text())["rows_in"] == 1008


def test_no_input_exits_3(febrl_run, spark, job, caplog, tmp_path):
    caplog.set_level(logging.ERROR, logger="washline.cleanse")
    rc = job.main(job_args(febrl_run["landing"], tmp_path, "2030-01-01"), spark=spark)
    assert rc == job.EXIT_NO_INPUT == 3
    assert f"no input for 2030-01-01 in {febrl_run['landing']}" in caplog.text
    assert not (tmp_path / "metrics" / "2030-01-01.json").exists()


def test_undeclared_source_folder_is_an_error(tmp_path, spark, job, caplog):
    land_febrl("febrl1", DS, tmp_path / "landing", parts=1)
    stray = tmp_path / "landing" / "crm" / DS
    stray.mkdir(parents=True)
    (stray / "x.csv").write_text("a,b\n1,2\n")
    caplog.set_level(logging.ERROR, logger="washline.cleanse")
    assert job.main(job_args(tmp_path / "landing", tmp_path / "out"), spark=spark) == job.EXIT_CONFIG
    assert "crm" in caplog.text


def test_bad_ds_exits_2(tmp_path, job):
    assert job.main(job_args(tmp_path, tmp_path, "2025-02-30"), spark=object()) == 2


def test_custom_source_with_phones_and_a_bad_header(tmp_path, spark, job):
    """A second source from --sources-config: phone column, a file whose first
    line is not a header at all (quarantined whole, nothing lost), and a clean file."""
    config = tmp_path / "config" / "sources.yaml"
    config.parent.mkdir()
    config.write_text(
        "sources:\n"
        "  crm:\n"
        "    record_id: id\n"
        "    columns:\n"
        "      - {name: id, type: id}\n"
        "      - {name: name, type: text}\n"
        "      - {name: tel, type: phone}\n"
        "      - {name: born, type: date, formats: [dd/MM/yyyy]}\n"
    )
    day = tmp_path / "landing" / "crm" / DS
    day.mkdir(parents=True)
    (day / "a.csv").write_text("id,name,tel,born\nc1, ann ,+61 (2) 9876-5432,29/02/2024\nc2,bob,call me,30/02/2024\n")
    (day / "b.csv").write_text("c3,cy,0412345678,01/01/2000\nc4,di,0412345679,02/01/2000\n")  # no header
    rc = job.main(job_args(tmp_path / "landing", tmp_path / "out", DS, "--sources-config", str(config.parent)), spark=spark)
    assert rc == 0
    m = json.loads((tmp_path / "out" / "metrics" / f"{DS}.json").read_text())
    assert (m["rows_in"], m["rows_curated"], m["rows_quarantined"]) == (4, 2, 2)
    assert m["quarantined_by_reason"]["bad_header"] == 2  # both lines of b.csv
    assert m["fixed_by_rule"]["bad_phone"] == 1 and m["fixed_by_rule"]["bad_date"] == 1
    curated = {r["record_id"]: r for r in spark.read.parquet(str(tmp_path / "out" / "curated" / DS)).collect()}
    assert curated["c1"]["tel"] == "+61298765432" and curated["c1"]["name"] == "ANN"
    assert curated["c1"]["born"] == date(2024, 2, 29) and curated["c1"]["truth_entity"] is None
    assert curated["c2"]["tel"] is None and curated["c2"]["born"] is None
    q = spark.read.parquet(str(tmp_path / "out" / "quarantine" / DS)).collect()
    assert {(r["line_number"], r["reason"]) for r in q} == {(1, "bad_header"), (2, "bad_header")}
    assert all(r["detail"].startswith("first line is not a header (0 of 4 field(s)") for r in q)
    assert {r["raw"] for r in q} == {"c3,cy,0412345678,01/01/2000", "c4,di,0412345679,02/01/2000"}


def test_spark_submit_clean_input_writes_an_empty_quarantine(tmp_path):
    """Run as Airflow does: a real spark-submit of the script, from an
    unrelated working directory. FEBRL1 alone is clean at row level, so the
    quarantine is empty but still a readable Parquet dataset."""
    import pyarrow.parquet as pq

    landing, out = tmp_path / "landing", tmp_path / "out"
    land_febrl("febrl1", DS, landing, parts=2)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("WASHLINE_CONFIG_DIR", None)
    env.pop("PYTHONPATH", None)
    submit = Path(sys.executable).parent / "spark-submit"
    cmd = [
        str(submit), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.ui.showConsoleProgress=false",
        str(JOB), *job_args(landing, out),
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    m = json.loads((out / "metrics" / f"{DS}.json").read_text())
    assert (m["rows_in"], m["rows_curated"], m["rows_quarantined"]) == (1000, 1000, 0)
    assert m["fixed_by_rule"]["bad_date"] == 3
    # spark-submit's PythonRunner sends the Python process's stderr to its stdout,
    # which Airflow's SparkSubmitHook logs line by line: the progress lines are task-log lines
    logged = (proc.stdout + proc.stderr).splitlines()
    assert "[cleanse] Spark session ready: master=local[1] (" in "\n".join(logged)
    for part in ("part-0000.csv", "part-0001.csv"):
        assert any(line.startswith(f"[cleanse] file febrl/{DS}/{part}: read=500 curated=500 quarantined=0 "
                                   f"by_reason=none ") for line in logged), logged[-40:]
    assert any(line.startswith(f"[cleanse] done: ds={DS} files=2 rows_in=1000 curated=1000 quarantined=0 ")
               for line in logged)
    table = pq.read_table(out / "quarantine" / DS)
    assert table.num_rows == 0
    assert table.schema.names == ["ds", "source", "source_file", "line_number", "raw", "reason", "detail"]
    assert pq.read_table(out / "curated" / DS).num_rows == 1000

    # the documented exit code for a date with no input, through spark-submit
    proc = subprocess.run(
        [*cmd[: cmd.index(str(JOB)) + 1], *job_args(landing, out, "2030-01-01")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 3, proc.stderr[-4000:]
    assert f"no input for 2030-01-01 in {landing}" in proc.stdout + proc.stderr


def test_bad_bytes_control_chars_and_huge_fields_are_quarantined_not_published(tmp_path, spark, job):
    """Latin-1 bytes in a UTF-8 feed, a NUL byte and a 1 MB field each go to
    quarantine with their own reason; the good rows of the same file still flow."""
    folder = tmp_path / "landing" / "febrl" / DS
    folder.mkdir(parents=True)
    good = "rec-1-org,ann,lee,1,main street,,perth,6000,wa,19800101,111"
    lines = [
        HEADER.encode(),
        good.encode(),
        b"rec-2-org,j\xf6rg,m\xfcller,2,high street,,perth,6000,wa,19800101,222",  # Latin-1
        b"rec-3-org,nu\x00l,byte,3,x street,,perth,6000,wa,19800101,333",
        ("rec-4-org," + "x" * 1_000_000 + ",long,4,y street,,perth,6000,wa,19800101,444").encode(),
        "rec-5-org,zoë,ćwik,5,z street,,perth,6000,wa,19800101,555".encode(),  # real UTF-8 accents flow
    ]
    (folder / "part-0000.csv").write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    assert job.main(job_args(tmp_path / "landing", out), spark=spark) == 0
    m = json.loads((out / "metrics" / f"{DS}.json").read_text())
    assert m["rows_in"] == 5 and m["rows_curated"] == 2 and m["rows_quarantined"] == 3
    assert {k: v for k, v in m["quarantined_by_reason"].items() if v} == {
        "encoding": 1, "control_char": 1, "field_too_long": 1}
    q = {r["line_number"]: r for r in spark.read.parquet(str(out / "quarantine" / DS)).collect()}
    assert q[3]["reason"] == "encoding" and "UTF-8" in q[3]["detail"]
    # the quarantine is valid UTF-8 for every reader, not only Spark: the bad bytes are U+FFFD
    import pyarrow.parquet as pq

    rows = {r["line_number"]: r for r in pq.read_table(out / "quarantine" / DS).to_pylist()}
    assert rows[3]["raw"] == "rec-2-org,j\ufffdrg,m\ufffdller,2,high street,,perth,6000,wa,19800101,222"
    assert q[4]["reason"] == "control_char"
    assert q[5]["reason"] == "field_too_long" and "1000000 characters" in q[5]["detail"]
    assert len(q[5]["raw"]) == 2_000
    curated = {r["record_id"]: r for r in spark.read.parquet(str(out / "curated" / DS)).collect()}
    assert set(curated) == {"rec-1-org", "rec-5-org"}
    assert curated["rec-5-org"]["given_name"] == "ZOË" and curated["rec-5-org"]["surname"] == "ĆWIK"


# ---------------------------------------------------------------------------
# Schema drift: a clear error naming file and column, unless a profile maps it
# ---------------------------------------------------------------------------

ROW = "rec-{i}-org,ann,lee,{i},main street,,perth,6000,wa,19800101,{i}"


def _drifted_landing(root: Path) -> Path:
    day = root / "landing" / "febrl" / DS
    day.mkdir(parents=True)
    (day / "part-0000.csv").write_text("\n".join([HEADER, ROW.format(i=1)]) + "\n")
    (day / "part-0001.csv").write_text("\n".join([HEADER + ",email", ROW.format(i=2) + ",a@b.c"]) + "\n")
    (day / "part-0002.csv").write_text("\n".join([HEADER.replace("surname", "lastname"), ROW.format(i=3)]) + "\n")
    (day / "part-0003.csv").write_text("\n".join([HEADER.replace(",surname", ""), "rec-4-org,ann,4,x,,y,6000,wa,19800101,4"]) + "\n")
    return root / "landing"


def test_schema_drift_fails_naming_file_and_column(tmp_path, job, caplog):
    """An added, a renamed and a missing column: exit 2 before Spark starts
    (no session is even given), one message naming every file and column,
    the error file for Airflow written, nothing else written."""
    landing, out = _drifted_landing(tmp_path), tmp_path / "out"
    caplog.set_level(logging.ERROR, logger="washline.cleanse")
    assert job.main(job_args(landing, out), spark=object()) == job.EXIT_CONFIG == 2
    error = json.loads((out / "metrics" / f"{DS}.error.json").read_text())
    assert error["exit_code"] == 2
    message = error["error"]
    assert f"schema drift in febrl/{DS}/part-0001.csv: unexpected column 'email'" in message
    assert f"schema drift in febrl/{DS}/part-0002.csv: column 3 is 'lastname', declared 'surname'" in message
    assert f"schema drift in febrl/{DS}/part-0003.csv: missing column 'surname'" in message
    assert "part-0000.csv" not in message  # the good file is not blamed
    assert "declared for source 'febrl': rec_id, given_name, surname," in message
    assert "column_map" in message and "ignore_columns" in message
    assert str(tmp_path) not in message  # paths relative to the landing root
    assert message in caplog.text
    assert not (out / "curated").exists() and not (out / "metrics" / f"{DS}.json").exists()


def test_schema_drift_is_also_caught_on_spark_read_headers(tmp_path, spark, job):
    """The Spark-side check (what the executors read) refuses drift too."""
    landing = _drifted_landing(tmp_path)
    spec = job.sourcecontract.load_sources(job.find_sources_config())["febrl"]
    files = sorted((landing / "febrl" / DS).glob("*.csv"))[:2]
    with pytest.raises(job.HeaderDriftError, match=rf"schema drift in febrl/{DS}/part-0001.csv: unexpected column 'email'"):
        job.classify_source(spark, spec, files, DS, landing)


def test_profile_maps_renamed_and_ignored_columns(tmp_path, spark, job):
    """column_map + ignore_columns: a renamed, reordered file with an extra
    column flows like a declared one; its rows keep their line numbers, and
    field-count errors count the file's own columns."""
    config = tmp_path / "config" / "sources.yaml"
    config.parent.mkdir()
    config.write_text(
        "sources:\n"
        "  crm:\n"
        "    record_id: id\n"
        "    column_map: {lastname: surname, Given Name: name}\n"
        "    ignore_columns: [email]\n"
        "    columns:\n"
        "      - {name: id, type: id}\n"
        "      - {name: name, type: text}\n"
        "      - {name: surname, type: text}\n"
        "      - {name: born, type: date, formats: [dd/MM/yyyy]}\n"
    )
    day = tmp_path / "landing" / "crm" / DS
    day.mkdir(parents=True)
    (day / "a.csv").write_text("id,name,surname,born\nc1,ann,lee,01/01/2000\n")
    (day / "b.csv").write_text(
        "\ufeffID, LastName ,email,Given Name,born\n"
        "c2,smith,x@y.z,bob,02/01/2000\n"
        "c3,jones,z@y.x,cy\n"  # 4 of the file's 5 fields
    )
    out = tmp_path / "out"
    rc = job.main(job_args(tmp_path / "landing", out, DS, "--sources-config", str(config)), spark=spark)
    assert rc == 0
    assert not (out / "metrics" / f"{DS}.error.json").exists()
    m = json.loads((out / "metrics" / f"{DS}.json").read_text())
    assert (m["rows_in"], m["rows_curated"], m["rows_quarantined"]) == (3, 2, 1)
    curated_df = spark.read.parquet(str(out / "curated" / DS))
    assert "email" not in curated_df.columns
    curated = {r["record_id"]: r for r in curated_df.collect()}
    assert (curated["c2"]["name"], curated["c2"]["surname"], curated["c2"]["born"]) == ("BOB", "SMITH", date(2000, 1, 2))
    assert curated["c2"]["line_number"] == 2 and curated["c2"]["source_file"].endswith("b.csv")
    assert (curated["c1"]["name"], curated["c1"]["surname"]) == ("ANN", "LEE")
    [q] = spark.read.parquet(str(out / "quarantine" / DS)).collect()
    assert (q["line_number"], q["reason"], q["detail"]) == (3, "column_count", "expected 5 fields, found 4")


class _TI:
    """Just enough of a TaskInstance: XCom push/pull per task id."""

    def __init__(self):
        self.xcom: dict[tuple[str, str], object] = {}
        self.task_id = "cleanse"

    def xcom_push(self, key, value):
        self.xcom[(self.task_id, key)] = value

    def xcom_pull(self, task_ids, key="return_value"):
        return self.xcom.get((task_ids, key))


def test_drift_through_spark_submit_is_quoted_in_the_run_summary(tmp_path, monkeypatch):
    """The DAG's path for a drifted night: ``SparkJobOperator`` runs the real
    spark-submit (exit 2), fails without retry quoting the job's message, and
    the report task's summary says which file and column stopped the night."""
    from airflow.sdk.exceptions import AirflowFailException

    from washline import tasks
    from washline.operators import SparkJobOperator

    _drifted_landing(tmp_path)
    monkeypatch.setenv("WASHLINE_DATA", str(tmp_path))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[1]"}))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    ti = _TI()
    context = {"params": {"input_folder": "landing"}, "ds": DS, "run_id": "manual__drift", "ti": ti}
    op = SparkJobOperator(task_id="cleanse", job="cleanse", conn_id="spark_default",
                          conf={"spark.ui.enabled": "false"})
    with pytest.raises(AirflowFailException, match=r"spark-submit exit 2\): schema drift in febrl/"):
        op.execute(context)
    error = ti.xcom[("cleanse", "error")]
    assert f"schema drift in febrl/{DS}/part-0001.csv: unexpected column 'email'" in error

    ti.task_id = "report"
    with pytest.raises(AirflowFailException, match="was not published") as failed:
        tasks.report(context)
    summary = json.loads((tmp_path / "lake" / "reports" / DS / "run_summary.json").read_text())
    assert summary["published"] is False
    [because] = summary["not_published_because"]
    assert f"part-0002.csv: column 3 is 'lastname', declared 'surname'" in because
    assert f"part-0001.csv: unexpected column 'email'" in because and because in str(failed.value)
