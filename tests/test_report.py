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
from proofmatch.evaluation import verdicts as VD


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
    assert VD.judge(finding, {**sb, **npt}, 1000, 13)["Verdict"] == F.HOLDS
    flipped = dict(npt)
    flipped[X.Run("mixed", "npt", "local", "full").evaluation("test")] = _frame(0.99, seed=3)
    sb_full = X.Run("mixed", "scratchbert", "local", "full").evaluation("test")
    assert (
        VD.judge(finding, {**sb, **flipped, sb_full: _frame(0.3, seed=4)}, 1000, 13)["Verdict"]
        == F.CONTRADICTED
    )
    same = {ev.__class__(**{**ev.__dict__, "model": "npt"}): frame for ev, frame in sb.items()}
    assert VD.judge(finding, {**sb, **same}, 1000, 13)["Verdict"] == F.UNDECIDED
    row = VD.judge(finding, sb, 1000, 13)
    assert row["Verdict"] == F.NOT_RUN and "not run" in row["Note"]
    # findings.csv lists the cells of a finding not run too, without numbers
    evidence = VD.Evidence(sb, 1000, 13, 0.08, 0)
    _, cells = VD.findings_tables(evidence, [finding])
    assert len(cells) == len(finding.contrasts) and not cells["Run"].any()
    assert cells["Estimate"].isna().all() and set(cells["Verdict"]) == {F.NOT_RUN}
    _, cells = VD.findings_tables(VD.Evidence({**sb, **npt}, 1000, 13, 0.08, 0), [finding])
    assert cells["Run"].all() and cells["Estimate"].notna().all()


def test_a_pool_too_small_prints_no_interval_and_is_not_supportable():
    finding = next(f for f in F.findings() if f.key == "npt_math_conservation")
    a, b = finding.evaluations()
    row = VD.judge(finding, {a: _frame(0.9, n=5), b: _frame(0.3, n=5, seed=2)}, 1000, 13)
    assert row["Verdict"] == F.NOT_SUPPORTABLE
    assert "n = 5 < 10: no interval" in row["Numbers (points, 95 % interval; adj.: Holm)"]
    assert "[" not in row["Numbers (points, 95 % interval; adj.: Holm)"]


def _shifted(frame: pd.DataFrame, by: float) -> pd.DataFrame:
    """``frame`` with every statement's MRR, Acc and global Acc moved by ``by`` (a fraction)."""
    out = frame.copy()
    for m in ("mrr", "acc", "global_acc"):
        out[m] = out[m] + by
    return out


def _noise(n: int, seed: int, sd: float = 0.3) -> pd.DataFrame:
    """A per-statement frame of Gaussian scores around 0.5 that no model collapses on (every proof
    its own top-1)."""
    rng = np.random.default_rng(seed)
    v = 0.5 + sd * rng.standard_normal(n)
    return pd.DataFrame(
        {
            "mrr": v,
            "acc": v,
            "global_acc": v,
            "shared_top1": 0.0,
            "top1_share": 1.0 / n,
            "proof_none": 0.0,
            "proof_multi": 0.0,
        },
        index=pd.Index([f"p{i:03d}" for i in range(n)], name="pair_id"),
    )


def test_one_uncorrected_cell_below_zero_is_undecided_after_holm():
    """A 12-cell finding (ScratchBERT over NPT: 4 levels x MRR, Acc, global Acc) where one cell's
    95 % interval lies just below 0 and every other covers 0: the old rule called it contradicted;
    after Holm's correction over the 12 cells its adjusted interval covers 0: undecided. The same
    cell far below 0 stays contradicted."""
    finding = next(f for f in F.findings() if f.key == "scratchbert_over_npt")
    n, frames, rng = 200, {}, np.random.default_rng(3)
    for i, lv in enumerate(X.LEVELS):
        base = _noise(n, seed=i)
        frames[X.Run("mixed", "npt", "local", lv).evaluation("test")] = base
        diff = {m: 0.3 * rng.standard_normal(n) for m in ("mrr", "acc", "global_acc")}
        diff = {m: d - d.mean() for m, d in diff.items()}  # every cell centred on 0 ...
        if lv == "full":
            diff["mrr"] -= 0.05  # ... but Full's MRR: 95 % interval just below 0
        frames[X.Run("mixed", "scratchbert", "local", lv).evaluation("test")] = base.assign(
            **{m: base[m] + d for m, d in diff.items()}
        )
    sb_full = X.Run("mixed", "scratchbert", "local", "full").evaluation("test")
    row, cells = VD.judge_cells(finding, _evidence(frames))
    full = next(c for c in cells if c["Cell"] == "Full MRR")
    assert full["Hi"] < 0 < full["Adjusted hi"]  # one uncorrected cell wrong, the adjusted one not
    assert row["Verdict"] == F.UNDECIDED
    assert row["Tally (above / covering / below 0)"] == "0 / 11 / 1"
    frames[sb_full] = frames[sb_full].assign(mrr=frames[sb_full]["mrr"] - 0.3)
    assert VD.judge_cells(finding, _evidence(frames))[0]["Verdict"] == F.CONTRADICTED


