"""What the 95 % intervals cost a table job (issue 31: no more than 10 % of the tables' job time).

Renders each of Tables 3-6 and the baselines table from a finished results tree twice, as the
workflow's table rule does (:func:`proofmatch.evaluation.tables.table_from_inputs`), once as it is
(every score with its bootstrap interval and each learned cell's paired difference from BM25) and
once from the same evaluations loaded as metrics dicts without their per-statement block (so no
interval), and prints the seconds of each, best of ``--repeat``. On a tree still being built, a
table with a missing evaluation is named and left out. A table job's own start (Python, pandas, the
package: about 1.5 s here) comes on top of both and is not counted, so the share is an upper bound.

    python bench/bench_intervals.py --config config/config.yaml [--results .] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.config import load_config
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation import intervals as I
from proofmatch.evaluation import tables as T


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def plain(metrics: dict) -> dict:
    """An evaluation's metrics without the per-statement block: what a table renders with no
    interval."""
    return {k: v for k, v in metrics.items() if k != B.STATEMENTS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", nargs="+", default=["config/config.yaml"])
    ap.add_argument("--results", default=".", help="the folder holding results/")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    config = load_config(*args.config)
    os.chdir(args.results)
    not_run, fusion = X.not_run(config), X.fusion_runs(config)
    out = Path(tempfile.mkdtemp())
    total_with = total_without = 0.0
    print("| table | with intervals (s) | without (s) |\n|---|---|---|")
    for name, table in RT.tables(fusion=fusion).items():
        if table.kind == "hubness":
            continue
        evaluations = table.evaluations(not_run)
        evaluations += I.references(evaluations)
        missing = [ev for ev in evaluations if not Path(ev.path()).exists()]
        if missing:  # a tree still being built: say so, time the tables it has
            print(
                f"| {name} | not built: {len(missing)} of {len(evaluations)} evaluations missing | |"
            )
            continue
        inputs = X.workflow_inputs(evaluations)
        with_iv = best_of(
            args.repeat,
            lambda: T.table_from_inputs(
                name, inputs, out / name, not_run, fusion=fusion, config=config
            ),
        )
        loaded = {ev: plain(T.load_metrics(ev.path())) for ev in evaluations}
        without = best_of(
            args.repeat,
            lambda: T.render_table(table, loaded, out / f"{name}-plain", not_run, config),
        )
        total_with, total_without = total_with + with_iv, total_without + without
        print(f"| {name} | {with_iv:.3f} | {without:.3f} |")
    print(f"| all | {total_with:.3f} | {total_without:.3f} |")


if __name__ == "__main__":
    main()
