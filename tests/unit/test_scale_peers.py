"""benchmarks/scale.py times washline against one or two Splink peers (DuckDB, Spark) and prints
washline / peer beside each peer's time; benchmarks/splink_spark.py sets the Spark peer up.
These tests cover the option parsing, the summary table and the Spark peer's settings without
running Spark or Splink (the peer runs are replaced by recorded results)."""

from __future__ import annotations

import argparse

import pytest


@pytest.fixture(scope="module")
def scale(benchmark_module):
    return benchmark_module("scale")


@pytest.fixture(scope="module")
def peer(benchmark_module):
    return benchmark_module("splink_spark")


@pytest.mark.parametrize("text, expected", [
    ("duckdb", ["duckdb"]), ("spark", ["spark"]), ("spark,duckdb", ["duckdb", "spark"]),
    (" Spark , duckdb,spark ", ["duckdb", "spark"]),
])
def test_peers_are_parsed_into_table_order_once_each(scale, text, expected):
    assert scale.parse_peers(text) == expected


@pytest.mark.parametrize("text, message", [("", "at least one peer"), (" , ", "at least one peer"),
                                           ("duckdb,sqlite", "unknown peer(s) sqlite")])
def test_empty_or_unknown_peers_are_refused(scale, capsys, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match="peer"):
        scale.parse_peers(text)
    with pytest.raises(SystemExit):
        scale.main(["--peers", text])
    assert message in capsys.readouterr().err