def _evidence(frames, margin: float = 0.08) -> VD.Evidence:
    return VD.Evidence(frames, 1000, 13, margin, 1000)


def test_equivalence_within_the_margin_holds_and_twice_the_margin_is_contradicted():
    """Transposition against Conservation (the paper's "similar"), two one-sided tests with margin
    m = 8 points: the same scores hold (equivalent within 8); 16 points apart (2 m) contradicted."""
    finding = next(f for f in F.findings() if f.key == "transposition_similar")
    m = 0.08
    frames = {}
    for i, enc in enumerate(("npt", "scratchbert", "mathbert")):
        base = _noise(300, seed=20 + i, sd=0.1)
        frames[_ev(enc, "conservation")] = base
        frames[_ev(enc, "trans")] = base.copy()
    row = VD.judge_cells(finding, _evidence(frames, m))[0]
    assert row["Verdict"] == "holds (equivalent within 8)"
    frames[_ev("npt", "trans")] = _shifted(frames[_ev("npt", "conservation")], -2 * m)
    row = VD.judge_cells(finding, _evidence(frames, m))[0]
    assert row["Verdict"] == "contradicted (differs by more than 8)"


def _ev(enc: str, level: str) -> X.Evaluation:
    return X.Run("mixed", enc, "local", level).evaluation("test")


def test_a_collapsed_model_is_not_supportable():
    """One proof the local top-1 of every statement (the pr split's Table 6 runs in the demo):
    however large the planted difference, the finding is not supportable, naming the model."""
    finding = next(f for f in F.findings() if f.key == "protected_all")
    frames = {}
    for p, plain in (("partial_p", "partial"), ("full_p", "full")):
        for t in ("conservation", "partial_p"):
            frames[X.Run("pr", "scratchbert", "local", p).evaluation("test", t)] = _noise(60, 1)
            frames[X.Run("pr", "scratchbert", "local", plain).evaluation("test", t)] = _shifted(
                _noise(60, 1), -0.2
            )
    assert VD.judge_cells(finding, _evidence(frames))[0]["Verdict"] == F.HOLDS
    hub = X.Run("pr", "scratchbert", "local", "full").evaluation("test", "conservation")
    frames[hub] = frames[hub].assign(top1_share=1.0)  # one proof is everyone's top-1
    row = VD.judge_cells(finding, _evidence(frames))[0]
    assert row["Verdict"] == F.NOT_SUPPORTABLE
    assert "one proof is the top-1 of 60 of 60 statements" in row["Note"]
    assert "ScratchBERT-Local" in row["Note"]
    # an MRR interval that covers chance (H_60 / 60 = 7.8 %) collapses a model too
    chance = sum(1 / k for k in range(1, 61)) / 60
    frames[hub] = _noise(60, 1, sd=0.01).assign(
        mrr=chance + 0.01 * np.random.default_rng(0).standard_normal(60)
    )
    assert "covers chance" in VD.judge_cells(finding, _evidence(frames))[0]["Note"]


def test_a_seed_that_flips_moves_holds_to_undecided():
    """ScratchBERT over NPT holds with one seed of NPT-Local Conservation; add its seed-14 run (a
    report.seeds variant) that lies above ScratchBERT and the hierarchical bootstrap (seeds, then
    statements) covers 0 in that cell: undecided. The cell says it combines 2 seeds."""
    finding = next(f for f in F.findings() if f.key == "scratchbert_over_npt")
    frames = {}
    for i, lv in enumerate(X.LEVELS):
        base = _noise(200, seed=40 + i, sd=0.1)
        frames[_ev("npt", lv)] = base
        frames[_ev("scratchbert", lv)] = _shifted(base, 0.1)
    assert VD.judge_cells(finding, _evidence(frames))[0]["Verdict"] == F.HOLDS
    npt = _ev("npt", "conservation")
    frames[X.Evaluation(**{**npt.__dict__, "variant": "seed14"})] = _shifted(frames[npt], 0.2)
    row, cells = VD.judge_cells(finding, _evidence(frames))
    assert row["Verdict"] == F.UNDECIDED
    cell = next(c for c in cells if c["Cell"] == "Conservation MRR")
    assert cell["Seeds"] == 2 and cell["Lo"] < 0 < cell["Hi"]
    assert cell["Estimate"] == pytest.approx(0.0, abs=1e-9)  # the mean over the two seeds


def test_global_accuracy_re_solved_per_resample_matches_the_decoder_and_widens():
    """The re-solved pool's assignment with every pair drawn once is the evaluation's own (the
    exact decoder's); on bootstrap pools its draws spread wider than the fixed assignment's hits."""
    from proofmatch.decoding import assign as A

    rng = np.random.default_rng(5)
    n = 120
    scores = rng.standard_normal((n, n)) + 1.5 * np.eye(n)
    ids = np.argsort(-scores, axis=1)
    top = np.take_along_axis(scores, ids, axis=1)
    graph, pair = A.resampled_graph(ids, A.kbest_costs(top), np.ones(n, np.int64))
    x, _ = A.solve_graph(graph)
    exact = A.exact_global(scores)
    assert np.array_equal(pair[x] == pair, exact == np.arange(n))
    counts = B.draw_counts(n, 300, 13)
    resolved = A.resampled_global_acc(ids, top, counts)
    fixed = counts @ (exact == np.arange(n)).astype(float) / n
    assert resolved.std() > fixed.std()


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


