"""Small Parquet slices shaped exactly like the Spark jobs' outputs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

RECORD_COLUMNS = ["record_id", "source", "truth_entity", "given_name", "surname", "street_number",
                  "address_1", "address_2", "suburb", "postcode", "state", "date_of_birth",
                  "soc_sec_id", "ds", "source_file", "line_number"]


def write_slice(root: Path, ds: str, n: int = 6, drop: str | None = None, extra: str | None = None,
                cluster_of=lambda i: i // 2) -> dict[str, Path]:
    """Write curated records, links and clusters for ``n`` records; records 2k and
    2k+1 share a cluster. Returns staging table → Parquet folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = root / ds
    recs = {
        "record_id": [f"rec-{i}" for i in range(n)],
        "source": ["febrl"] * n,
        "truth_entity": [str(i // 2) for i in range(n)],
        "given_name": [f"NAME{i}" for i in range(n)],
        "surname": ["SMITH"] * n,
        "street_number": ["1"] * n,
        "address_1": ["MAIN ST"] * n,
        "address_2": [None] * n,
        "suburb": ["TOWN"] * n,
        "postcode": ["2000"] * n,
        "state": ["NSW"] * n,
        "date_of_birth": [dt.date(1980, 1, 1 + i % 28) for i in range(n)],
        "soc_sec_id": [str(1000000 + i) for i in range(n)],
        "ds": [ds] * n,
        "source_file": ["part-0000.csv"] * n,
        "line_number": [i + 2 for i in range(n)],
    }
    if drop:
        recs.pop(drop)
    if extra:
        recs[extra] = ["x"] * n
    cluster_ids = [f"rec-{2 * cluster_of(i)}" for i in range(n)]
    links = {
        "record_id": [f"rec-{i}" for i in range(n)],
        "source": ["febrl"] * n,
        "cluster_id": cluster_ids,
        "iteration": pa.array([1] * n, pa.int32()),
        "mu": [0.6] * n,
        "quality": [1.0] * n,
        "cluster_size": pa.array([cluster_ids.count(c) for c in cluster_ids], pa.int32()),
    }
    unique = sorted(set(cluster_ids))
    clusters = {
        "cluster_id": unique,
        "cluster_size": pa.array([cluster_ids.count(c) for c in unique], pa.int32()),
        "quality": [1.0] * len(unique),
        "iteration": pa.array([1] * len(unique), pa.int32()),
    }
    out = {}
    for table, data, folder in (("staging_records", recs, "curated"), ("staging_links", links, "links"),
                                ("staging_clusters", clusters, "clusters")):
        path = root / folder
        path.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(data), path / "part-00000.parquet")
        (path / "_SUCCESS").write_text("")
        out[table] = path
    return out
