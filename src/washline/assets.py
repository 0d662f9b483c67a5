"""Airflow assets washline produces (data-aware scheduling for downstream DAGs)."""

from __future__ import annotations

from airflow.sdk import Asset

#: Updated by ``washline_nightly.publish`` each time a logical date's slice is
#: published; the event's ``extra`` carries ``ds``, ``load_id`` and row counts.
PUBLISHED = Asset(name="washline_published", uri="washline://staging/published")
