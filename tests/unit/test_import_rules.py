"""The import line between the Airflow side and the Spark side, checked on every module (AST walk).

* ``dags/`` and ``washline`` (the Airflow side) import nothing from ``pyspark`` or ``hdwm``;
* ``hdwm``, ``cleansing`` and the Spark job scripts (``spark_jobs/*.py``) import nothing from ``airflow`` or ``washline``;
* ``jobcontract``, which both sides import, imports only the standard library;
* ``sourcecontract`` (``sources.yaml``), which both sides import too, only the
  standard library, PyYAML and pydantic.

Every import counts, also one inside a function (a lazy import crosses the line
all the same when it runs). ``tests/dags/test_dag_integrity.py`` checks what
parsing the DAGs actually loads.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPARK_JOBS = ROOT / "spark_jobs"


def imported_roots(path: Path) -> set[str]:
    """Top-level package of every absolute import in ``path`` (relative imports stay inside the package)."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


def files(*dirs: Path, pattern: str = "**/*.py") -> list[Path]:
    return sorted(p for d in dirs for p in d.glob(pattern) if "__pycache__" not in p.parts)


AIRFLOW_SIDE = files(ROOT / "dags", ROOT / "src" / "washline", ROOT / "plugins")
SPARK_SIDE = files(SPARK_JOBS / "hdwm") + files(SPARK_JOBS / "cleansing") + files(SPARK_JOBS, pattern="*.py")
CONTRACT = files(SPARK_JOBS / "jobcontract")
SOURCE_CONTRACT = files(SPARK_JOBS / "sourcecontract")


def _ids(paths):
    return [str(p.relative_to(ROOT)) for p in paths]


@pytest.mark.parametrize("path", AIRFLOW_SIDE, ids=_ids(AIRFLOW_SIDE))
def test_airflow_side_does_not_import_the_spark_side(path):
    assert not imported_roots(path) & {"pyspark", "hdwm"}


@pytest.mark.parametrize("path", SPARK_SIDE, ids=_ids(SPARK_SIDE))
def test_spark_side_does_not_import_the_airflow_side(path):
    assert not imported_roots(path) & {"airflow", "washline"}


@pytest.mark.parametrize("path", CONTRACT, ids=_ids(CONTRACT))
def test_the_contract_imports_only_the_standard_library(path):
    assert imported_roots(path) - {"__future__"} <= set(sys.stdlib_module_names)


@pytest.mark.parametrize("path", SOURCE_CONTRACT, ids=_ids(SOURCE_CONTRACT))
def test_the_source_contract_imports_only_yaml_and_pydantic(path):
    assert imported_roots(path) - {"__future__", "yaml", "pydantic"} <= set(sys.stdlib_module_names)


def test_the_walk_sees_every_room_and_lazy_imports(tmp_path):
    assert len(AIRFLOW_SIDE) > 30 and len(SPARK_SIDE) > 15 and CONTRACT and SOURCE_CONTRACT
    assert {p.name for p in SPARK_SIDE} >= {"cleanse.py", "link.py", "compare.py"}
    lazy = tmp_path / "lazy.py"
    lazy.write_text("from . import sibling\ndef f():\n    from pyspark.sql import functions\n    import hdwm.compare\n")
    assert imported_roots(lazy) == {"pyspark", "hdwm"}
