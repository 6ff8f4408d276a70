"""Where a finished workflow run's time went, job by job: the breakdown of docs/benchmarks.md
("Demo wall clock").

Reads a run's Snakemake log (``.snakemake/log/*.snakemake.log``: each job's rule, threads,
benchmark file, start and finish, to the second) and the rules' ``benchmark:`` files
(``results/benchmarks/**.tsv``: wall seconds ``s`` and ``cpu_time``, the CPU seconds of the
job's process tree as psutil sampled it), and prints, per rule, the jobs, their summed wall and
CPU seconds and the median job; then the run's wall clock, and its idle core-seconds: the cores
times the wall clock, less each running job's threads (at most the cores) times its wall time. A
rule without a benchmark file (the tables) counts its wall time from the log and no CPU time.

    python bench/bench_demo.py RUN_DIR                        # the newest log of that run
    python bench/bench_demo.py RUN_DIR --log LOG --cores 2 --jobs   # and every job
    python bench/bench_demo.py RUN_DIR --all-logs --quiet     # a run done in parts, and its
                                                              # makespan on quiet cores

The figures are those of the machine at the time: on a shared machine a job's wall time carries
the others' load, its CPU time much less, and a two-thread job's CPU time also carries the time
its threads spin while they wait for each other.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")
FIELD = re.compile(r"^    (\w+): (.*)$")


@dataclass
class Job:
    """One job of the run, as the log and its benchmark file tell it."""

    jobid: int
    rule: str
    threads: int
    start: datetime
    benchmark: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    wildcards: str = ""
    finish: datetime | None = None
    wall_s: float | None = None  # the benchmark file's, else the log's (to the second)
    cpu_s: float | None = None  # the benchmark file's cpu_time; None without one
    part: int = 0  # which log of a run done in parts

    @property
    def span_s(self) -> float:
        """Wall seconds between the log's start and finish lines."""
        return (self.finish - self.start).total_seconds() if self.finish else 0.0


def parse_log(text: str) -> list[Job]:
    """The jobs of a Snakemake log, in start order (a job that never finished has no finish).

    A job is a ``rule NAME:`` (or ``localrule``) line after a ``[date]`` line, then indented
    ``key: value`` lines (``jobid``, ``threads`` when above one, ``benchmark``, ``input``,
    ``output``, ``wildcards``); its finish is the ``Finished jobid: N`` line after a later
    ``[date]`` line."""
    jobs: dict[int, Job] = {}
    stamp: datetime | None = None
    block: dict | None = None

    def close() -> None:
        if block is not None and "jobid" in block:
            files = {
                k: tuple(block[k].split(", ")) if block.get(k) else () for k in ("input", "output")
            }
            jobs[int(block["jobid"])] = Job(
                int(block["jobid"]),
                block["rule"],
                int(block.get("threads", 1)),
                block["start"],
                block.get("benchmark"),
                files["input"],
                files["output"],
                block.get("wildcards", ""),
            )

    for line in text.splitlines():
        if block is not None and (m := FIELD.match(line)):
            block[m.group(1)] = m.group(2)
            continue
        close()
        block = None
        if m := STAMP.match(line):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif (m := RULE.match(line)) and stamp is not None:
            block = {"rule": m.group(1), "start": stamp}
        elif (m := FINISHED.match(line)) and stamp is not None and int(m.group(1)) in jobs:
            jobs[int(m.group(1))].finish = stamp
    close()
    return sorted(jobs.values(), key=lambda j: (j.start, j.jobid))


def merge_runs(logs: list[list[Job]]) -> list[Job]:
    """The finished jobs of a run done in parts (a run stopped and started again, one log each):
    a job finished in several parts counts once, its last; jobids are made unique across parts."""
    last: dict[tuple, Job] = {}
    for n, jobs in enumerate(logs):
        for job in jobs:
            if job.finish is not None:
                job.jobid += n * 1_000_000
                job.part = n
                last[(job.rule, job.wildcards, job.outputs)] = job
    return sorted(last.values(), key=lambda j: (j.start, j.jobid))


def quiet_seconds(job: Job, cores: int) -> float:
    """A job's wall seconds on quiet cores, estimated from its CPU seconds over the threads it
    holds (its wall seconds where it has no CPU figure): on a loaded machine its wall time carries
    the others' work, its CPU time much less."""
    if job.cpu_s is None:
        return job.wall_s or 0.0
    return job.cpu_s / min(job.threads, cores)


