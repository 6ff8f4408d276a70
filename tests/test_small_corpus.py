"""A small corpus without metadata in the workflow (docs/data.md, "Splits"): ten articles and no
metadata table, so no article has a primary category. The pr split cannot be made: make_splits
stops, once and without a traceback, naming ``splits.pr_category: null``; with it the corpus
makes its Mixed and Unmixed splits, Table 6 says why it was not run, and ``all`` plans every run
of the two families. ``splits.families: [mixed]`` then leaves the Unmixed family out of ``all``.
Kept cheap: the corpus stages, the splits and two tables run; ``all`` is planned (the smoke run of
tests/test_workflow.py runs it whole on the demo corpus)."""

from __future__ import annotations

import shutil
import subprocess

import pandas as pd
import pytest
from test_workflow import SMOKE, SNAKEMAKE, copy_workflow, planned_io, workflow

from proofmatch import experiments as X
from proofmatch.demo import generate as demo


@pytest.mark.slow
def test_ten_unlabelled_articles_make_the_splits_they_support(tmp_path):
    demo.generate(tmp_path / "demo", n_articles=12)
    papers = tmp_path / "papers"
    papers.mkdir()
    for path in sorted((tmp_path / "demo/xhtml").glob("demo-00*"))[:10]:
        shutil.copy(path, papers / path.name)
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    (wd / "small.yaml").write_text(
        f"corpus:\n  source: dir\n  dir: {papers}\n  metadata: null\n  n_shards: 1\n"
    )
    failed = subprocess.run(
        SNAKEMAKE + ["-c2", "results/splits/mixed.parquet"] + SMOKE + ["small.yaml"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert out.count("Set splits.pr_category: null") == 1 and "Traceback" not in out, out[-3000:]
    assert "found 0" in out

    (wd / "nopr.yaml").write_text("splits:\n  pr_category: null\n")
    targets = ["results/splits/unmixed.parquet", "results/tables/table6.md"]
    workflow(wd, ["-c2", *targets], ("small.yaml", "nopr.yaml"), timeout=900)
    unmixed = pd.read_parquet(wd / "results/splits/unmixed.parquet")
    assert unmixed["article_id"].nunique() >= 9 and set(unmixed["part"]) == {"train", "dev", "test"}
    assert not (wd / "results/splits/pr.parquet").exists()
    table6 = (wd / "results/tables/table6.md").read_text()
    assert table6.count(X.NOT_RUN_PR) == 5  # each of its rows says why
    plan = planned_io(workflow(wd, ["all", "-n"], ("small.yaml", "nopr.yaml")).stdout)
    trained = {o[0].split("/")[2] for rule, _, o in plan if rule == "train_matcher"}
    assert trained == {"mixed", "unmixed"}

    (wd / "mixed.yaml").write_text("splits:\n  families: [mixed]\n")
    plan = planned_io(workflow(wd, ["all", "-n"], ("small.yaml", "nopr.yaml", "mixed.yaml")).stdout)
    trained = {o[0].split("/")[2] for rule, _, o in plan if rule == "train_matcher"}
    assert trained == {"mixed"}
    assert not [f for _, i, o in plan for f in i + o if "unmixed" in f]
