"""Intervals, findings, seeds and scaling (proofmatch.evaluation.bootstrap, findings, report)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from proofmatch import experiments as X
from proofmatch import variants as V
from proofmatch.artifacts import write_json, write_parquet
from proofmatch.config import validate_config
from proofmatch.data.subsample import kept_train_rows, subsample_train
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation import findings as F
from proofmatch.evaluation import intervals as I


def test_bootstrap_of_a_hit_rate_is_the_binomial_closed_form():
    """Resampling n statements of which k are hits gives means distributed Binomial(n, k/n) / n
    exactly, so the percentile interval is the binomial's quantiles."""
    n, k = 200, 60
    hits = np.r_[np.ones(k), np.zeros(n - k)]
    iv = B.interval(hits, resamples=20000, seed=13)
    lo, hi = stats.binom.ppf([0.025, 0.975], n, k / n) / n
    assert iv.value == pytest.approx(0.3)
    assert iv.low == pytest.approx(lo, abs=1.5 / n) and iv.high == pytest.approx(hi, abs=1.5 / n)


def test_bootstrap_sd_of_a_mean_is_the_plug_in_standard_error():
    rng = np.random.default_rng(0)
    v = rng.random(500)
    means = B.draw_counts(500, 20000, 13) @ v / 500
    assert means.std() == pytest.approx(v.std() / np.sqrt(500), rel=0.03)


def test_many_intervals_are_each_vectors_own_in_order():
    """A table's cells in one batch (one product per pool size) give each cell the interval it gets
    alone, in the order given, with two pool sizes mixed."""
    rng = np.random.default_rng(2)
    vectors = [rng.random(n) for n in (133, 40, 133, 40, 133)]
    batch = B.many_intervals(vectors, resamples=1000, seed=13)
    for v, iv in zip(vectors, batch):
        alone = B.interval(v, resamples=1000, seed=13)
        assert iv.value == pytest.approx(alone.value, abs=1e-12)
        assert iv.low == pytest.approx(alone.low, abs=1e-12)
        assert iv.high == pytest.approx(alone.high, abs=1e-12)
    assert B.many_intervals([], resamples=1000, seed=13) == []


def test_a_paired_difference_cancels_what_two_systems_share():
    """Two systems that differ by one hit share every other statement: the paired interval is
    narrow and above 0, though each system's own interval is wide and they overlap."""
    rng = np.random.default_rng(1)
    a = rng.random(300)
    b = a.copy()
    b[:30] -= 0.2
    idx = pd.Index([f"p{i:03d}" for i in range(300)])
    fa, fb = pd.DataFrame({"mrr": a}, index=idx), pd.DataFrame({"mrr": b}, index=idx)
    d = B.contrast([(1.0, fa), (-1.0, fb)], "mrr", 2000, 13)
    ia, ib = B.interval(a, 2000, 13), B.interval(b, 2000, 13)
    assert d.low > 0 and ia.low < ib.high
    with pytest.raises(ValueError, match="same statements"):
        B.contrast([(1.0, fa), (-1.0, fb.iloc[1:])], "mrr", 2000, 13)


