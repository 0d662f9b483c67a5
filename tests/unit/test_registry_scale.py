"""benchmarks/registry_scale.py: the pure parts that turn a run into its table (no Spark here; the
seeding and the nights run only in the benchmark)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def rs(benchmark_module):
    return benchmark_module("registry_scale")


def test_history_sizes_are_whole_numbers_of_at_least_a_thousand(rs):
    assert rs.parse_sizes("100000, 1_000_000") == [100000, 1000000]
    for bad in ("100", "1e6", "", "100000,-5"):
        with pytest.raises(ValueError, match="at least 1000"):
            rs.parse_sizes(bad)


def test_stage_seconds_come_from_the_link_jobs_own_lines(rs):
    lines = ["[link] registry: read base version: base_ds=2025-01-02 references=110000 (stage 0.4s; 2.0s since start)",
             "[link] engine: iteration 1 at mu=0.50 took 88.7s (377.6s since start)",
             "[link] registry: neighbourhood pulled in: references=14877 (stage 226.5s; 250.4s since start)",
             "[hdwm] registry: link: not the job's line (stage 9.0s; 9.0s since start)"]
    assert rs.stage_seconds(lines) == {"registry: read base version": 0.4, "registry: neighbourhood pulled in": 226.5}


def test_the_table_has_one_row_per_night_with_bytes_and_ratios(rs, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 1500)
    assert rs.folder_bytes(tmp_path) == 1500 and rs.folder_bytes(tmp_path / "missing") == 0
    row = {"history": 100000, "night": 1, "seconds": 40.0, "stages": {"registry: link": 12.0},
           "written_bytes": 4000, "curated_bytes": 2000, "neighbourhood": 15, "night_f1": None,
           "lake_entities_bytes": 3_000_000, "load_1min": 1.5}
    text = rs.table([row, {**row, "history": 1000000, "night_f1": 0.99123}])
    lines = text.splitlines()
    assert len(lines) == 4 and lines[0].startswith("| history | night | link s |")
    assert "| 100,000 | 1 | 40.0 |" in lines[2] and "| 12.0 |" in lines[2] and "| 2.00 |" in lines[2]
    assert "| n/a |" in lines[2] and "| 0.9912 |" in lines[3] and "| 3.0 | 1.5 |" in lines[3]


def test_postgres_columns_appear_only_when_a_night_was_published(rs):
    row = {"history": 100000, "night": 1, "seconds": 40.0, "stages": {}, "written_bytes": 4000,
           "curated_bytes": 2000, "neighbourhood": 15, "night_f1": 0.5, "lake_entities_bytes": 3_000_000,
           "load_1min": 1.5}
    assert "publish mode" not in rs.table([row])
    pg = {"mode": "incremental", "gx": "WARN", "staging_s": 0.5, "gx_s": 7.25, "publish_s": 1.5}
    lines = rs.table([{**row, "postgres": {**pg, "mode": "full"}}, row, {**row, "night": 2, "postgres": pg}]).splitlines()
    assert lines[0].endswith("| publish mode | staging s | GX s | publish s |")
    assert {line.count("|") for line in lines} == {lines[0].count("|")}  # every row has every column
    assert lines[2].endswith("| full | 0.5 | 7.25 | 1.5 |") and lines[4].endswith("| incremental | 0.5 | 7.25 | 1.5 |")
    assert lines[3].endswith("| | | | |")


def test_the_batch_column_appears_only_with_a_batch_relink(rs):
    row = {"history": 100000, "night": 1, "seconds": 40.0, "stages": {}, "written_bytes": 4000,
           "curated_bytes": 2000, "neighbourhood": 15, "night_f1": 0.5, "lake_entities_bytes": 3_000_000,
           "load_1min": 1.5}
    assert "batch F1" not in rs.table([row])
    lines = rs.table([{**row, "batch_night_f1": 0.51234}, {**row, "night": 2, "batch_night_f1": None}]).splitlines()
    assert "| night F1 | batch F1 | lake/entities MB |" in lines[0]
    assert {line.count("|") for line in lines} == {lines[0].count("|")}
    assert "| 0.5000 | 0.5123 | 3.0 |" in lines[2] and "| 0.5000 | n/a | 3.0 |" in lines[3]


def test_nights_alternate_two_sources_unless_published_as_a_configured_one(rs):
    assert [rs.night_source(i, False) for i in range(3)] == ["src_a", "src_b", "src_a"]
    assert {rs.night_source(i, True) for i in range(3)} == {"febrl"}
