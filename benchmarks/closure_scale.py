"""``hdwm.closure.connected_components`` on large random graphs, checked against networkx.

The size-dependent half of ``tests/unit/test_hdwm_closure_random.py``: the test closes a 20,000-node
chain and a 20,000-node mixture (the behaviour: a long path needs many large-star/small-star rounds
and still gets every node labelled as networkx labels it); this script runs the same seeded graphs
(the test module's ``big_graphs``) at 100,000 nodes each, or any ``--nodes``, and reports the rounds
and the seconds. It fails (exit 1, the test's assertion message) when a label differs from networkx.

    PYTHONPATH=spark_jobs:src .venv/bin/python benchmarks/closure_scale.py --nodes 100000 [--json out.json]

Output: one JSON line ``{"nodes", "edges", "rounds", "components", "seconds"}`` (``seconds``: the
closure and the comparison join, wall; graph generation and networkx excluded).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _test_module():
    """``tests/unit/test_hdwm_closure_random.py`` as a module (its generators and comparison)."""
    path = REPO / "tests" / "unit" / "test_hdwm_closure_random.py"
    spec = importlib.util.spec_from_file_location("closure_random_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000, help="nodes of each of the two graphs (default 100000)")
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args(argv)
    sys.path[:0] = [str(REPO / "spark_jobs"), str(REPO / "src")]
    from hdwm.spark import get_spark

    cases = _test_module()
    edges = cases.big_graphs(args.nodes)
    spark = get_spark("closure-scale", {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"})
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.monotonic()
            rounds, components = cases._compare(spark, Path(tmp), edges, "big")
            seconds = round(time.monotonic() - t0, 1)
    finally:
        spark.stop()
    if rounds < 5:
        print(f"a {args.nodes}-node chain closed in {rounds} rounds: expected at least 5", file=sys.stderr)
        return 1
    result = {"nodes": args.nodes, "edges": len(edges), "rounds": rounds, "components": components,
              "seconds": seconds}
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
