"""The workflow as users run it: lint/format checks, and the whole DAG on the demo corpus.

The end-to-end test copies the workflow into a temporary folder (so results/ of the checkout is
never touched), runs `snakemake -c2 all` on the demo corpus with the demo config, checks that every
table and the figure hold real numbers, and that a second `snakemake -n` has nothing to do.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def copy_workflow(dest: Path) -> Path:
    for name in ("Snakefile", "workflow", "config", "envs"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        else:
            shutil.copy2(src, dest / name)
    return dest


def test_lint_and_format_clean():
    lint = subprocess.run(SNAKEMAKE + ["--lint"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_bad_config_fails_before_any_job(tmp_path):
    wd = copy_workflow(tmp_path)
    bad = wd / "bad.yaml"
    bad.write_text("filter:\n  min_tokens: -3\n")
    run = subprocess.run(
        SNAKEMAKE + ["all", "-n", "--configfile", "config/config.yaml", "bad.yaml"],
        cwd=wd, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode != 0
    assert "config key filter.min_tokens" in run.stdout + run.stderr
    assert not (wd / "results").exists()


def planned_wildcards(stdout: str, rule: str) -> list[dict[str, str]]:
    """The wildcards of every job of ``rule`` in a ``snakemake -n`` plan."""
    jobs = re.findall(rf"^rule {rule}:\n(?:    .*\n)*?    wildcards: (.*)$", stdout, flags=re.M)
    return [dict(kv.split("=", 1) for kv in job.split(", ")) for job in jobs]


def test_table6_plans_the_papers_experiment(tmp_path):
    """Paper §9.4 / Table 6: five pr ScratchBERT-Local-Local trainings (one per training level), each
    evaluated on the two test levels that keep the protected symbols: ten evaluations."""
    wd = copy_workflow(tmp_path)
    dry = subprocess.run(SNAKEMAKE + ["-n", "results/tables/table6.md"], cwd=wd, capture_output=True,
                         text=True, timeout=300)
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    trained = planned_wildcards(dry.stdout, "train_matcher")
    levels = ["conservation", "partial", "partial_p", "full", "full_p"]
    assert sorted(w["level"] for w in trained) == sorted(levels)
    assert {(w["split"], w["encoder"], w["mode"], w["view"]) for w in trained} == {
        ("pr", "scratchbert", "local", "both")}
    evals = planned_wildcards(dry.stdout, "evaluate_run")
    assert len(evals) == 10
    assert {(w["level"], w["test_level"]) for w in evals} == {
        (tr, te) for tr in levels for te in ("conservation", "partial_p")}
    assert {(w["split"], w["part"]) for w in evals} == {("pr", "test")}


@pytest.mark.slow
def test_demo_workflow_end_to_end(tmp_path):
    wd = copy_workflow(tmp_path)
    config = ["--configfile", "config/config.yaml", "config/smoke.yaml"]
    run = subprocess.run(
        SNAKEMAKE + ["all", "-c2"] + config, cwd=wd, capture_output=True, text=True, timeout=2400
    )
    tail = (run.stdout + run.stderr)[-6000:]
    assert run.returncode == 0, tail
    results = wd / "results"
    for n in range(1, 8):
        md = (results / f"tables/table{n}.md").read_text()
        assert re.search(r"\d+\.\d", md) or n == 1, f"table{n} has no numbers:\n{md}"
        assert "TODO" not in md
        pd.read_csv(results / f"tables/table{n}.csv")
    for ext in ("png", "pdf"):
        assert (results / f"figures/figure2.{ext}").stat().st_size > 1000
    table3 = (results / "tables/table3.md").read_text()
    assert "not run" in table3  # MathBERT is not configured in the demo config: its rows say why
    # Nothing left to do after a full run.
    again = subprocess.run(SNAKEMAKE + ["all", "-n"] + config, cwd=wd, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]
    # Changing one stage's parameter reruns that stage and what depends on it, nothing upstream.
    (wd / "alpha.yaml").write_text("replace:\n  partial_alpha: 0.4\n")
    dry = subprocess.run(
        SNAKEMAKE + ["all", "-n"] + config + ["alpha.yaml"],
        cwd=wd, capture_output=True, text=True, timeout=300,
    )
    planned = set(re.findall(r"^rule (\w+):", dry.stdout, flags=re.M))
    assert "replace_symbols" in planned
    assert not planned & {"demo_corpus", "manifest", "extract", "linearize", "filter_pairs", "make_splits"}
