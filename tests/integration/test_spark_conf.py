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


def test_spark_submit_conf_beats_defaults(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO / 'spark_jobs')!r})\n"
        "from hdwm.spark import get_spark\n"
        "s = get_spark('conf-probe')\n"
        "print('PROBE', s.conf.get('spark.sql.shuffle.partitions'),"
        " s.conf.get('spark.sql.execution.arrow.maxRecordsPerBatch'), s.conf.get('spark.sql.session.timeZone'))\n"
    )
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    out = subprocess.run(
        [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=3", str(script)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    probe = [line for line in out.stdout.splitlines() if line.startswith("PROBE")]
    assert probe == ["PROBE 3 10000 UTC"]
