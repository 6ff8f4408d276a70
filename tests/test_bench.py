"""The CPU benchmarks still run against the package's current interfaces (one tiny step each; the
numbers themselves are not checked: performance is measured in bench/, not in tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_train_runs_one_step_per_measurement(tmp_path):
    out = tmp_path / "rows.json"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "bench/bench_train.py"),
            "--sizes",
            "demo",
            "--devices",
            "cpu",
            "--steps",
            "1",
            "--warmup",
            "0",
            "--json",
            str(out),
        ],
        check=True,
        timeout=300,
    )
    rows = json.loads(out.read_text())
    assert {r["bench"] for r in rows} == {
        "NPT local step",
        "NPT global step",
        "NPT local epoch",
        "BERT MLM step",
    }
    assert all(r["per_s"] > 0 for r in rows), rows


def test_bench_match_writes_a_folder_reads_it_and_reports_the_read_ahead(tmp_path):
    """bench_match at 300 pairs: the folder in the released layout (24 files), every pair read
    back, and the read-ahead the reading process used, its default or the one asked for."""
    cmd = [sys.executable, str(REPO / "bench/bench_match.py"), "--pairs", "300"]
    cmd += ["--out", str(tmp_path / "bench"), "--repeat", "3"]
    rows = []
    for extra in ([], ["--reuse", "--read-ahead", "1"]):
        out = tmp_path / f"row{len(rows)}.json"
        subprocess.run(cmd + extra + ["--json", str(out)], check=True, timeout=300)
        rows.append(json.loads(out.read_text()))
    from proofmatch.data.match import READ_AHEAD

    assert [r["read_ahead"] for r in rows] == [READ_AHEAD, 1]
    assert all(r["pairs_read"] == 300 and r["files"] == 24 and r["lines"] > 0 for r in rows)
    assert rows[0]["mib"] == rows[1]["mib"] and rows[1]["write_s"] != rows[1]["write_s"]  # reused


def test_bench_paper_train_counts_steps_and_judges_against_chance(tmp_path):
    """bench_paper_train on a toy corpus: the demo NPT leaves chance within 60 steps (exit 0 and
    the step it first reached the goal), and an unreachable goal exits 1 with the curve kept."""
    sys.path.insert(0, str(REPO / "tests"))
    from toydata import toy_pairs

    from proofmatch.artifacts import write_parquet

    data = tmp_path / "toy.parquet"
    write_parquet(toy_pairs(n_articles=30, pairs_per_article=6, seed=1), data)
    cmd = [
        sys.executable,
        str(REPO / "bench/bench_paper_train.py"),
        str(data),
        "--config",
        str(REPO / "config/config.yaml"),
        "--steps",
        "60",
        "--eval-every",
        "20",
        "--threads",
        "1",
    ]
    ok = subprocess.run(
        cmd + ["--json", str(tmp_path / "ok.json")], timeout=300, capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    summary = json.loads((tmp_path / "ok.json").read_text())
    assert [r["step"] for r in summary["curve"]] == [20, 40, 60]
    assert summary["reached"] and summary["first_step_at_goal"] in (20, 40, 60)
    assert summary["best_dev_mrr"] >= 3 * summary["chance_mrr"]
    n, b = summary["n_train"], summary["settings"]["batch_size"]
    assert summary["steps_per_epoch"] in (-(-n // b), n // b)  # a last batch of one pair is dropped
    far = subprocess.run(
        cmd + ["--times", "1000", "--set", "w_init=zeros", "--json", str(tmp_path / "far.json")],
        timeout=300,
        capture_output=True,
        text=True,
    )
    assert far.returncode == 1 and "goal not reached" in far.stderr
    far_summary = json.loads((tmp_path / "far.json").read_text())
    assert not far_summary["reached"] and far_summary["settings"]["w_init"] == "zeros"


def test_bench_search_times_fusion_in_process_over_http_and_explanations(fusion_index, tmp_path):
    """bench_search on the small demo's fusion index: synthetic proofs with real BM25 rows, the
    in-process row, 1 and 2 HTTP clients against the served app, the explanation rows, and the
    MRR of the test statements by their stored vectors and by the int8 query encoder."""
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench/bench_search.py"),
            "--index",
            str(fusion_index.path),
            "--sizes",
            "300",
            "--queries",
            "4",
            "--repeats",
            "1",
            "--clients",
            "1",
            "2",
            "--explain",
            "2",
            "--lime-samples",
            "50",
            "--mrr",
            "test",
            "--quantize",
            "int8",
            "--out",
            str(out),
        ],
        timeout=600,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())
    explain = {r["bench"]: r for r in rows if "bench" in r}
    assert (
        explain["explain top result"]["queries"] == 2
        and explain["explain top result"]["method"] == "occlusion"
    )
    assert explain["explain longest pair"]["tokens"] > 0
    assert {r["samples"] for k, r in explain.items() if k.startswith("LIME")} == {50}
    (mrr,) = [r for k, r in explain.items() if k.startswith("MRR")]
    assert mrr["query_encoder"] == "int8" and mrr["n"] > 0
    assert 0 < mrr["mrr_typed_query"] <= 1 and 0 < mrr["mrr_id_query"] <= 1
    search = [r for r in rows if "bench" not in r]
    assert [(r["via"], r["clients"], r["queries"]) for r in search] == [
        ("in-process", 1, 4),
        ("http /api/search", 1, 4),
        ("http /api/search", 2, 8),
    ]
    assert all(
        r["scorer"] == "fusion" and r["n"] == 300 and r["p95_ms"] >= r["p50_ms"] > 0 for r in search
    )
    assert {r["query_encoder"] for r in search} == {"int8"} and "clients: 8/8" in done.stderr


DEMO_LOG = """\
[Tue Dec  1 10:00:00 2026]
localrule a:
    output: results/x.parquet
    log: results/logs/a.log
    jobid: 3
    benchmark: results/benchmarks/a.tsv
    reason: Missing output files: results/x.parquet
    resources: tmpdir=/tmp
