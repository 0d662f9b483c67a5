"""Staging load and write-audit-publish, per SQL dialect.

The dialect is chosen from the Airflow connection type, never from code:
``sqlite`` and ``postgres`` run here; ``mssql`` and ``oracle`` are selected the
same way (see ``sql/<dialect>/``).
"""