def test_the_statements_block_gives_the_vectors_and_refuses_a_json_without_it(tmp_path):
    """An evaluation JSON's per-statement block (what every interval resamples) gives each vector
    of :data:`bootstrap.METRICS`, sorted by pair id; a JSON without it is an error, not a table
    without intervals; a loaded dict without it (a test's table) has none."""
    ids = ["p2", "p0", "p1", "p3"]
    block = B.statements_block(ids, [1, 2, 1, 4], [0, 0, 2, 1], [0, 2, 1, 3])
    f = B.per_statement(block)
    assert list(f.index) == ["p0", "p1", "p2", "p3"]
    assert f["mrr"].tolist() == [0.5, 1.0, 1.0, 0.25]
    assert f["acc"].tolist() == [0.0, 1.0, 1.0, 0.0]  # p2 (position 0) and p1 (2) top-1 themselves
    assert f["global_acc"].tolist() == [0.0, 0.0, 1.0, 1.0]
    assert f["shared_top1"].tolist() == [1.0, 0.0, 1.0, 0.0]  # p2 and p0 both top-1 position 0
    with pytest.raises(ValueError, match="outside the pool"):
        B.per_statement({**block, "top1": [0, 0, 2, 4]}, "bad.json")
    ev = X.baseline("mixed", "bm25", "conservation", "test")
    metrics = {"n": 4, "mrr": 0.6875, "acc": 0.5, "global_acc": 0.5}
    write_json({**metrics, B.STATEMENTS: block}, tmp_path / "with.json")
    write_json(metrics, tmp_path / "without.json")
    assert I.load_frames({ev: tmp_path / "with.json"})[ev].equals(f)
    with pytest.raises(ValueError, match="without its 'statements' block"):
        I.load_frames({ev: tmp_path / "without.json"})
    assert I.load_frames({ev: metrics}) is None


def _frame(mrr: float, n: int = 60, seed: int = 0) -> pd.DataFrame:
    """A per-statement frame whose MRR is about ``mrr`` (reciprocal ranks 1 or 1/4)."""
    rng = np.random.default_rng(seed)
    p = (mrr - 0.25) / 0.75
    hit = (rng.random(n) < p).astype(float)
    return pd.DataFrame(
        {"mrr": 0.25 + 0.75 * hit, "acc": hit, "global_acc": hit, "shared_top1": 1 - hit},
        index=pd.Index([f"p{i:03d}" for i in range(n)], name="pair_id"),
    )


def test_a_planted_table_flips_the_verdict():
    """ScratchBERT above NPT at every level holds; plant NPT above ScratchBERT at one level and the
    finding is contradicted; make them equal and it is undecided; drop NPT and it is not run."""
    finding = next(f for f in F.findings() if f.key == "scratchbert_over_npt")
    sb = {
        X.Run("mixed", "scratchbert", "local", lv).evaluation("test"): _frame(0.8, seed=i)
        for i, lv in enumerate(X.LEVELS)
    }
    npt = {
        X.Run("mixed", "npt", "local", lv).evaluation("test"): _frame(0.3, seed=9 + i)
        for i, lv in enumerate(X.LEVELS)
    }
    assert F.judge(finding, {**sb, **npt}, 1000, 13)["Verdict"] == F.HOLDS
    flipped = dict(npt)
    flipped[X.Run("mixed", "npt", "local", "full").evaluation("test")] = _frame(0.99, seed=3)
    sb_full = X.Run("mixed", "scratchbert", "local", "full").evaluation("test")
    assert (
        F.judge(finding, {**sb, **flipped, sb_full: _frame(0.3, seed=4)}, 1000, 13)["Verdict"]
        == F.CONTRADICTED
    )
    same = {ev.__class__(**{**ev.__dict__, "model": "npt"}): frame for ev, frame in sb.items()}
    assert F.judge(finding, {**sb, **same}, 1000, 13)["Verdict"] == F.UNDECIDED
    row = F.judge(finding, sb, 1000, 13)
    assert row["Verdict"] == F.NOT_RUN and "not run" in row["Note"]


def test_a_pool_too_small_is_undecided():
    finding = next(f for f in F.findings() if f.key == "npt_math_conservation")
    a, b = finding.evaluations()
    assert (
        F.judge(finding, {a: _frame(0.9, n=5), b: _frame(0.3, n=5, seed=2)}, 1000, 13)["Verdict"]
        == F.UNDECIDED
    )


