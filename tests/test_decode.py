"""Decoding (proofmatch.decode) and the evaluation driver (proofmatch.evaluate) on hand-built scores."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from proofmatch import decode as D
from proofmatch import evaluate as E


def matrix_scorer(S: np.ndarray) -> D.ScoreRows:
    S = np.asarray(S, np.float32)
    return lambda start, stop: S[start:stop].copy()


def random_factors(n: int, d: int = 16, noise: float = 1.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d)).astype(np.float32)
    B = (A + noise * rng.normal(size=(n, d))).astype(np.float32)
    return A, B, rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)


# ----------------------------------------------------------------------------- local decoding


def test_ranks_mrr_and_ties_count_against_gold():
    S = np.array([[1.0, 1.0, 0.0],   # gold ties with proof 1 -> rank 2
                  [0.0, 2.0, 2.0],   # ties with proof 2 -> rank 2
                  [3.0, 3.0, 3.0]])  # constant row -> rank n = 3
    loc = D.local_decode(matrix_scorer(S), 3, k=3, progress=False)
    assert loc.gold_rank.tolist() == [2, 2, 3]
    assert loc.mrr == pytest.approx((1 / 2 + 1 / 2 + 1 / 3) / 3)
    assert loc.acc == 0.0
    # tied proofs come before the gold, so top1 == gold exactly when rank == 1
    assert loc.top1.tolist() == [1, 2, 0]
    assert loc.topk_idx[2].tolist() == [0, 1, 2]


def test_gold_ranked_last_among_ties_in_topk():
    S = np.array([[5.0, 5.0, 5.0, 1.0], [0, 9, 0, 0], [0, 0, 9, 0], [0, 0, 0, 9]])
    loc = D.local_decode(matrix_scorer(S), 4, k=4, progress=False)
    assert loc.topk_idx[0].tolist() == [1, 2, 0, 3]
    assert loc.gold_rank.tolist() == [3, 1, 1, 1]
    assert loc.acc == pytest.approx(0.75)


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_chunked_topk_equals_dense(chunk):
    n, k = 53, 9
    f = D.factor_scorer(*random_factors(n, seed=1))
    dense = D.dense_scores(f, n, dtype=np.float32)
    loc = D.local_decode(f, n, k, chunk_rows=chunk, progress=False)
    order = np.argsort(-dense, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(loc.topk_idx, order)
    np.testing.assert_allclose(loc.topk_score, np.take_along_axis(dense, order, 1))
    np.testing.assert_array_equal(loc.gold_rank, (dense >= np.diag(dense)[:, None]).sum(1))
    full = D.local_decode(f, n, k, chunk_rows=n, progress=False)
    np.testing.assert_array_equal(loc.topk_idx, full.topk_idx)
    np.testing.assert_array_equal(loc.gold_rank, full.gold_rank)


def test_factor_scorer_matches_formula_and_k_is_clipped():
    A, B, rb, cb = random_factors(6, seed=2)
    S = D.dense_scores(D.factor_scorer(A, B, rb, cb), 6)
    np.testing.assert_allclose(S, A @ B.T + rb[:, None] + cb[None, :], rtol=1e-5, atol=1e-5)
    loc = D.local_decode(D.factor_scorer(A, B, rb, cb), 6, k=500, progress=False)
    assert loc.topk_idx.shape == (6, 6)


def test_bad_scores_and_shapes_are_rejected():
    S = np.eye(3)
    S[1, 2] = np.nan
    with pytest.raises(ValueError, match="non-finite score in row 1"):
        D.local_decode(matrix_scorer(S), 3, 2, progress=False)
    with pytest.raises(ValueError, match="as many statements as proofs"):
        D.factor_scorer(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="shape"):
        D.local_decode(lambda a, b: np.zeros((b - a, 2)), 3, 2, progress=False)


def test_hubness_counts():
    top1 = np.array([0] * 20 + [1] * 10 + [2] * 5 + [3] * 2 + [4] + [5])  # n = 39 statements/proofs
    hub = D.hubness(top1, 39)
    counts = {b: v["proofs"] for b, v in hub.items()}
    assert counts == {">=20": 1, ">=10": 2, ">=5": 3, ">=2": 4, "=1": 2, "<1": 33}
    assert hub["<1"]["percent"] == pytest.approx(100 * 33 / 39)
    assert counts[">=2"] + counts["=1"] + counts["<1"] == 39


# ----------------------------------------------------------------------------- global decoding


def test_exact_and_sparse_find_known_optimum():
    # local: statements 0 and 1 both pick proof 0; the best one-to-one assignment swaps them
    S = np.array([[5.0, 4.0, 0.0], [4.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
    loc = D.local_decode(matrix_scorer(S), 3, k=2, progress=False)
    assert loc.acc == pytest.approx(2 / 3)
    exact = D.exact_global(S)
    sparse, used = D.sparse_global(loc.topk_idx, loc.topk_score, seed=0)
    assert exact.tolist() == [1, 0, 2]
    assert sparse.tolist() == [1, 0, 2]
    assert used == 0


@pytest.mark.parametrize("seed", range(4))
def test_exact_and_sparse_agree_on_complete_graph(seed):
    n = 40
    f = D.factor_scorer(*random_factors(n, noise=2.0, seed=seed))
    loc = D.local_decode(f, n, k=n, progress=False)
    exact = D.exact_global(D.dense_scores(f, n))
    sparse, used = D.sparse_global(loc.topk_idx, loc.topk_score, seed)
    np.testing.assert_array_equal(exact, sparse)
    assert used == 0
    # global decoding never scores below the local argmax's one-to-one repair: it is optimal
    S = D.dense_scores(f, n)
    assert S[np.arange(n), exact].sum() >= S[np.arange(n), np.arange(n)].sum() - 1e-6


def test_infeasible_kbest_graph_is_repaired_and_counted():
    # every statement's top-3 is proofs {0, 1, 2}: no perfect matching without fallback edges
    n, k = 12, 3
    rng = np.random.default_rng(0)
    S = rng.uniform(0, 1, size=(n, n))
    S[:, :3] += 10.0
    loc = D.local_decode(matrix_scorer(S), n, k, progress=False)
    assert set(np.unique(loc.topk_idx)) == {0, 1, 2}
    assert D.matching_deficiency(loc.topk_idx) == n - 3
    x, used = D.sparse_global(loc.topk_idx, loc.topk_score, seed=5)
    assert sorted(x.tolist()) == list(range(n))
    assert used == n - 3
    g = D.kbest_graph(loc.topk_idx, loc.topk_score, seed=5)
    assert D.is_edge(g, x).all()
    outside = ~np.isin(x, [0, 1, 2])
    np.testing.assert_array_equal(x[outside], g.fallback_col[outside])


def test_kbest_graph_layout_is_what_lapmod_needs():
    n, k = 30, 4
    f = D.factor_scorer(*random_factors(n, seed=3))
    loc = D.local_decode(f, n, k, progress=False)
    g = D.kbest_graph(loc.topk_idx, loc.topk_score, seed=1)
    assert g.ii.shape == (n + 1,) and g.ii[0] == 0 and g.ii[-1] == len(g.cc) == len(g.kk)
    for i in range(n):
        row = g.kk[g.ii[i]:g.ii[i + 1]]
        assert (np.diff(row) > 0).all()                 # sorted, no duplicates
        assert set(loc.topk_idx[i]) <= set(row.tolist())
    assert g.cc.min() >= 0 and g.cc.max() <= D.FALLBACK_COST < 1e6
    real = g.cc[g.cc < D.FALLBACK_COST]
    assert real.max() == pytest.approx(1.0)
    assert (g.fallback_col != np.arange(n)).all()       # never the gold (diagonal)


def test_cyclic_permutation_is_a_seeded_derangement():
    p = D.cyclic_permutation(100, seed=3)
    assert sorted(p.tolist()) == list(range(100))
    assert (p != np.arange(100)).all()
    np.testing.assert_array_equal(p, D.cyclic_permutation(100, seed=3))
    assert not np.array_equal(p, D.cyclic_permutation(100, seed=4))
    assert D.cyclic_permutation(1, 0).tolist() == [0]


def test_sparse_decoding_is_optimal_on_random_hub_graphs():
    """lapmod on repaired k-best graphs: valid and as good as scipy's sparse solver on the same graph."""
    for seed in range(25):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(5, 120)), int(rng.integers(1, 6))
        A = rng.normal(size=(n, 6))
        S = A @ (A + 2.0 * rng.normal(size=(n, 6))).T + 3.0 * rng.normal(size=n)[None, :] ** 2
        loc = D.local_decode(matrix_scorer(S), n, k, progress=False)
        g = D.kbest_graph(loc.topk_idx, loc.topk_score, seed)
        x, used = D.sparse_global(loc.topk_idx, loc.topk_score, seed)
        assert D.is_edge(g, x).all() and sorted(x.tolist()) == list(range(n))
        assert used >= D.matching_deficiency(loc.topk_idx)
        r, c = min_weight_full_bipartite_matching(csr_matrix((g.cc + 1e-9, g.kk, g.ii), shape=(n, n)))
        ref = np.empty(n, np.int64)
        ref[r] = c
        cost = dict(zip(zip(np.repeat(np.arange(n), np.diff(g.ii)).tolist(), g.kk.tolist()), g.cc.tolist()))
        mine = sum(cost[(i, j)] for i, j in enumerate(x.tolist()))
        best = sum(cost[(i, j)] for i, j in enumerate(ref.tolist()))
        assert mine == pytest.approx(best, abs=1e-6)


