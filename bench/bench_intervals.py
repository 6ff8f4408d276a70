"""What the 95 % intervals cost a table job (issue 31: no more than 10 % of the tables' job time).

Renders each of Tables 3-6 and the baselines table from a finished results tree twice, as the
workflow's table rule does (:func:`proofmatch.evaluation.tables.table_from_inputs`, files read
included): once from the tree's evaluation JSONs as they are (every score with its bootstrap
interval and each learned cell's paired difference from BM25), once from copies of the same JSONs
without their per-statement block (so no interval, and the smaller files a table without intervals
would read, loaded and rendered as dicts: the product refuses a JSON *file* without the block as
stale). Prints the seconds of each, best of ``--repeat``, and, where the tree has the table
job's benchmark file (``results/benchmarks/table/{table}.tsv``: the whole job, Python's start and
imports included), the difference as a share of that job. On a tree still being built, a table with
a missing evaluation is named and left out.

    python bench/bench_intervals.py --config config/config.yaml [--results .] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
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


def stripped_copy(evaluations, root: Path) -> None:
    """Each evaluation's JSON under ``root`` (same relative path) without its per-statement block:
    what a table renders with no interval."""
    for ev in evaluations:
        metrics = {k: v for k, v in T.load_metrics(ev.path()).items() if k != B.STATEMENTS}
        target = ev.path(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(metrics))


def job_seconds(name: str) -> float | None:
    """The table job's wall seconds from its benchmark file, when the run wrote one."""
    tsv = Path("results/benchmarks/table") / f"{name}.tsv"
    if not tsv.exists():
        return None
    return float(tsv.read_text().splitlines()[1].split("\t")[0])


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
    print(
        "| table | with intervals (s) | without (s) | difference | table job (s) | share of the job |"
        "\n|---|---|---|---|---|---|"
    )
    total_with = total_without = total_job = 0.0
    for name, table in RT.tables(fusion=fusion).items():
        if table.kind == "hubness":
            continue
        evaluations = table.evaluations(not_run)
        evaluations += I.references(evaluations)
        missing = [ev for ev in evaluations if not Path(ev.path()).exists()]
        if missing:  # a tree still being built: say so, time the tables it has
            print(
                f"| {name} | not built: {len(missing)} of {len(evaluations)} evaluations missing |"
            )
            continue
        plain_root = out / "plain-eval"
        stripped_copy(evaluations, plain_root)
        with_iv = best_of(
            args.repeat,
            lambda: T.table_from_inputs(
                name,
                X.workflow_inputs(evaluations),
                out / name,
                not_run,
                fusion=fusion,
                config=config,
            ),
        )
        # the stripped files read inside the timing, then rendered as loaded dicts: a dict without
        # the block is a table without intervals (a file without it is refused, as a stale one)
        without = best_of(
            args.repeat,
            lambda: T.render_table(
                table,
                {ev: T.load_metrics(ev.path(plain_root)) for ev in evaluations},
                out / f"{name}-plain",
                not_run,
                config,
            ),
        )
        job = job_seconds(name)
        share = f"{100 * (with_iv - without) / job:.1f} %" if job else "no benchmark file"
        total_with, total_without = total_with + with_iv, total_without + without
        total_job += job or 0.0
        print(
            f"| {name} | {with_iv:.3f} | {without:.3f} | {with_iv - without:.3f} | "
            f"{job if job else '–'} | {share} |"
        )
    diff = total_with - total_without
    share = f"{100 * diff / total_job:.1f} %" if total_job else "–"
    print(
        f"| all | {total_with:.3f} | {total_without:.3f} | {diff:.3f} | {total_job:.2f} | {share} |"
    )


if __name__ == "__main__":
    main()
