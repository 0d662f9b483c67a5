"""
### washline_nightly

Cleanse → link (HDWM) → load staging → integrity + quality checks → publish → report,
for one logical date (`ds`). Each task reads and writes only that date's slice,
so rerunning a date replaces it and touches nothing else. The one thing a date
reads from earlier dates is the entity registry (`lake/entities/`): the night's
references are linked against the latest published version before the date,
and the date's new version is published with its slice.

| task | what it does |
|---|---|
| `cleanse` | Spark: landing CSVs for `ds` → curated Parquet + quarantine (bad rows with a reason) |
| `link` | Spark: HDWM record linkage → link index (`record_id`, `cluster_id`, …) + `metrics.json`; against the entity registry → its version `lake/entities/ds=<ds>/` (members, entities, changes, `_COMPLETE.json`). Exit 2 (e.g. a date before a published one, or after an unpublished one) fails without retries |
| `load_staging` | replaces the `ds` slice of the staging tables and stages the registry version, in one transaction |
| `check_integrity` | `DatabaseIntegrityCheckOperator`: SQLite `integrity_check`, PostgreSQL amcheck, SQL Server `DBCC CHECKDB`, Oracle `ANALYZE … VALIDATE STRUCTURE`; FAIL/ERROR block publish |
| `check_quality` | Great Expectations suites `include/gx/staging_{records,links,clusters}.json` on the `ds` slice (reconciled with the Spark counts), plus the registry suites (staged new state, no published entity id vanishing without a merge/split), Data Docs |
| `publish` | one transaction: the audited slice to the published tables, and `entity_members` / `entities` replaced by the new state, `entity_changes` of `ds`; then `_PUBLISHED.json`; emits the `washline_published` asset |
| `report` | run summary JSON (`lake/reports/<ds>/run_summary.json`, with new / joined / new entities / merges / splits) and the HTML report `report.html` with its review page `review.html` (the run's "Night report" and "Link review" tabs); when nothing was published writes `_REJECTED.json` (the next date links against the last published version) and fails the run |

Params: `input_folder` (landing root inside the data root), `staging_conn_id`
(the target database's Airflow connection), `staging_schema` (empty = default), `profile` (linkage profile in
`include/config/`), `entity_registry` (default true: link the night against the published entity registry;
false: link it in isolation, with per-night cluster ids, no `lake/entities` version, no entity tables staged or
published and no markers), `rebuild` (the link job's `--rebuild`: relink the whole history of the published
version the night follows together with the night in one batch, instead of only the night and its
neighbourhood; the differences against that version are recorded as merges and splits and published through
the same checks; the summary gives the rebuild's pairwise F1 against the incremental entities; needs
`entity_registry`).
"""

from __future__ import annotations

from datetime import datetime, timezone

from airflow.sdk import Param, dag, task

from washline.assets import PUBLISHED
from washline.integrity.operator import DatabaseIntegrityCheckOperator
from washline.links import DataDocsLink, ReportLink, with_links
from washline.operators import SparkJobOperator
from washline.paths import CONN_ID_RE, INPUT_FOLDER_RE, MEMORY_RE, PROFILE_RE, SCHEMA_RE, retry_delay

DAG_ID = "washline_nightly"


@dag(
    dag_id=DAG_ID,
    schedule="0 2 * * *",
    start_date=datetime(2025, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    tags=["washline", "etl", "record-linkage"],
    doc_md=__doc__,
    default_args={"owner": "washline", "retries": 2, "retry_delay": retry_delay(30)},
    params={
        "input_folder": Param(
            "landing",
            type="string",
            pattern=INPUT_FOLDER_RE,
            title="Input folder",
            description="Landing root holding <source>/<ds>/*.csv; relative to the data root, or absolute inside it.",
        ),
        "staging_conn_id": Param(
            "washline_staging",
            type="string",
            pattern=CONN_ID_RE,
            title="Target connection",
            description="Airflow connection of the staging database (sqlite, postgres, mssql or oracle).",
        ),
        "staging_schema": Param(
            "",
            type="string",
            pattern=SCHEMA_RE,
            title="Staging schema",
            description="Schema of the staging and published tables; empty = the connection's default (SQLite: main).",
        ),
        "profile": Param(
            "default",
            type="string",
            pattern=PROFILE_RE,
            title="Linkage profile",
            description="HDWM parameter profile: include/config/<profile>.yaml.",
        ),
        "executor_memory": Param(
            "",
            type="string",
            pattern=MEMORY_RE,
            title="Executor memory",
            description=("Heap of each Spark executor on a cluster (spark-submit --executor-memory), e.g. 4g or "
                         "1536m; empty = the Spark connection's or Spark's default (1g). In local mode the "
                         "driver is the executor: set WASHLINE_SPARK_DRIVER_MEMORY instead."),
        ),
        "entity_registry": Param(
            True,
            type="boolean",
            title="Entity registry",
            description=("true: link the night against the latest published entity registry version, so entity "
                         "ids persist across nights. false: link the night in isolation (per-night "
                         "cluster ids; no lake/entities version, no entity tables staged or published)."),
        ),
        "rebuild": Param(
            False,
            type="boolean",
            title="Full rebuild",
            description=("Relink every reference of the entity registry plus this night in one batch "
                         "(link.py --rebuild) and publish the result as recorded merges and splits; "
                         "the summary reports its pairwise F1 against the incremental partition. "
                         "Needs entity_registry=true."),
        ),
    },
)
def washline_nightly():
    cleanse = SparkJobOperator(task_id="cleanse", job="cleanse", conn_id="spark_default")
    link = SparkJobOperator(task_id="link", job="link", conn_id="spark_default")

    @task
    def load_staging():
        from airflow.sdk import get_current_context
        from washline import tasks

        return tasks.load_staging(get_current_context())

    check_integrity = DatabaseIntegrityCheckOperator(
        task_id="check_integrity",
        conn_id="{{ params.staging_conn_id }}",
        mode="full",
        retries=1,
    )

    @task(retries=0)
    def check_quality(cleanse_metrics: dict, link_metrics: dict):
        from airflow.sdk import get_current_context
        from washline import tasks

        return tasks.check_quality(get_current_context(), cleanse_metrics["rows_curated"], link_metrics)

    @task(outlets=[PUBLISHED])
    def publish():
        from airflow.sdk import get_current_context
        from washline import tasks

        return tasks.publish(get_current_context())

    @task(trigger_rule="all_done", retries=0)
    def report():
        from airflow.sdk import get_current_context
        from washline import tasks

        return tasks.report(get_current_context())

    loaded = load_staging()
    checks = [check_integrity, with_links(check_quality(cleanse.output, link.output), DataDocsLink())]
    summary = with_links(report(), ReportLink())
    cleanse >> link >> loaded >> checks >> publish() >> summary
    checks >> summary


washline_nightly()