def test_global_decode_switches_between_exact_and_sparse():
    n = 25
    f = D.factor_scorer(*random_factors(n, noise=0.5, seed=4))
    loc = D.local_decode(f, n, 5, progress=False)
    exact = D.global_decode(f, loc, exact_max_n=n, seed=0)
    sparse = D.global_decode(f, loc, exact_max_n=n - 1, seed=0)
    assert exact.method == "exact" and exact.extra == {}
    assert sparse.method == "sparse" and "kbest_deficiency" in sparse.extra
    assert 0.0 <= sparse.acc <= 1.0 and exact.acc >= loc.acc


# ----------------------------------------------------------------------------- evaluate.py


class BagMatcher:
    """A model stand-in: hashed bag of tokens, score = number of shared tokens (+ a column bias)."""

    def __init__(self, dim: int = 1 << 16):
        self.dim = dim
        self.calls = 0

    def _embed(self, docs):
        M = np.zeros((len(docs), self.dim), np.float32)
        for i, d in enumerate(docs):
            for t in d:
                M[i, zlib.crc32(t.encode()) % self.dim] += 1.0
        return M

    def factors(self, statements, proofs, batch_size=64):
        self.calls += 1
        n = len(statements)
        return (self._embed(statements), self._embed(proofs), np.zeros(n, np.float32),
                np.linspace(0, 0.01, n).astype(np.float32))