def test_the_report_tables_state_each_pool_and_its_chance_mrr():
    """The findings, seeds and scaling captions name every split and part they read with its pool
    size (the per-statement frames' length) and chance MRR, H_n / n; one pool, one size."""
    from proofmatch.evaluation import report as R

    run = X.Run("mixed", "npt", "local", "conservation")
    frames = {
        run.evaluation("test"): _frame(0.5, n=60),
        X.Run("mixed", "npt", "local", "full").evaluation("test"): _frame(0.5, n=60),
        run.evaluation("dev"): _frame(0.5, n=4),
        F.LIME: _frame(0.5, n=7),  # not an evaluation: no pool
    }
    chance60 = sum(1 / k for k in range(1, 61)) / 60
    assert R.pools_caption(frames) == (
        f" Pools (chance MRR = H_n / n, %): Mixed test n = 60, chance MRR {100 * chance60:.2f}; "
        "Mixed dev n = 4, chance MRR 52.08."
    )
    frames[run.evaluation("test")] = _frame(0.5, n=61)
    with pytest.raises(ValueError, match="different numbers of test pairs"):
        R.pools_caption(frames)


def test_at_least_thirteen_findings_each_with_a_quotation():
    found = F.findings()
    assert len(found) >= 13 and len({f.key for f in found}) == len(found)
    assert all(f.quote.strip() for f in found)


def test_each_finding_quotes_the_paper_verbatim(paper_text):
    flat = " ".join(paper_text.split())
    for f in F.findings():
        assert " ".join(f.quote.split()) in flat, f.key


def test_subsampled_shares_are_nested_and_keep_dev_and_test(tmp_path):
    df = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(100)],
            "article_id": "a",
            "part": ["train"] * 80 + ["dev"] * 10 + ["test"] * 10,
            "statement_tokens": [["x"]] * 100,
            "proof_tokens": [["y"]] * 100,
        }
    )
    write_parquet(df, tmp_path / "d.parquet")
    small = set(kept_train_rows(80, 0.25, 13))
    assert len(small) == 20 and small <= set(kept_train_rows(80, 0.5, 13))
    counts = subsample_train(tmp_path / "d.parquet", tmp_path / "h.parquet", 0.5, 13)
    assert counts == {"train": 40, "dev": 10, "test": 10}


def test_variants_name_their_folders_and_runs():
    cfg = validate_config({"report": {"seeds": [13, 14, 15], "fractions": [0.25, 0.5]}})
    seeds = V.seed_runs(cfg)
    assert [s for s, _ in seeds] == [13, 14, 15] and seeds[0][1].variant == ""
    assert str(seeds[1][1].dir()).endswith("npt-local/conservation-both-seed14")
    assert V.variant_seed("seed14", 13) == 14 and V.variant_seed("frac0.5", 13) == 13
    assert [f for f, _ in V.scaling_runs(cfg)] == [0.25, 0.5, 1.0]
    assert (
        V.train_data("mixed", "conservation", "frac0.25")
        == "results/scaling/mixed/conservation-frac0.25.parquet"
    )
    with pytest.raises(Exception, match="report.seeds"):
        validate_config({"report": {"seeds": [1, 2]}})


def test_the_stacks_config_plans_the_seeds_and_the_scaling_curve(stacks_dir, tmp_path):
    """`snakemake -n --configfile config/config.yaml config/stacks.yaml all` plans 2 more seeds of
    both headline runs, their 3 train shares, the fused variants and the report's tables (in a
    copy of the workflow beside a link to the corpus folder, so no results tree here interferes)."""
    import re
    import subprocess
    import sys

    from test_workflow import copy_workflow

    (tmp_path / "proj").mkdir()
    wd = copy_workflow(tmp_path / "proj")
    (tmp_path / "shared").symlink_to(stacks_dir.parents[1].resolve())
    dry = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "all",
            "--configfile",
            "config/config.yaml",
            "config/stacks.yaml",
        ],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    planned = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", dry.stdout, flags=re.M)}
    assert planned["train_variant"] == 2 * 2 + 2 * 3 and planned["fuse_variant"] == 10
    assert planned["subsample_train"] == 3 and planned["baseline_variant"] == 2 * 3
    for rule in ("findings", "seeds_table", "scaling_table"):
        assert planned[rule] == 1
