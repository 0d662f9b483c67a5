"""
### washline_integrity

Nightly integrity sweep over the configured databases, in the manner of Ola
Hallengren's DatabaseIntegrityCheck: `PHYSICAL_ONLY` (SQL Server; SQLite
`quick_check`; PostgreSQL amcheck without `heapallindexed`) on most nights,
a full check on one weekday (Param `full_day`, default Sunday).

| task | what it does |
|---|---|
| `plan` | resolves the connections and tonight's mode (reads the Variable at run time, never at parse time) |
| `check_database` | one mapped `DatabaseIntegrityCheckOperator` per connection, so one failure hides no other; FAIL fails it, ERROR retries |
| `report` | summary table of every database's verdict in the log; fails the run when any check did not PASS/WARN |

Connections: Param `conn_ids` when non-empty, else the Airflow Variable
`washline_integrity_connections` (JSON list or comma-separated ids), else
`["washline_staging"]`. `time_limit_minutes`: no new check starts after this
many minutes of the run (a check not started is skipped and reported NOT RUN).
Each check appends a row to `washline_integrity_log` in its database.
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import Param, dag, task

from washline.integrity.operator import DatabaseIntegrityCheckOperator
from washline.paths import CONN_ID_RE, retry_delay

DAG_ID = "washline_integrity"
CONN_PATTERN = CONN_ID_RE


@dag(
    dag_id=DAG_ID,
    schedule="30 3 * * *",
    start_date=datetime(2025, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["washline", "integrity", "dba"],
    doc_md=__doc__,
    default_args={"owner": "washline", "retries": 1, "retry_delay": retry_delay(120)},
    params={
        "conn_ids": Param(
            [],
            type="array",
            items={"type": "string", "pattern": CONN_PATTERN},
            title="Connections",
            description="Airflow connection ids to check; empty = Variable washline_integrity_connections, "
                        "else washline_staging.",
        ),
        "full_day": Param(
            "sunday",
            enum=["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"],
            title="Full-check weekday",
            description="Weekday (of the run's due date, UTC) with the full check; PHYSICAL_ONLY on the others.",
        ),
        "mode": Param("auto", enum=["auto", "full", "physical_only"], title="Mode",
                      description="auto follows full_day; full or physical_only forces one."),
        "time_limit_minutes": Param(240, type="integer", minimum=1, maximum=1440, title="Time limit (minutes)",
                                    description="No new check starts after this many minutes of the run."),
    },
)
def washline_integrity():
    @task
    def plan() -> list[dict]:
        from airflow.sdk import Variable, get_current_context

        from washline.integrity import sweep

        context = get_current_context()
        due = context["dag_run"].run_after or datetime.now(timezone.utc)
        items = sweep.plan(context["params"], due.date(), Variable.get(sweep.VARIABLE, default=None))
        print(f"checking {len(items)} database(s): {items}")
        return items

    @task(trigger_rule="all_done", retries=0)
    def report(items: list[dict]) -> list[dict]:
        from airflow.sdk import get_current_context
        from airflow.sdk.exceptions import AirflowFailException

        from washline.integrity import sweep

        ti = get_current_context()["ti"]
        reports = [ti.xcom_pull(task_ids="check_database", key="report", map_indexes=i) for i in range(len(items))]
        rows = sweep.summarise(items, reports)
        print("integrity sweep summary\n" + sweep.render_table(rows))
        bad = [r["conn_id"] for r in rows if r["verdict"] not in ("PASS", "WARN")]
        if bad:
            raise AirflowFailException(f"integrity sweep: {len(bad)} database(s) not clean: {', '.join(bad)}")
        return rows

    items = plan()
    checks = DatabaseIntegrityCheckOperator.partial(
        task_id="check_database", map_index_template="{{ task.conn_id }}",
    ).expand_kwargs(items)
    checks >> report(items)


washline_integrity()