def read_benchmark(path: Path) -> tuple[float, float] | None:
    """(wall s, CPU s) of a benchmark file's last row, or None when it is missing."""
    if not path.is_file():
        return None
    with path.open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        return None
    return float(rows[-1]["s"]), float(rows[-1]["cpu_time"])


def attach_benchmarks(jobs: list[Job], root: Path) -> None:
    """Each job's wall and CPU seconds from its benchmark file, else its wall time from the log."""
    for job in jobs:
        measured = read_benchmark(root / job.benchmark) if job.benchmark else None
        job.wall_s, job.cpu_s = measured if measured else (job.span_s if job.finish else None, None)


def attach_rusage(jobs: list[Job], folder: Path) -> int:
    """Each script job's CPU seconds as the kernel counted them (``getrusage`` of the job's process
    and its children, written at its exit by ``bench/rusage_hook``: exact, where the benchmark
    files sample), matched by rule and wildcards; returns how many jobs got one."""
    import json

    records: dict[tuple[str, str], list[float]] = {}
    for f in sorted(folder.glob("*.json")):
        r = json.loads(f.read_text())
        key = (r["rule"], ", ".join(f"{k}={v}" for k, v in r["wildcards"].items()))
        records.setdefault(key, []).append(float(r["cpu_s"]))
    matched = 0
    for job in jobs:
        if found := records.get((job.rule, job.wildcards)):
            job.cpu_s = found.pop(0)
            matched += 1
    return matched


def idle_core_seconds(jobs: list[Job], cores: int) -> tuple[float, float]:
    """(the run's wall clock, its idle core-seconds): cores x wall clock less each finished job's
    threads (at most ``cores``) x its logged span. A run done in parts counts each part's wall
    clock, not the time between parts."""
    done = [j for j in jobs if j.finish]
    if not done:
        return 0.0, 0.0
    span = sum(
        (max(j.finish for j in part) - min(j.start for j in part)).total_seconds()
        for n in {j.part for j in done}
        if (part := [j for j in done if j.part == n])
    )
    busy = sum(min(j.threads, cores) * j.span_s for j in done)
    return span, max(0.0, cores * span - busy)


def by_rule(jobs: list[Job]) -> list[dict]:
    """Per rule: jobs, summed and median wall and CPU seconds; the rules by summed wall time."""
    rules: dict[str, list[Job]] = {}
    for job in jobs:
        if job.wall_s is not None:
            rules.setdefault(job.rule, []).append(job)
    out = []
    for rule, group in rules.items():
        walls = [j.wall_s for j in group]
        cpus = [j.cpu_s for j in group if j.cpu_s is not None]
        out.append(
            {
                "rule": rule,
                "jobs": len(group),
                "wall_s": sum(walls),
                "cpu_s": sum(cpus) if cpus else None,
                "median_wall_s": statistics.median(walls),
                "median_cpu_s": statistics.median(cpus) if cpus else None,
                "threads": max(j.threads for j in group),
            }
        )
    return sorted(out, key=lambda r: -r["wall_s"])


def dependencies(jobs: list[Job]) -> dict[int, set[int]]:
    """jobid -> the jobids whose outputs it reads (a file, or a file inside a declared folder)."""
    producer = {out: j.jobid for j in jobs for out in j.outputs}
    deps: dict[int, set[int]] = {}
    for job in jobs:
        found = set()
        for f in job.inputs:
            parts = Path(f).parts
            for n in range(len(parts), 0, -1):  # the file itself, else the folder it lies in
                if (owner := producer.get(str(Path(*parts[:n])))) is not None:
                    found.add(owner)
                    break
        deps[job.jobid] = found - {job.jobid}
    return deps