def toy_data(tmp_path, n_test: int = 12):
    rng = np.random.default_rng(0)
    rows = []
    for part, count in (("train", 6), ("dev", 4), ("test", n_test)):
        for i in range(count):
            sym = [f"$s{part}{i}", f"$t{part}{i}"]
            rows.append({"pair_id": f"art{i % 3}/{part}{i}", "article_id": f"art{i % 3}", "part": part,
                         "statement_tokens": ["Lemma", "."] + sym + list(rng.choice(["a", "b", "c"], 3)),
                         "proof_tokens": ["Proof", "."] + sym[::-1] + list(rng.choice(["x", "y", "z"], 5))})
    path = tmp_path / "data.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def test_evaluate_run_writes_parquet_and_json(tmp_path, monkeypatch):
    data = toy_data(tmp_path)
    matcher = BagMatcher()
    monkeypatch.setattr(E, "_load_matcher", lambda run_dir: matcher)
    out_pq, out_js = tmp_path / "eval" / "test-x.parquet", tmp_path / "eval" / "test-x.json"
    metrics = E.evaluate_run("run", data, "test", out_pq, out_js, topk=4, exact_max_n=5, seed=1, view="both")
    assert matcher.calls == 1                      # statements and proofs encoded once
    df = pd.read_parquet(out_pq)
    assert list(df.columns) == ["pair_id", "gold_rank", "top1", "global_pred", "topk_ids", "topk_scores"]
    assert len(df) == 12 and df["pair_id"].is_unique
    assert (df["gold_rank"] == 1).all() and (df["top1"] == df["pair_id"]).all()
    assert all(len(ids) == 4 and ids[0] == pid for ids, pid in zip(df["topk_ids"], df["pair_id"]))
    assert all((np.diff(s) <= 0).all() for s in df["topk_scores"])
    saved = json.loads(out_js.read_text())
    assert saved == metrics
    assert saved["n"] == 12 and saved["mrr"] == 1.0 and saved["acc"] == 1.0 and saved["global_acc"] == 1.0
    assert saved["global_method"] == "sparse" and saved["fallback_edges"] == 0
    assert saved["hubness"]["=1"]["proofs"] == 12


def test_evaluate_view_filters_tokens(tmp_path, monkeypatch):
    data = toy_data(tmp_path)
    seen = {}

    class Spy(BagMatcher):
        def factors(self, statements, proofs, batch_size=64):
            seen["s"] = statements
            return super().factors(statements, proofs, batch_size)

    monkeypatch.setattr(E, "_load_matcher", lambda run_dir: Spy())
    m = E.evaluate_run("run", data, "dev", tmp_path / "o.parquet", tmp_path / "o.json", 3, 100, 0, view="text")
    assert all(not t.startswith("$") for s in seen["s"] for t in s)
    assert m["global_method"] == "exact" and m["view"] == "text" and m["part"] == "dev"


def test_evaluate_run_with_a_saved_model(tmp_path):
    """The real contract: load_matcher(run_dir) + Matcher.factors of proofmatch.model (untrained NPT)."""
    torch = pytest.importorskip("torch")
    from proofmatch.encoders import NPTConfig, NPTEncoder, WordVocab
    from proofmatch.model import Matcher, MatcherConfig

    data = toy_data(tmp_path)
    df = pd.read_parquet(data)
    torch.manual_seed(0)
    vocab = WordVocab.build([list(s) for s in df["statement_tokens"]] + [list(p) for p in df["proof_tokens"]],
                            min_count=1)
    npt = NPTConfig(vocab_size=len(vocab), d_model=8, n_layers=1, n_heads=2, d_k=4, max_length=16)
    Matcher(MatcherConfig("npt", "bilinear", "both", 16, npt=npt.to_dict()), NPTEncoder(npt), vocab) \
        .eval().save_pretrained(tmp_path / "run" / "model")
    m = E.evaluate_run(tmp_path / "run", data, "test", tmp_path / "e.parquet", tmp_path / "e.json",
                       topk=3, exact_max_n=5, seed=0)
    assert m["n"] == 12 and m["global_method"] == "sparse" and 0 < m["mrr"] <= 1
    assert m["fallback_edges"] >= m["kbest_deficiency"]
    assert len(pd.read_parquet(tmp_path / "e.parquet")) == 12