def test_write_findings_gives_numeric_cells_a_headline_csv_and_re_solves_global(tmp_path):
    """findings.csv: one numeric row per cell (estimate, lo, hi, adjusted lo/hi, n, seeds); the
    headline gap as its own CSV; the caption names the corpus and the seeds; an evaluation with its
    k-best Parquet file has its global accuracy re-solved (no "fixed assignment"), one without
    keeps the fixed assignment and says so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from proofmatch.decoding.assign import exact_global
    from proofmatch.evaluation import report as R

    cfg = validate_config({})
    n, rng, paths = 40, np.random.default_rng(8), {}
    ids = [f"p{i:03d}" for i in range(n)]
    evs = [_ev(enc, lv) for enc in ("npt", "scratchbert") for lv in X.LEVELS]
    evs += [X.baseline("mixed", m, "conservation", "test") for m in R.HEADLINE_LEXICAL]
    for i, ev in enumerate(evs):
        scores = rng.standard_normal((n, n)) + (2.0 + 0.2 * i) * np.eye(n)
        order = np.argsort(-scores, axis=1)
        gold_rank = 1 + (scores > np.diag(scores)[:, None]).sum(axis=1)
        block = B.statements_block(ids, gold_rank, order[:, 0], exact_global(scores))
        path = tmp_path / f"{i}.json"
        write_json({"n": n, B.STATEMENTS: block}, path)
        if ev.model == "npt":  # k-best lists for NPT only
            pq.write_table(
                pa.table(
                    {
                        "pair_id": ids,
                        "topk_ids": [[ids[j] for j in row] for row in order],
                        "topk_scores": np.take_along_axis(scores, order, axis=1).tolist(),
                    }
                ),
                path.with_suffix(".parquet"),
            )
        paths[ev] = path
    df = R.write_findings(paths, cfg, tmp_path / "findings")
    cells = pd.read_csv(tmp_path / "findings.csv")
    for col in ("Estimate", "Lo", "Hi", "Adjusted lo", "Adjusted hi", "n", "Seeds"):
        assert pd.api.types.is_numeric_dtype(cells[col]), col
    glob = cells[(cells["Finding"] == "global_decoding") & cells["Cell"].str.startswith("NPT")]
    assert len(glob) == 4 and glob["Global assignment"].isna().all()  # re-solved
    sb = cells[(cells["Finding"] == "global_decoding") & cells["Cell"].str.startswith("Scratch")]
    assert (sb["Global assignment"] == "fixed").all()
    head = pd.read_csv(tmp_path / "findings_headline.csv")
    assert {"MRR", "MRR lo", "MRR hi", "− BM25", "− BM25 lo", "− BM25 hi"} <= set(head.columns)
    md = (tmp_path / "findings.md").read_text(encoding="utf-8")
    assert "demo corpus" in md.lower() and "seed 13" in md and "Mixed test n = 40" in md
    assert set(df["Finding"]) == {f.key for f in F.findings()}


def test_kbest_lists_are_read_in_the_frames_order(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from proofmatch.evaluation import report as R

    table = pa.table(
        {
            "pair_id": ["b", "a", "c"],
            "topk_ids": [["b", "a"], ["a", "c"], ["c", "b"]],
            "topk_scores": [[3.0, 1.0], [2.0, 1.5], [5.0, 0.0]],
        }
    )
    pq.write_table(table, tmp_path / "e.parquet")
    ids, scores = R.read_kbest(tmp_path / "e.parquet", pd.Index(["a", "b", "c"], dtype=object))
    assert ids.tolist() == [[0, 2], [1, 0], [2, 1]]
    assert scores.tolist() == [[2.0, 1.5], [3.0, 1.0], [5.0, 0.0]]
    assert R.read_kbest(tmp_path / "missing.parquet", pd.Index(["a"])) is None


def test_no_crossing_is_extrapolated_from_fewer_than_three_sizes():
    """Two training sizes always make a line: the scaling caption extrapolates a crossing with
    BM25 only from three sizes or more."""
    import pandas as pd

    from proofmatch.evaluation import scaling as S

    def frame(sizes, gaps):
        return pd.DataFrame({"Model": "NPT", "Train pairs": sizes, "Δ BM25": gaps})

    assert S.crossing(frame([531, 1061], [-17.5, -8.0]), "NPT") is None
    n = S.crossing(frame([250, 500, 1000], [-20.0, -15.0, -10.0]), "NPT")
    assert n == pytest.approx(1000 * 2**2, rel=1e-6)  # 5 points gained per doubling
    assert S.crossing(frame([250, 500, 1000], [-10.0, -15.0, -20.0]), "NPT") is None