def simulate(
    jobs: list[Job],
    cores: int,
    seconds: Callable[[Job], float],
    priority: Callable[[Job], float] = lambda job: 0.0,
) -> tuple[float, float]:
    """(makespan, idle core-seconds) of the run's jobs on ``cores`` idle cores, each job taking
    ``seconds(job)``: whenever cores are free, the ready jobs are started by ``priority`` (then
    the most threads, as Snakemake's scheduler fills the cores), each job claiming at most
    ``cores`` threads. What a quiet machine would take, given true single-job times."""
    deps = dependencies(jobs)
    by_id = {j.jobid: j for j in jobs}
    done: set[int] = set()
    running: list[tuple[float, int]] = []  # (end, jobid)
    waiting = set(by_id)
    t, free, busy = 0.0, cores, 0.0
    while waiting or running:
        ready = sorted(
            (by_id[i] for i in waiting if deps[i] <= done),
            key=lambda j: (-priority(j), -min(j.threads, cores), j.start, j.jobid),
        )
        for job in ready:
            need = min(job.threads, cores)
            if need <= free:
                free -= need
                waiting.discard(job.jobid)
                running.append((t + seconds(job), job.jobid))
                busy += need * seconds(job)
        if not running:
            raise ValueError(f"jobs {sorted(waiting)[:5]} wait for jobs that never run")
        running.sort()
        t, finished = running.pop(0)
        done.add(finished)
        free += min(by_id[finished].threads, cores)
    return t, cores * t - busy


def fmt(x: float | None, digits: int = 0) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def report(jobs: list[Job], cores: int, every_job: bool = False) -> str:
    """The Markdown tables: per rule, the totals, and with ``every_job`` one row per job."""
    rows = by_rule(jobs)
    lines = [
        "| rule | jobs | threads | wall s | CPU s | median job wall s | median job CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['rule']} | {r['jobs']} | {r['threads']} | {fmt(r['wall_s'])} | {fmt(r['cpu_s'])} | "
            f"{fmt(r['median_wall_s'], 1)} | {fmt(r['median_cpu_s'], 1)} |"
        )
    wall = sum(r["wall_s"] for r in rows)
    cpu = sum(r["cpu_s"] or 0.0 for r in rows)
    lines.append(f"| all | {sum(r['jobs'] for r in rows)} | | {fmt(wall)} | {fmt(cpu)} | | |")
    span, idle = idle_core_seconds(jobs, cores)
    lines += [
        "",
        f"wall clock {span:,.0f} s ({span / 60:.1f} min) on {cores} cores; idle core-seconds "
        f"{idle:,.0f} ({idle / max(cores * span, 1e-9):.0%} of {cores} x the wall clock)",
    ]
    if every_job:
        lines += [
            "",
            "| start | rule | threads | wall s | CPU s | benchmark |",
            "|---|---|---|---|---|---|",
        ]
        t0 = min(j.start for j in jobs)
        for j in jobs:
            lines.append(
                f"| {(j.start - t0).total_seconds():.0f} | {j.rule} | {j.threads} | {fmt(j.wall_s, 1)} | "
                f"{fmt(j.cpu_s, 1)} | {j.benchmark or ''} |"
            )
    return "\n".join(lines)


def newest_log(root: Path) -> Path:
    logs = sorted((root / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        raise FileNotFoundError(f"no Snakemake log under {root}/.snakemake/log")
    return logs[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "root", type=Path, help="the run's working directory (results/ and .snakemake/ in it)"
    )
    parser.add_argument(
        "--log", type=Path, help="the Snakemake log (default: the newest of the run)"
    )
    parser.add_argument("--cores", type=int, default=2, help="the run's -c")
    parser.add_argument("--jobs", action="store_true", help="also one row per job")
    parser.add_argument(
        "--all-logs", action="store_true", help="every log of the run, as one run done in parts"
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="also the makespan of the same jobs on quiet cores, from each job's CPU seconds",
    )
    parser.add_argument(
        "--rusage", type=Path, help="the run's bench/rusage_hook records (exact CPU seconds)"
    )
    args = parser.parse_args(argv)
    if args.all_logs:
        logs = sorted((args.root / ".snakemake" / "log").glob("*.snakemake.log"))
        jobs = merge_runs([parse_log(f.read_text()) for f in logs])
    else:
        jobs = parse_log((args.log or newest_log(args.root)).read_text())
    attach_benchmarks(jobs, args.root)
    if args.rusage:
        attach_rusage(jobs, args.rusage)
    print(report(jobs, args.cores, args.jobs))
    if args.quiet:
        span, idle = simulate(jobs, args.cores, lambda j: quiet_seconds(j, args.cores))
        print(
            f"\non {args.cores} quiet cores (each job's CPU seconds over its threads): makespan "
            f"{span:,.0f} s ({span / 3600:.2f} h), idle core-seconds {idle:,.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
