"""Settings given to spark-submit (the Airflow connection, --conf) must win over
washline's session defaults; defaults fill only what nobody set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def test_small_machine_settings_and_what_submit_overrides(tmp_path):
    """Without --conf: memory fractions, AQE coalescing by size, bounded Arrow
    batches (size and records), the UTC session time zone, and shuffle
    partitions scaled to the input (one per core for a small input, one per
    25,000 references above). With --conf: every submitted setting is the
    submitted value, tune_for_input leaves the partitions alone, and the
    defaults still fill what nobody submitted (records per Arrow batch, time
    zone). One spark-submit per case: each costs a JVM and a session."""
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'spark_jobs')!r})\n"
        "from hdwm.spark import get_spark, tune_for_input\n"
        "s = get_spark('conf-probe')\n"
        "c = s.sparkContext.getConf()\n"
        "print('PROBE', c.get('spark.memory.fraction'), c.get('spark.memory.storageFraction'),"
        " s.conf.get('spark.sql.adaptive.coalescePartitions.parallelismFirst'),"
        " s.conf.get('spark.sql.execution.arrow.maxBytesPerBatch'),"
        " tune_for_input(s, 5000), tune_for_input(s, 1000000),"
        " s.conf.get('spark.sql.execution.arrow.maxRecordsPerBatch'), s.conf.get('spark.sql.session.timeZone'))\n"
    )
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false"]

    def probe(*extra):
        out = subprocess.run([*submit, *extra, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        return [line for line in out.stdout.splitlines() if line.startswith("PROBE")]

    assert probe() == ["PROBE 0.7 0.3 false 33554432 2 40 10000 UTC"]
    assert probe("--conf", "spark.memory.fraction=0.5", "--conf", "spark.memory.storageFraction=0.6",
                 "--conf", "spark.sql.adaptive.coalescePartitions.parallelismFirst=true",
                 "--conf", "spark.sql.execution.arrow.maxBytesPerBatch=1000000",
                 "--conf", "spark.sql.shuffle.partitions=5") == ["PROBE 0.5 0.6 true 1000000 5 5 10000 UTC"]


def test_shuffle_partitions_scale_with_the_input():
    from hdwm.spark import shuffle_partitions_for

    assert [shuffle_partitions_for(n, 2) for n in (0, 5_000, 100_000, 1_000_000, 10_000_000)] == [2, 2, 4, 40, 64]
    assert shuffle_partitions_for(100_000, 8) == 8


def test_freeze_profile_names_the_caller_only_when_asked(spark, monkeypatch, capsys):
    from hdwm.spark import PROFILE_FREEZE_ENV, freeze

    df = spark.range(5)
    monkeypatch.delenv(PROFILE_FREEZE_ENV, raising=False)
    assert freeze(df).count() == 5
    assert "[freeze]" not in capsys.readouterr().err
    monkeypatch.setenv(PROFILE_FREEZE_ENV, "1")
    assert freeze(df).count() == 5
    err = capsys.readouterr().err
    assert "[freeze] test_spark_conf.py:" in err and "in test_freeze_profile_names_the_caller_only_when_asked" in err


def test_a_small_token_table_is_broadcast_into_the_join(spark, monkeypatch):
    # a frozen frame has no size estimate, so only the hint makes Spark broadcast it: the token
    # rows of every reference then stay where they are instead of being shuffled by token
    import hdwm.spark as hs
    from hdwm.spark import broadcast_if_small, freeze

    tokens = freeze(spark.createDataFrame([(f"r{i}", f"T{i % 7}") for i in range(50)], "record_id string, token string"))
    freq = freeze(spark.createDataFrame([(f"T{i}", 3) for i in range(7)], "token string, freq long"))

    def plan(df):
        return df._jdf.queryExecution().executedPlan().toString()

    hinted = tokens.join(broadcast_if_small(freq, 7), "token")
    assert "BroadcastHashJoin" in plan(hinted)
    assert sorted(r.record_id for r in hinted.collect()) == sorted(f"r{i}" for i in range(50))
    monkeypatch.setattr(hs, "BROADCAST_MAX_ROWS", 6)  # above the bound: a join as Spark plans it
    assert "BroadcastHashJoin" not in plan(tokens.join(broadcast_if_small(freq, 7), "token"))
    assert "BroadcastHashJoin" not in plan(tokens.join(freq, "token"))
