"""Scale rehearsal of the data half of the workflow: the demo generator at growing sizes, run through
manifest -> extract -> linearize -> filter -> splits -> replacement -> tokenizer -> Tables 1-2 by
Snakemake itself, with per-stage wall time, CPU time, peak RSS, pairs per second per core and the
growth exponent between consecutive sizes.

Each size runs in its own working directory (``--root/<n_articles>``) with the project's
``config/config.yaml`` plus an override that sets ``corpus.demo.n_articles`` and
``corpus.n_shards``. Wall time per job comes from the rules' own ``benchmark:`` files
(``results/benchmarks/**.tsv``, column ``s``). CPU time and peak RSS come from the kernel
(``getrusage`` of each script job's process and its children, written at exit by
``bench/rusage_hook/sitecustomize.py``), because the benchmark files sample only every 30 s after a
job's first 30 s and so miss CPU time and memory peaks of longer jobs. Times are summed per rule
over its jobs (shards, splits, levels); peak RSS is the largest single job's. The growth exponent
between sizes n1 < n2 is ``log(t2 / t1) / log(n2 / n1)`` with n the pairs before filtering, on CPU
time (robust on a shared machine) and on wall time: 1 is linear.

    python bench/bench_scale.py --articles 72 576 6480 --root scale-runs --json scale.json
    python bench/bench_scale.py --articles 72 576          # quick look
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
HOOK = REPO / "bench" / "rusage_hook"
TARGETS = [
    "results/tables/table1.md",
    "results/tables/table2.md",
    "results/models/tokenizer/mixed/tokenizer.json",
    "results/models/tokenizer/unmixed/tokenizer.json",
]
LEVELS = ["conservation", "partial", "full", "trans"]
PR_LEVELS = ["partial_p", "full_p"]


def _targets() -> list[str]:
    out = list(TARGETS)
    out += [f"results/replaced/{s}/{lvl}.parquet" for s in ("mixed", "unmixed") for lvl in LEVELS]
    out += [f"results/replaced/pr/{lvl}.parquet" for lvl in ["conservation", *PR_LEVELS]]
    return out


def _stage(bench_file: Path, root: Path) -> str:
    """Rule name of a benchmark file: its first path component under results/benchmarks/."""
    rel = bench_file.relative_to(root / "results" / "benchmarks")
    return rel.parts[0].removesuffix(".tsv")


def _rusage(folder: Path) -> dict[tuple, dict]:
    """The latest rusage record of every job (rule + wildcards) in ``folder``."""
    out: dict[tuple, dict] = {}
    for f in sorted(folder.glob("*.json"), key=lambda f: f.stat().st_mtime):
        job = json.loads(f.read_text())
        out[(job["rule"], *sorted(job["wildcards"].items()))] = job
    return out


def run_size(n_articles: int, root: Path, cores: int, shards: int) -> dict:
    """Run the data half at one size; return per-stage sums and the pair counts."""
    work = root / str(n_articles)
    work.mkdir(parents=True, exist_ok=True)
    (work / "config").mkdir(exist_ok=True)
    base = (
        work / "config" / "config.yaml"
    )  # the Snakefile's `configfile:` is relative to the workdir
    if not base.exists():
        base.symlink_to(REPO / "config" / "config.yaml")
    override = work / "config" / "scale.yaml"
    override.write_text(
        yaml.safe_dump({"corpus": {"n_shards": shards, "demo": {"n_articles": n_articles}}})
    )
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-d",
        str(work),
        f"-c{cores}",
        *_targets(),
        "--configfile",
        str(REPO / "config" / "config.yaml"),
        str(override),
    ]
    rusage_dir = work / "rusage"
    env = dict(
        os.environ,
        PROOFMATCH_RUSAGE_DIR=str(rusage_dir),
        PYTHONPATH=os.pathsep.join(filter(None, [str(HOOK), os.environ.get("PYTHONPATH")])),
    )
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"snakemake failed at {n_articles} articles:\n{proc.stderr[-4000:]}")
    stages: dict[str, dict[str, float]] = defaultdict(
        lambda: {"s": 0.0, "cpu_time": 0.0, "max_rss_mb": 0.0, "jobs": 0}
    )
    for f in sorted((work / "results" / "benchmarks").rglob("*.tsv")):
        with f.open() as fh:
            rows = list(csv.DictReader(fh, delimiter="\t"))
        if not rows:
            continue
        st = stages[_stage(f, work)]
        st["s"] += float(rows[-1]["s"])
        st["jobs"] += 1
    for job in _rusage(rusage_dir).values():
        if job["rule"] not in stages:
            raise SystemExit(
                f"{job['rule']} ran at {n_articles} articles but has no benchmark: file"
            )
        st = stages[job["rule"]]
        st["cpu_time"] += job["cpu_s"]
        st["max_rss_mb"] = max(st["max_rss_mb"], job["max_rss_mb"])
        st["rusage_jobs"] = st.get("rusage_jobs", 0) + 1
    short = {
        k: (v["jobs"], v.get("rusage_jobs", 0))
        for k, v in stages.items()
        if v["jobs"] != v.get("rusage_jobs")
    }
    if short:
        raise SystemExit(f"benchmark files and rusage records disagree (jobs, records): {short}")
    report = json.loads((work / "results" / "data" / "filter_report.json").read_text())
    pairs_in = int(
        pd.read_parquet(
            work / "results" / "data" / "filter_audit.parquet", columns=["pair_id"]
        ).shape[0]
    )
    pairs_kept = int(
        pd.read_parquet(work / "results" / "data" / "pairs.parquet", columns=["pair_id"]).shape[0]
    )
    return {
        "n_articles": n_articles,
        "pairs_before_filter": pairs_in + pairs_kept,
        "pairs_kept": pairs_kept,
        "workflow_wall_s": round(wall, 1),
        "stages": dict(stages),
        "filter_report_keys": sorted(report),
    }


def growth(rows: list[dict]) -> list[dict]:
    """Per-stage growth exponents of CPU and wall time between consecutive sizes (by pairs before
    filtering); None where the smaller size took under half a second (start-up noise dominates)."""
    out = []
    for a, b in zip(rows, rows[1:]):
        ratio = b["pairs_before_filter"] / a["pairs_before_filter"]
        for stage in sorted(set(a["stages"]) & set(b["stages"])):
            exps = {}
            for key, name in (("cpu_time", "exponent_cpu"), ("s", "exponent_wall")):
                ta, tb = a["stages"][stage][key], b["stages"][stage][key]
                exps[name] = (
                    round(math.log(tb / ta) / math.log(ratio), 2) if ta > 0.5 and tb > 0 else None
                )
            out.append({"stage": stage, "from": a["n_articles"], "to": b["n_articles"], **exps})
    return out


def render(rows: list[dict], exps: list[dict]) -> str:
    lines = [
        "| articles | pairs (before filter) | stage | jobs | wall s | CPU s | peak RSS MB | pairs/s/core |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for stage, st in sorted(r["stages"].items()):
            rate = r["pairs_before_filter"] / st["cpu_time"] if st["cpu_time"] > 0 else float("nan")
            lines.append(
                f"| {r['n_articles']} | {r['pairs_before_filter']} | {stage} | {st['jobs']} | {st['s']:.1f} "
                f"| {st['cpu_time']:.1f} | {st['max_rss_mb']:.0f} | {rate:,.0f} |"
            )
    lines += [
        "",
        "| stage | sizes | growth exponent (CPU) | growth exponent (wall) |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {e['stage']} | {e['from']} → {e['to']} | {e['exponent_cpu'] if e['exponent_cpu'] is not None else '–'} "
        f"| {e['exponent_wall'] if e['exponent_wall'] is not None else '–'} |"
        for e in exps
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--articles", type=int, nargs="+", default=[72, 576, 6480])
    ap.add_argument(
        "--root", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "proofmatch-scale"
    )
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    for n in sorted(args.articles):
        shards = max(4, n // 250)  # about 250 articles per extraction job
        rows.append(run_size(n, args.root, args.cores, shards))
        print(
            f"{n} articles: {rows[-1]['pairs_before_filter']} pairs, workflow {rows[-1]['workflow_wall_s']} s",
            flush=True,
        )
    exps = growth(rows)
    print(render(rows, exps))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "growth": exps}, indent=2))


if __name__ == "__main__":
    main()
