"""What the 95 % intervals cost a table job (against a goal of no more than 10 % of a table job's time).

A table job renders its table once, in a fresh process. So does this benchmark: for each of Tables
3-6 and the baselines table of a finished results tree, a child process imports what the table
rule's script imports, then measures one render (files read included) in CPU seconds of its
process (``time.process_time``: the machine is often shared, and wall seconds under load say
little), either as the workflow's
table rule does it (:func:`proofmatch.evaluation.tables.table_from_inputs`: every score with its
bootstrap interval and each learned cell's paired difference from BM25), or from copies of the same
evaluation JSONs without their per-statement block, read and rendered as loaded dicts (no interval;
the product refuses a JSON *file* without the block as stale). The two arms alternate, ``--repeat``
children each; printed are the median of each arm, their difference, and that difference as a share
of the whole child with intervals (its CPU seconds from ``getrusage``: Python's start, the imports
and the render; a real table job also starts Snakemake's script wrapper, so the share is an upper
bound), beside the table job's wall seconds where the tree has its benchmark file
(``results/benchmarks/table/{table}.tsv``). Best-of-N in one process would hide the first
render's costs (the draws of a pool size, pandas' first calls), which every table job pays. On a
tree still being built, a table with a missing evaluation is named and left out.

A child runs with the thread variables Snakemake sets for a job (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ...; ``snakemake.shell``), at ``--threads`` (1: ``rule table`` declares
none, so its jobs get one). Without them NumPy's OpenBLAS starts a thread per core for the
bootstrap's matrix product, and their spinning after it counts as CPU time that a table job
never spends: on the Stacks tree that was about two thirds of what this benchmark used to report.

    python bench/bench_intervals.py --config config/config.yaml [--results .] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.config import load_config
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation import intervals as I
from proofmatch.evaluation import tables as T


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


def render_once(config_files: list[str], name: str, arm: str, plain_root: Path, out: Path) -> float:
    """One render of table ``name`` in this (fresh) process: CPU seconds, files read included."""
    config = load_config(*config_files)
    not_run, fusion = X.not_run(config), X.fusion_runs(config)
    table = RT.tables(fusion=fusion)[name]
    evaluations = I.with_references(table.evaluations(not_run))
    t0 = time.process_time()
    if arm == "with":
        T.table_from_inputs(
            name, X.workflow_inputs(evaluations), out / name, not_run, fusion=fusion, config=config
        )
    else:
        loaded = {ev: T.load_metrics(ev.path(plain_root)) for ev in evaluations}
        T.render_table(table, loaded, out / f"{name}-plain", not_run, config)
    return time.process_time() - t0


# What Snakemake's shell sets for a job of ``threads`` threads (snakemake/shell.py).
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def child(
    config_files: list[str], name: str, arm: str, plain_root: Path, out: Path, threads: int = 1
) -> tuple[float, float]:
    """(:func:`render_once` in a new Python process (cwd: the results tree) with a job's thread
    variables, that process's whole CPU seconds)."""
    env = dict(os.environ) | {var: str(threads) for var in THREAD_VARIABLES}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run(
        [sys.executable, __file__, "--config", *config_files, "--one", name, arm]
        + ["--plain-root", str(plain_root), "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    whole = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(run.stdout.split()[-1]), whole


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", nargs="+", default=["config/config.yaml"])
    ap.add_argument("--results", default=".", help="the folder holding results/")
    ap.add_argument("--repeat", type=int, default=5, help="children per arm and table")
    ap.add_argument(
        "--threads", type=int, default=1, help="a table job's threads (rule table declares none: 1)"
    )
    ap.add_argument("--one", nargs=2, metavar=("TABLE", "ARM"), help=argparse.SUPPRESS)
    ap.add_argument("--plain-root", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    config_files = [os.path.abspath(c) for c in args.config]
    if args.one:  # a child: one render, its seconds on stdout
        print(render_once(config_files, *args.one, args.plain_root, args.out))
        return
    config = load_config(*config_files)
    os.chdir(args.results)
    not_run, fusion = X.not_run(config), X.fusion_runs(config)
    out = Path(tempfile.mkdtemp())
    print(
        "| table | render with intervals (CPU s) | without (CPU s) | difference | whole process "
        "with intervals (CPU s) | share of it | table job (wall s, benchmark file) |"
        "\n|---|---|---|---|---|---|---|"
    )
    totals = {"with": 0.0, "without": 0.0, "whole": 0.0}
    for name, table in RT.tables(fusion=fusion).items():
        if table.kind == "hubness":
            continue
        evaluations = I.with_references(table.evaluations(not_run))
        missing = [ev for ev in evaluations if not Path(ev.path()).exists()]
        if missing:  # a tree still being built: say so, time the tables it has
            print(
                f"| {name} | not built: {len(missing)} of {len(evaluations)} evaluations missing |"
            )
            continue
        plain_root = out / "plain-eval"
        stripped_copy(evaluations, plain_root)
        times: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
        for _ in range(args.repeat):
            for arm in times:
                times[arm].append(child(config_files, name, arm, plain_root, out, args.threads))
        with_iv, without = (
            statistics.median(t for t, _ in times[arm]) for arm in ("with", "without")
        )
        whole = statistics.median(w for _, w in times["with"])
        for key, value in (("with", with_iv), ("without", without), ("whole", whole)):
            totals[key] += value
        job = job_seconds(name)
        print(
            f"| {name} | {with_iv:.3f} | {without:.3f} | {with_iv - without:.3f} | {whole:.2f} | "
            f"{100 * (with_iv - without) / whole:.1f} % | {job if job else '–'} |"
        )
    diff = totals["with"] - totals["without"]
    share = f"{100 * diff / totals['whole']:.1f} %" if totals["whole"] else "–"
    print(
        f"| all | {totals['with']:.3f} | {totals['without']:.3f} | {diff:.3f} | "
        f"{totals['whole']:.2f} | {share} | |"
    )


if __name__ == "__main__":
    main()