[Tue Dec  1 10:00:10 2026]
Finished jobid: 3 (Rule: a)
[Tue Dec  1 10:00:10 2026]
localrule b:
    input: results/x.parquet
    output: results/folder
    jobid: 2
    benchmark: results/benchmarks/b/one.tsv
    wildcards: name=one
    threads: 2
[Tue Dec  1 10:00:10 2026]
localrule c:
    input: results/x.parquet
    output: results/c.md
    jobid: 4
[Tue Dec  1 10:00:14 2026]
Finished jobid: 4 (Rule: c)
[Tue Dec  1 10:00:30 2026]
Finished jobid: 2 (Rule: b)
[Tue Dec  1 10:00:31 2026]
localrule all:
    input: results/folder/file.json, results/c.md
    jobid: 0
[Tue Dec  1 10:00:31 2026]
Finished jobid: 0 (Rule: all)
"""


def test_bench_demo_reads_the_log_and_benchmark_files_and_simulates_a_quiet_machine(tmp_path):
    """bench_demo: jobs, threads, dependencies (a file inside a declared folder included), wall and
    CPU from the benchmark files (the log's span without one), idle core-seconds, and the makespan
    of the same jobs on idle cores."""
    sys.path.insert(0, str(REPO / "bench"))
    import bench_demo as B

    bench = tmp_path / "results" / "benchmarks"
    (bench / "b").mkdir(parents=True)
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    (bench / "a.tsv").write_text(header + "9.5\t0:00:09\t1\t1\t1\t1\t0\t0\t0\t9.0\n")
    (bench / "b" / "one.tsv").write_text(header + "20.0\t0:00:20\t1\t1\t1\t1\t0\t0\t0\t30.0\n")
    jobs = B.parse_log(DEMO_LOG)
    assert [(j.rule, j.jobid, j.threads) for j in jobs] == [
        ("a", 3, 1),
        ("b", 2, 2),
        ("c", 4, 1),
        ("all", 0, 1),
    ]
    assert jobs[1].wildcards == "name=one" and jobs[1].outputs == ("results/folder",)
    assert B.dependencies(jobs) == {3: set(), 2: {3}, 4: {3}, 0: {2, 4}}
    B.attach_benchmarks(jobs, tmp_path)
    assert [(j.wall_s, j.cpu_s) for j in jobs] == [
        (9.5, 9.0),
        (20.0, 30.0),
        (4.0, None),
        (0.0, None),
    ]
    span, idle = B.idle_core_seconds(jobs, cores=2)
    assert span == 31 and idle == 2 * 31 - (10 + 2 * 20 + 4)
    rows = {r["rule"]: r for r in B.by_rule(jobs)}
    assert rows["b"]["cpu_s"] == 30.0 and rows["c"]["cpu_s"] is None and rows["b"]["threads"] == 2
    # on idle cores: a (10 s), then b (two threads, 20 s) and c (4 s) cannot share two cores
    makespan, idle = B.simulate(
        jobs, 2, lambda j: {"a": 10.0, "b": 20.0, "c": 4.0}.get(j.rule, 0.0)
    )
    assert makespan == 34.0 and idle == 2 * 34 - (10 + 40 + 4)
    report = B.report(jobs, 2, every_job=True)
    assert "| b | 1 | 2 | 20 | 30 |" in report and "wall clock 31 s" in report


def test_bench_demo_merges_a_run_done_in_parts_and_estimates_quiet_cores():
    """A run stopped and started again: a job finished in both parts counts once (its last), a job
    left unfinished not at all, each part's wall clock is counted without the gap between parts,
    and a quiet core's job takes its CPU seconds over its threads."""
    sys.path.insert(0, str(REPO / "bench"))
    import bench_demo as B

    first = DEMO_LOG.split("[Tue Dec  1 10:00:30 2026]")[0]  # b never finished, c did
    second = DEMO_LOG.replace("Tue Dec  1 10:", "Tue Dec  1 12:")
    jobs = B.merge_runs([B.parse_log(first), B.parse_log(second)])
    assert sorted((j.rule, j.part) for j in jobs) == [("a", 1), ("all", 1), ("b", 1), ("c", 1)]
    assert len({j.jobid for j in jobs}) == 4
    span, _ = B.idle_core_seconds(jobs, cores=2)
    assert span == 31
    jobs[0].cpu_s, jobs[0].threads = 30.0, 2
    assert B.quiet_seconds(jobs[0], cores=2) == 15.0 and B.quiet_seconds(jobs[0], cores=1) == 30.0
    jobs[1].cpu_s, jobs[1].wall_s = None, 7.0
    assert B.quiet_seconds(jobs[1], cores=2) == 7.0


def test_bench_intervals_children_run_with_a_jobs_thread_variables(monkeypatch, tmp_path):
    """Each render runs in a child with the thread variables Snakemake sets for a job of the table
    rule's threads: an unlimited OpenBLAS spins threads after the bootstrap's product, and their
    CPU seconds are not a table job's (docs/benchmarks.md)."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import bench_intervals
    finally:
        sys.path.remove(str(REPO / "bench"))
    seen = []

    def run(args, **kwargs):
        seen.append(kwargs["env"])
        return subprocess.CompletedProcess(args, 0, stdout="0.125\n", stderr="")

    monkeypatch.setattr(bench_intervals.subprocess, "run", run)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    for threads in (1, 3):
        seconds, _ = bench_intervals.child(
            ["c.yaml"], "table3", "with", tmp_path, tmp_path, threads
        )
        assert seconds == 0.125
        assert {v: seen[-1][v] for v in bench_intervals.THREAD_VARIABLES} == dict.fromkeys(
            bench_intervals.THREAD_VARIABLES, str(threads)
        )


def test_bench_search_cli_times_a_refusal_a_query_and_a_batch(search_demo, tmp_path):
    out = tmp_path / "rows.json"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "bench/bench_search_cli.py"),
            "--index",
            str(search_demo["index"]),
            "--repeat",
            "1",
            "--batch",
            "3",
            "--json",
            str(out),
        ],
        check=True,
        timeout=600,
    )
    rows = json.loads(out.read_text())["rows"]
    assert [r["status"] for r in rows] == [[2], [0], [0]]
    assert rows[2]["queries"] >= 2 and rows[2]["warm_queries_per_s"] > 0
