"""washline: the Airflow-side package (operators, staging, checks, reports).

Importing ``washline`` is cheap: submodules import Spark, GX and database
drivers lazily, inside the functions that need them, so DAG parsing stays fast.
"""

__version__ = "0.1.0"