def test_spark_peer_without_its_venv_is_refused_before_any_run(scale, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(scale, "SPLINK_SPARK_PY", str(tmp_path / "missing" / "python"))
    monkeypatch.setattr(scale, "synth", lambda *a, **k: pytest.fail("ran before checking the venv"))
    with pytest.raises(SystemExit):
        scale.main(["--sizes", "5000", "--peers", "duckdb,spark"])
    assert "make -C benchmarks splink-spark-venv" in capsys.readouterr().err


def _row(label, wall, peers, walls=None):
    return {"label": label, "wall": wall, "walls": walls or ([wall] if wall is not None else []),
            "peak": 5.25 if wall is not None else None, "f1": 0.9975 if wall is not None else None,
            "load0": 2.0, "load1": 3.5, "peers": peers}


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_ratio_table_puts_each_peers_ratio_beside_its_time(scale):
    rows = [_row("synth 100,000", 120.0, {"duckdb": (6.0, 0.45, 0.9989, 3.9), "spark": (80.0, 2.5, 0.9964, 4.2)},
                 walls=[130.0, 120.0, 110.0])]
    head, rule, line = scale.ratio_table(rows, ["duckdb", "spark"])
    cols = _cells(head)
    assert cols[:6] == ["input", "washline median wall s (runs)", "Splink-DuckDB wall s",
                        "**washline / Splink-DuckDB**", "Splink-Spark wall s", "**washline / Splink-Spark**"]
    assert rule.count("---") == len(cols)
    got = dict(zip(cols, _cells(line)))
    assert got["washline median wall s (runs)"] == "120.0 (130.0, 120.0, 110.0)"
    assert got["Splink-DuckDB wall s"] == "6.0" and got["**washline / Splink-DuckDB**"] == "**20.00×**"
    assert got["Splink-Spark wall s"] == "80.0" and got["**washline / Splink-Spark**"] == "**1.50×**"
    assert got["Splink-DuckDB peak GiB"] == "0.45" and got["Splink-Spark peak GiB"] == "2.50"
    assert got["washline F1"] == "0.9975"
    assert got["Splink-DuckDB F1"] == "0.9989" and got["Splink-Spark F1"] == "0.9964"
    assert got["load avg (washline start→end, after Splink-DuckDB, after Splink-Spark)"] == "2.0→3.5, 3.9, 4.2"


def test_ratio_table_marks_what_did_not_run(scale):
    rows = [_row("synth 5,000", None, {"spark": (40.0, 2.0, None, 1.0)}),  # washline skipped; F1 undefined
            _row("synth 10,000", 30.0, {"duckdb": (0.0, 0.2, 0.99, 1.0)})]  # spark missing; a 0 s peer
    _, _, skipped, partial = scale.ratio_table(rows, ["duckdb", "spark"])
    cols = _cells(scale.ratio_table([], ["duckdb", "spark"])[0])
    s, p = dict(zip(cols, _cells(skipped))), dict(zip(cols, _cells(partial)))
    assert s["washline median wall s (runs)"] == "–" and s["**washline / Splink-Spark**"] == "–"
    assert s["Splink-Spark wall s"] == "40.0" and s["Splink-Spark F1"] == "–" and s["Splink-DuckDB wall s"] == "–"
    assert p["**washline / Splink-DuckDB**"] == "–"  # no ratio over a zero time
    assert p["Splink-Spark wall s"] == "–" and p["**washline / Splink-Spark**"] == "–"
    assert p["load avg (washline start→end, after Splink-DuckDB, after Splink-Spark)"] == "2.0→3.5, 1.0, –"


def test_default_table_has_only_the_duckdb_peer(scale):
    head = scale.ratio_table([], ["duckdb"])[0]
    assert "Splink-DuckDB" in head and "Spark" not in head


def test_main_runs_the_chosen_peers_on_each_input_and_prints_their_ratios(scale, monkeypatch, tmp_path, capsys):
    data = tmp_path / "synth.csv"
    data.write_text("rec_id,truth_entity\n")
    py = tmp_path / "python"
    py.write_text("")
    calls = []

    def fake(name, result):
        def run(path):
            calls.append((name, path))
            return result
        return run

    monkeypatch.setattr(scale, "synth", lambda n, generator="synth": data)
    monkeypatch.setattr(scale, "SPLINK_SPARK_PY", str(py))
    monkeypatch.setattr(scale, "PEER_RUNS", {"duckdb": fake("duckdb", (8.0, 0.4, 0.998)),
                                             "spark": fake("spark", (64.0, 2.1, 0.997))})
    assert scale.main(["--sizes", "5000", "--skip-hdwm", "--peers", "spark,duckdb"]) == 0
    assert calls == [("duckdb", data), ("spark", data)]
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| synth 5,000")]
    assert len(table) == 1 and "| 8.0 |" in table[0] and "| 64.0 |" in table[0]

    calls.clear()
    assert scale.main(["--sizes", "5000", "--skip-hdwm", "--skip-splink", "--peers", "spark"]) == 0
    assert calls == []


def test_spark_peer_settings_follow_splinks_spark_guidance(peer):
    conf = peer.spark_conf(2, "/x/scala-udf-similarity-0.2.1_spark4.x.jar")
    assert conf["spark.master"] == "local[2]"
    assert conf["spark.jars"] == "/x/scala-udf-similarity-0.2.1_spark4.x.jar"
    assert conf["spark.default.parallelism"] == conf["spark.sql.shuffle.partitions"] == "10"  # 5x the cores
    assert peer.spark_conf(4, "j")["spark.sql.shuffle.partitions"] == "20"
    assert conf["spark.driver.memory"] == "4g"


@pytest.mark.parametrize("cores, jar", [(0, "j"), (-1, "j"), (2.5, "j"), (2, "")])
def test_spark_peer_settings_refuse_bad_cores_or_jar(peer, cores, jar):
    with pytest.raises(ValueError):
        peer.spark_conf(cores, jar)


def test_spark_peer_refuses_a_missing_input_before_starting_spark(peer, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        peer.main(["--input", str(tmp_path / "nope.csv")])
    assert exc.value.code == 2 and "no such input file" in capsys.readouterr().err


def test_jar_check_names_the_functions_spark_lacks(peer):
    class Fn:
        def __init__(self, name):
            self.name = name

    class Catalog:
        def __init__(self, names):
            self.names = names

        def listFunctions(self):  # noqa: N802 (Spark's name)
            return [Fn(n) for n in self.names]

    class Spark:
        version = "4.2.0"

        def __init__(self, names):
            self.catalog = Catalog(names)

    peer.check_jar(Spark([n.lower() for n in peer.JAR_FUNCTIONS] + ["upper"]))  # the catalog lower-cases
    with pytest.raises(RuntimeError, match="jaro_winkler"):
        peer.check_jar(Spark([n for n in peer.JAR_FUNCTIONS if n != "jaro_winkler"]))
