"""The workflow on the released MATcH dataset (corpus.source: match): config/match.yaml's plan on a
small released-layout fixture, and its model settings held equal to config/paper.yaml's. The run
from an export of the demo corpus is in tests/test_workflow.py (it reuses the smoke run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from test_match import release
from test_pretrained_checkpoint import released_layout
from test_workflow import copy_workflow

from proofmatch.config import load_config

REPO = Path(__file__).resolve().parents[1]
# stages the release has done: never planned for a corpus of source match
SKIPPED_RULES = {
    "demo_corpus",
    "manifest",
    "extract",
    "linearize",
    "filter_pairs",
    "make_splits",
    "symbol_slots",
    "replace_symbols",
    "replaced_split",
    "article_text",
}


def test_match_yaml_has_the_papers_model_settings():
    """config/match.yaml copies paper.yaml's model settings: the two cannot drift apart."""
    match = load_config(REPO / "config/config.yaml", REPO / "config/match.yaml")
    paper = load_config(REPO / "config/config.yaml", REPO / "config/paper.yaml")
    assert match["corpus"]["source"] == "match"
    for key in set(match) - {"corpus", "filter", "splits", "replace"}:
        assert match[key] == paper[key], key
    assert match["splits"]["pr_category"] == paper["splits"]["pr_category"]


def planned(out: str) -> dict[str, int]:
    table = re.search(r"Job stats:\n(.*?)\n\n", out, re.S)
    assert table, out[-3000:]
    return {
        m[1]: int(m[2])
        for m in re.finditer(r"^(\w+)\s+(\d+)$", table.group(1), re.M)
        if m[1] != "total"
    }


def dry(wd: Path, *configs: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "all",
            "--configfile",
            "config/config.yaml",
            *configs,
        ],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return done.stdout + done.stderr


def test_match_yaml_plans_from_the_release(tmp_path):
    """Its plan on a released folder: one match_corpus job and no stage before the replaced
    splits; the paper's trainings read the release's splits; ScratchBERT is pretrained per family,
    or, with pretrain.checkpoint, taken from the released checkpoint (no tokenizer or MLM job)."""
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    release(wd / "resources/match")
    out = dry(wd, "config/match.yaml")
    jobs = planned(out)
    assert jobs["match_corpus"] == 1 and not SKIPPED_RULES & set(jobs), jobs
    assert jobs["pretrain_scratchbert"] == 2 and jobs["train_tokenizer"] == 2
    assert jobs["train_matcher"] >= 30 and jobs["table1"] == jobs["table2"] == 1
    assert "results/replaced/pr/full_p.parquet" in out
    released_layout(wd / "model_files")
    (wd / "ckpt.yaml").write_text("pretrain:\n  checkpoint: model_files\n")
    jobs = planned(dry(wd, "config/match.yaml", "ckpt.yaml"))
    assert "pretrain_scratchbert" not in jobs and "train_tokenizer" not in jobs, jobs
    assert jobs["match_corpus"] == 1


def test_the_read_prints_the_counts_and_check_says_what_differs(tmp_path):
    folder = release(tmp_path / "rel")
    report = tmp_path / "out/report.json"
    read = subprocess.run(
        [
            sys.executable,
            "-m",
            "proofmatch.cli",
            "match",
            "read",
            str(folder),
            "--out",
            str(tmp_path / "out"),
        ]
        + ["--report", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert read.returncode == 0, read.stderr
    assert "9 pairs from 3 articles (with metadata)" in read.stdout
    assert "Mixed: 3 / 3 / 3 (train / dev / test)" in read.stdout
    assert "differs from the paper: pairs: 9 read, the paper has 184,094" in read.stdout
    check = subprocess.run(
        [sys.executable, "-m", "proofmatch.cli", "match", "check", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 1 and "mixed train: 3 read, the paper has 147,278" in check.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "proofmatch.cli", "match", "read", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "nothing: not a folder" in bad.stderr


def test_paper_comparison_says_when_the_pools_are_the_papers():
    from proofmatch.evaluation.comparison import caption
    from proofmatch.registry.sources import SOURCES

    label = SOURCES["match"].label.format(dirs="resources/match")
    own = caption(label, 27_841, 184_094, {"mixed": 18_408}, ["mixed"])
    assert "The pools are the paper's own (184,094 pairs, Mixed test 18,408)" in own
    assert "the MATcH dataset in resources/match" in own
    other = caption(label, 66, 1_327, {"mixed": 133}, ["mixed"])
    assert "paper's own" not in other
