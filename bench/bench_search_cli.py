"""Benchmark ``proofmatch search`` as a user runs it: a fresh process per command.

Three rows, each the median (and max) of ``--repeat`` runs, wall and CPU (user + system) time of
the child process:

* **refusal**: a query whose formula does not parse (``Let $\\frac{x$ be real``), refused before
  the index, its model and torch are loaded;
* **one query**: one answered query of the index's own test statements (typed as text), from a
  fresh process: interpreter, imports, index and model load, parse, encode, score, print;
* **batch**: ``--queries FILE`` with ``--batch`` such queries in one process: the whole run, and
  the throughput in queries per second after the first (the run minus one cold query, divided by
  the rest).

The queries are the index's test statements whose formulas all kept their TeX, typed as text, as
``bench/bench_search.py`` takes them. The machine's load average is printed beside the numbers:
on a shared machine it explains most of the spread.

    python bench/bench_search_cli.py --index results/index/mixed/npt-local/conservation-both
    python bench/bench_search_cli.py --index DIR --repeat 5 --batch 50 --json rows.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REFUSED = r"Let $\frac{x$ be real"


def typed_queries(index: str, n: int) -> list[str]:
    """Up to ``n`` test statements of the index that can be typed as text (every formula kept
    its TeX), one line each."""
    from proofmatch.search.display import fragment_text

    table = pd.read_parquet(Path(index) / "proofs.parquet", columns=["part", "statement_xml"])
    out = []
    for xml in table.loc[table["part"] == "test", "statement_xml"]:
        if xml is None or "m:math" in xml or xml.count("<math") != xml.count("alttext="):
            continue
        text = " ".join(fragment_text(xml).split())
        if text:
            out.append(text)
        if len(out) == n:
            break
    if not out:
        raise SystemExit(f"{index}: no typable test statement")
    return out


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s of the child, exit status) of one command."""
    before = os.times()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu, done.returncode


def row(name: str, runs: list[tuple[float, float, int]], **extra) -> dict:
    walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
    return {
        "bench": name,
        "runs": len(runs),
        "wall_median_s": round(statistics.median(walls), 3),
        "wall_max_s": round(max(walls), 3),
        "cpu_median_s": round(statistics.median(cpus), 3),
        "status": sorted({r[2] for r in runs}),
        **extra,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True, help="an index folder (proofmatch index)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command")
    ap.add_argument("--batch", type=int, default=20, help="queries in the --queries run")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)

    search = [sys.executable, "-m", "proofmatch.cli", "search", args.index]
    queries = typed_queries(args.index, args.batch)
    rows = []
    load = os.getloadavg()[0]
    refusals = [timed(search + [REFUSED]) for _ in range(args.repeat)]
    assert all(r[2] == 2 for r in refusals), "the refusal was not refused"
    rows.append(row("refusal (formula does not parse)", refusals))
    singles = [timed(search + [queries[0], "-k", "10"]) for _ in range(args.repeat)]
    assert all(r[2] == 0 for r in singles), "the query was not answered"
    rows.append(row("one answered query, cold process", singles))
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "queries.txt"
        qfile.write_text("\n".join(queries) + "\n", encoding="utf-8")
        batches = [
            timed(search + ["--queries", str(qfile), "-k", "10"]) for _ in range(args.repeat)
        ]
    assert all(r[2] == 0 for r in batches), "a query of the batch was refused"
    batch_wall = statistics.median(r[0] for r in batches)
    single_wall = statistics.median(r[0] for r in singles)
    warm = max(batch_wall - single_wall, 1e-9) / max(len(queries) - 1, 1)
    rows.append(
        row(
            f"batch of {len(queries)} queries (--queries), one process",
            batches,
            queries=len(queries),
            warm_s_per_query=round(warm, 4),
            warm_queries_per_s=round(1.0 / warm, 1),
        )
    )
    load_after = os.getloadavg()[0]
    print(f"index {args.index}; load average {load:.1f} before, {load_after:.1f} after")
    print("| command | runs | wall median / max (s) | CPU median (s) | |")
    print("|---|---|---|---|---|")
    for r in rows:
        extra = (
            f"{r['warm_queries_per_s']} queries/s after the first ({r['warm_s_per_query']} s each)"
            if "warm_queries_per_s" in r
            else ""
        )
        print(
            f"| {r['bench']} | {r['runs']} | {r['wall_median_s']} / {r['wall_max_s']} "
            f"| {r['cpu_median_s']} | {extra} |"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"load": [load, load_after], "rows": rows}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
