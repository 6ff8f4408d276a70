"""Local decoding (proofmatch.decoding.local, .topk), global decoding (proofmatch.decoding.assign) and the
evaluation driver (proofmatch.evaluation.evaluate) on hand-built scores."""

from __future__ import annotations

import json
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from proofmatch.decoding import assign as G
from proofmatch.decoding import local as D
from proofmatch.decoding import topk as K
from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation import evaluate as E


def matrix_scorer(S: np.ndarray) -> D.ScoreRows:
    S = np.asarray(S, np.float32)
    return lambda start, stop: S[start:stop].copy()


def random_factors(n: int, d: int = 16, noise: float = 1.0, seed: int = 0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d)).astype(np.float32)
    B = (A + noise * rng.normal(size=(n, d))).astype(np.float32)
    return A, B, rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)


def reference_topk(S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The documented rules, row by row in Python: top-k = first k proofs in the order (score
    descending, gold after its ties, index ascending); rank = #{j: s_ij >= s_ii}."""
    n = S.shape[0]
    idx = [sorted(range(n), key=lambda j: (-float(S[i, j]), j == i, j))[:k] for i in range(n)]
    return np.array(idx, np.int64), (S >= np.diag(S)[:, None]).sum(axis=1)


def torch_local(S: np.ndarray, k: int, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """The torch kernel (the GPU path) run on CPU tensors, chunk by chunk."""
    parts = [
        K.chunk_topk_torch(torch.from_numpy(S[a : a + chunk]), a, k)
        for a in range(0, len(S), chunk)
    ]
    return np.concatenate([p[2] for p in parts]), np.concatenate([p[1] for p in parts])


def tie_heavy(n: int, seed: int) -> np.ndarray:
    """Scores drawn from a few values (ties everywhere), with signed zeros among them."""
    rng = np.random.default_rng(seed)
    S = rng.choice(
        np.array([-1.5, -0.0, 0.0, 0.5, 2.0], np.float32), size=(n, n), p=[0.2, 0.2, 0.2, 0.3, 0.1]
    )
    return S.astype(np.float32)


# ----------------------------------------------------------------------------- local decoding


def test_ranks_mrr_and_ties_count_against_gold():
    S = np.array(
        [
            [1.0, 1.0, 0.0],  # gold ties with proof 1 -> rank 2
            [0.0, 2.0, 2.0],  # ties with proof 2 -> rank 2
            [3.0, 3.0, 3.0],
        ]
    )  # constant row -> rank n = 3
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
    # a one-row chunk is a matrix-vector product: the same scores up to float32 rounding
    np.testing.assert_allclose(loc.topk_score, np.take_along_axis(dense, order, 1), rtol=1e-6)
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


def test_ties_at_the_kth_score_keep_the_lowest_indices_and_drop_the_gold_first():
    n, k = 8, 3
    S = np.zeros((n, n), np.float32)
    S[5] = [
        1,
        2,
        2,
        2,
        0,
        2,
        2,
        0,
    ]  # five proofs tie at 2 (the 1st..5th scores), the gold (5) among them
    S[6] = [0, 4, 1, 1, 0, 0, 1, 1]  # the gold (6) ties with proofs 2, 3, 7 at the k-th score
    np.fill_diagonal(S[[0, 1, 2, 3, 4, 7]], 0)
    for rows in (1, 3, 8):
        loc = D.local_decode(matrix_scorer(S), n, k, chunk_rows=rows, progress=False)
        assert loc.topk_idx[5].tolist() == [1, 2, 3] and loc.gold_rank[5] == 5
        assert loc.topk_idx[6].tolist() == [1, 2, 3] and loc.gold_rank[6] == 5
        np.testing.assert_array_equal(loc.topk_score[5], [2, 2, 2])
        # the gold is in its list exactly when its rank is <= k
        in_list = (loc.topk_idx == np.arange(n)[:, None]).any(axis=1)
        np.testing.assert_array_equal(in_list, loc.gold_rank <= k)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("n,k", [(9, 9), (40, 3), (200, 7), (333, 20)])
def test_topk_and_ranks_follow_the_documented_order_under_ties(backend, n, k):
    """Against the rules written out in Python, on tie-heavy scores; (200, 7) and (333, 20) use
    column groups (n >= 16 k) for the candidate threshold, so ties straddle the threshold too."""
    for seed in range(3):
        S = tie_heavy(n, seed)
        ref_idx, ref_rank = reference_topk(S, k)
        for chunk in (1, 17, n):
            if backend == "numpy":
                loc = D.local_decode(matrix_scorer(S), n, k, chunk_rows=chunk, progress=False)
                idx, rank = loc.topk_idx, loc.gold_rank
                np.testing.assert_array_equal(
                    loc.topk_score, np.take_along_axis(S + 0, ref_idx, axis=1)
                )
            else:
                idx, rank = torch_local(S, k, chunk)
            np.testing.assert_array_equal(idx, ref_idx)
            np.testing.assert_array_equal(rank, ref_rank)


def test_signed_zeros_tie():
    S = np.array([[-0.0, 0.0, -1.0], [0.0, 0.0, 0.0], [1.0, -0.0, -0.0]], np.float32)
    loc = D.local_decode(matrix_scorer(S), 3, 3, progress=False)
    assert loc.gold_rank.tolist() == [2, 3, 3]
    assert loc.topk_idx.tolist() == [[1, 0, 2], [0, 2, 1], [0, 1, 2]]


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_factor_scorer_decoding_equals_the_generic_path(threads, monkeypatch):
    """The FactorScorer fast path (torch product into reused buffers, chunks on threads, ranked in
    row blocks) gives what the generic row-chunk path gives on the same scores."""
    n, k = 700, 15
    monkeypatch.setattr(K, "CPU_BLOCK_BYTES", 4 * n * 30)  # blocks of 30 rows in chunks of 100
    f = D.factor_scorer(*random_factors(n, seed=7))
    dense = D.dense_scores(f, n, chunk_rows=100, dtype=np.float32)
    fast = D.local_decode(f, n, k, chunk_rows=100, progress=False, threads=threads)
    ref = D.local_decode(matrix_scorer(dense), n, k, chunk_rows=100, progress=False, threads=1)
    np.testing.assert_array_equal(fast.topk_idx, ref.topk_idx)
    np.testing.assert_array_equal(fast.gold_rank, ref.gold_rank)
    np.testing.assert_array_equal(fast.topk_score, ref.topk_score)
    np.testing.assert_array_equal(fast.gold_score, np.diag(dense))


def test_decoding_memory_stays_at_chunk_size():
    """No n x n array: the traced peak of decoding n = 3000 is far below the 36 MB matrix."""
    n, k = 3000, 20
    f = D.factor_scorer(*random_factors(n, d=8, seed=3))
    tracemalloc.start()
    try:
        D.local_decode(f, n, k, chunk_rows=200, progress=False, threads=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * n * 4 / 8


def test_overflowing_factors_are_caught():
    A = np.full((4, 2), 1e20, np.float32)
    f = D.factor_scorer(A, A)
    assert f.check_finite  # |a||b| = 2e40 > float32 max: scores may be inf, so chunks are checked
    with pytest.raises(ValueError, match="non-finite score in row 0"):
        D.local_decode(f, 4, 2, progress=False)
    with pytest.raises(ValueError, match="non-finite score in row"):  # chunks on two threads
        D.local_decode(f, 4, 2, chunk_rows=1, threads=2, progress=False)
    B = np.ones((4, 2), np.float32)
    B[2, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite score in row 0"):
        D.local_decode(D.factor_scorer(np.ones((4, 2)), B), 4, 2, progress=False)
    assert not D.factor_scorer(*random_factors(5)).check_finite


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_decoding_equals_cpu():
    n, k = 3000, 50
    A, B, rb, cb = random_factors(n, d=32, seed=5)
    cpu = D.local_decode(D.factor_scorer(A, B, rb, cb), n, k, progress=False)
    gpu = D.local_decode(D.factor_scorer(A, B, rb, cb, device="cuda"), n, k, progress=False)
    same = (cpu.topk_idx == gpu.topk_idx).all(axis=1)
    assert same.mean() > 0.99  # a GPU product may round differently: near-ties can swap
    np.testing.assert_allclose(gpu.topk_score, cpu.topk_score, rtol=1e-4, atol=1e-4)
    assert np.abs(gpu.gold_rank - cpu.gold_rank).max() <= 2


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
    exact = G.exact_global(S)
    sparse, used = G.sparse_global(loc.topk_idx, loc.topk_score, seed=0)
    assert exact.tolist() == [1, 0, 2]
    assert sparse.tolist() == [1, 0, 2]
    assert used == 0


@pytest.mark.parametrize("seed", range(4))
def test_exact_and_sparse_agree_on_complete_graph(seed):
    n = 40
    f = D.factor_scorer(*random_factors(n, noise=2.0, seed=seed))
    loc = D.local_decode(f, n, k=n, progress=False)
    exact = G.exact_global(D.dense_scores(f, n))
    sparse, used = G.sparse_global(loc.topk_idx, loc.topk_score, seed)
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
    assert G.matching_deficiency(loc.topk_idx) == n - 3
    x, used = G.sparse_global(loc.topk_idx, loc.topk_score, seed=5)
    assert sorted(x.tolist()) == list(range(n))
    assert used == n - 3
    g = G.kbest_graph(loc.topk_idx, loc.topk_score, seed=5)
    assert G.is_edge(g, x).all()
    outside = ~np.isin(x, [0, 1, 2])
    np.testing.assert_array_equal(x[outside], g.fallback_col[outside])


def test_kbest_graph_layout_is_what_lapmod_needs():
    n, k = 30, 4
    f = D.factor_scorer(*random_factors(n, seed=3))
    loc = D.local_decode(f, n, k, progress=False)
    g = G.kbest_graph(loc.topk_idx, loc.topk_score, seed=1)
    assert g.ii.shape == (n + 1,) and g.ii[0] == 0 and g.ii[-1] == len(g.cc) == len(g.kk)
    for i in range(n):
        row = g.kk[g.ii[i] : g.ii[i + 1]]
        assert (np.diff(row) > 0).all()  # sorted, no duplicates
        assert set(loc.topk_idx[i]) <= set(row.tolist())
    assert g.cc.min() >= 0 and g.cc.max() <= G.FALLBACK_COST < 1e6
    real = g.cc[g.cc < G.FALLBACK_COST]
    assert real.max() == pytest.approx(1.0)
    assert (g.fallback_col != np.arange(n)).all()  # never the gold (diagonal)


def test_cyclic_permutation_is_a_seeded_derangement():
    p = G.cyclic_permutation(100, seed=3)
    assert sorted(p.tolist()) == list(range(100))
    assert (p != np.arange(100)).all()
    np.testing.assert_array_equal(p, G.cyclic_permutation(100, seed=3))
    assert not np.array_equal(p, G.cyclic_permutation(100, seed=4))
    assert G.cyclic_permutation(1, 0).tolist() == [0]


def test_sparse_decoding_is_optimal_on_random_hub_graphs():
    """lapmod on repaired k-best graphs: valid and as good as scipy's sparse solver on the same graph."""
    for seed in range(25):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(5, 120)), int(rng.integers(1, 6))
        A = rng.normal(size=(n, 6))
        S = A @ (A + 2.0 * rng.normal(size=(n, 6))).T + 3.0 * rng.normal(size=n)[None, :] ** 2
        loc = D.local_decode(matrix_scorer(S), n, k, progress=False)
        g = G.kbest_graph(loc.topk_idx, loc.topk_score, seed)
        x, used = G.sparse_global(loc.topk_idx, loc.topk_score, seed)
        assert G.is_edge(g, x).all() and sorted(x.tolist()) == list(range(n))
        assert used >= G.matching_deficiency(loc.topk_idx)
        r, c = min_weight_full_bipartite_matching(
            csr_matrix((g.cc + 1e-9, g.kk, g.ii), shape=(n, n))
        )
        ref = np.empty(n, np.int64)
        ref[r] = c
        cost = dict(
            zip(zip(np.repeat(np.arange(n), np.diff(g.ii)).tolist(), g.kk.tolist()), g.cc.tolist())
        )
        mine = sum(cost[(i, j)] for i, j in enumerate(x.tolist()))
        best = sum(cost[(i, j)] for i, j in enumerate(ref.tolist()))
        assert mine == pytest.approx(best, abs=1e-6)


def test_global_decode_switches_between_exact_and_sparse():
    n = 25
    f = D.factor_scorer(*random_factors(n, noise=0.5, seed=4))
    loc = D.local_decode(f, n, 5, progress=False)
    exact = G.global_decode(f, loc, exact_max_n=n, seed=0)
    sparse = G.global_decode(f, loc, exact_max_n=n - 1, seed=0)
    assert exact.method == "exact" and exact.extra == {}
    assert sparse.method == "sparse" and "kbest_deficiency" in sparse.extra
    assert 0.0 <= sparse.acc <= 1.0 and exact.acc >= loc.acc


@pytest.mark.parametrize("n", [2, 7, 60])
def test_a_constant_scorer_is_not_credited_by_global_decoding(n):
    """Ties count against the gold in the assignment as in the ranks: local acc 0, rank n, and
    global acc 0 with the exact and the sparse solver."""
    S = np.full((n, n), 0.25, np.float32)
    loc = D.local_decode(matrix_scorer(S), n, min(5, n), progress=False)
    assert loc.acc == 0.0 and (loc.gold_rank == n).all()
    x = G.exact_global(S)
    assert sorted(x.tolist()) == list(range(n)) and (x != np.arange(n)).all()
    xs, _ = G.sparse_global(loc.topk_idx, loc.topk_score, seed=0)
    assert (xs != np.arange(n)).all()
    for exact_max_n in (n, n - 1):
        assert G.global_decode(matrix_scorer(S), loc, exact_max_n, seed=0).acc == 0.0


def test_global_ties_go_against_the_gold_and_real_margins_still_count():
    n = 6
    u, v = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32)[::-1] * 2
    S = u[:, None] + v[None, :]  # every assignment has the same total: all of them tie
    assert (G.exact_global(S) != np.arange(n)).all()
    loc = D.local_decode(matrix_scorer(S), n, n, progress=False)
    assert (G.sparse_global(loc.topk_idx, loc.topk_score, seed=1)[0] != np.arange(n)).all()
    # the gold wins by one float32 ulp per row: a real margin, above the penalty
    T = np.ones((n, n), np.float32)
    np.fill_diagonal(T, np.nextafter(np.float32(1), np.float32(2)))
    assert G.exact_global(T).tolist() == list(range(n))
    loc = D.local_decode(matrix_scorer(T), n, 3, progress=False)
    assert G.sparse_global(loc.topk_idx, loc.topk_score, seed=1)[0].tolist() == list(range(n))
    # two statements tie on two proofs: of the two optimal assignments, the one without gold pairs
    P = np.array([[3.0, 3.0, 0.0], [3.0, 3.0, 0.0], [0.0, 0.0, 1.0]])
    assert G.exact_global(P).tolist() == [1, 0, 2]
    assert G.gold_penalty(0.0, 4) > 0 and 4 * G.gold_penalty(10.0, 4) < np.spacing(np.float32(10.0))


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
        return (
            self._embed(statements),
            self._embed(proofs),
            np.zeros(n, np.float32),
            np.linspace(0, 0.01, n).astype(np.float32),
        )


def toy_data(tmp_path, n_test: int = 12):
    rng = np.random.default_rng(0)
    rows = []
    for part, count in (("train", 6), ("dev", 4), ("test", n_test)):
        for i in range(count):
            sym = [f"$s{part}{i}", f"$t{part}{i}"]
            rows.append(
                {
                    "pair_id": f"art{i % 3}/{part}{i}",
                    "article_id": f"art{i % 3}",
                    "part": part,
                    "statement_tokens": ["Lemma", "."] + sym + list(rng.choice(["a", "b", "c"], 3)),
                    "proof_tokens": ["Proof", "."]
                    + sym[::-1]
                    + list(rng.choice(["x", "y", "z"], 5)),
                }
            )
    path = tmp_path / "data.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def test_evaluate_run_writes_parquet_and_json(tmp_path, monkeypatch):
    data = toy_data(tmp_path)
    matcher = BagMatcher()
    monkeypatch.setattr(E, "_load_matcher", lambda run_dir: matcher)
    out_pq, out_js = tmp_path / "eval" / "test-x.parquet", tmp_path / "eval" / "test-x.json"
    metrics = E.evaluate_run(
        "run",
        data,
        "test",
        out_pq,
        out_js,
        settings=E.EvalSettings(DecodeSettings(4, 5, 1), "both"),
    )
    assert matcher.calls == 1  # statements and proofs encoded once
    df = pd.read_parquet(out_pq)
    assert list(df.columns) == [
        "pair_id",
        "gold_rank",
        "top1",
        "global_pred",
        "topk_ids",
        "topk_scores",
    ]
    assert len(df) == 12 and df["pair_id"].is_unique
    assert (df["gold_rank"] == 1).all() and (df["top1"] == df["pair_id"]).all()
    assert all(len(ids) == 4 and ids[0] == pid for ids, pid in zip(df["topk_ids"], df["pair_id"]))
    assert all((np.diff(s) <= 0).all() for s in df["topk_scores"])
    saved = json.loads(out_js.read_text())
    assert saved == metrics
    assert (
        saved["n"] == 12
        and saved["mrr"] == 1.0
        and saved["acc"] == 1.0
        and saved["global_acc"] == 1.0
    )
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
    m = E.evaluate_run(
        "run",
        data,
        "dev",
        tmp_path / "o.parquet",
        tmp_path / "o.json",
        E.EvalSettings(DecodeSettings(3, 100, 0), "text"),
    )
    assert all(not t.startswith("$") for s in seen["s"] for t in s)
    assert m["global_method"] == "exact" and m["view"] == "text" and m["part"] == "dev"


def saved_npt_run(tmp_path, data) -> Path:
    """An untrained NPT saved as a run's model (the real loading and encoding path)."""
    import torch

    from proofmatch.models.encoders import NPTConfig, NPTEncoder, WordVocab
    from proofmatch.models.matcher import Matcher, MatcherConfig

    df = pd.read_parquet(data)
    torch.manual_seed(0)
    vocab = WordVocab.build(
        [list(s) for s in df["statement_tokens"]] + [list(p) for p in df["proof_tokens"]],
        min_count=1,
    )
    npt = NPTConfig(vocab_size=len(vocab), d_model=8, n_layers=1, n_heads=2, d_k=4, max_length=16)
    Matcher(
        MatcherConfig("npt", "bilinear", "both", 16, npt=npt.to_dict()), NPTEncoder(npt), vocab
    ).eval().save_pretrained(tmp_path / "run" / "model")
    return tmp_path / "run"


def test_evaluate_run_with_a_saved_model(tmp_path):
    """The real contract: load_matcher(run_dir) + Matcher.factors of proofmatch.models.matcher (untrained NPT)."""
    data = toy_data(tmp_path)
    m = E.evaluate_run(
        saved_npt_run(tmp_path, data),
        data,
        "test",
        tmp_path / "e.parquet",
        tmp_path / "e.json",
        settings=E.EvalSettings(DecodeSettings(3, 5, 0)),
    )
    assert m["n"] == 12 and m["global_method"] == "sparse" and 0 < m["mrr"] <= 1
    assert m["fallback_edges"] >= m["kbest_deficiency"]
    assert len(pd.read_parquet(tmp_path / "e.parquet")) == 12


def test_evaluate_folder_writes_each_file_as_evaluate_run_does(tmp_path, monkeypatch):
    """One process per run (rule evaluate_run): every (part, test level) of the plan, byte for byte
    the files of one evaluate_run call each, the model loaded once; nothing else in the folder."""
    data = {"a": toy_data(tmp_path)}
    (tmp_path / "b").mkdir()
    data["b"] = toy_data(tmp_path / "b", n_test=9)
    run = saved_npt_run(tmp_path, data["a"])
    loads = []
    load = E._load_matcher
    monkeypatch.setattr(E, "_load_matcher", lambda run_dir: loads.append(run_dir) or load(run_dir))
    plan = [("dev", "a"), ("test", "a"), ("test", "b")]
    out = E.evaluate_folder(
        run, data, plan, tmp_path / "eval" / "run", settings=E.EvalSettings(DecodeSettings(3, 5, 0))
    )
    assert len(loads) == 1 and sorted(out) == ["dev-a", "test-a", "test-b"]
    folder = tmp_path / "eval" / "run"
    assert sorted(f.name for f in folder.iterdir()) == sorted(
        f"{p}-{lv}.{ext}" for p, lv in plan for ext in ("json", "parquet")
    )
    for part, level in plan:
        one = tmp_path / "one"
        E.evaluate_run(
            run,
            data[level],
            part,
            one / "e.parquet",
            one / "e.json",
            settings=E.EvalSettings(DecodeSettings(3, 5, 0)),
        )
        assert (folder / f"{part}-{level}.json").read_bytes() == (one / "e.json").read_bytes()
        assert (folder / f"{part}-{level}.parquet").read_bytes() == (one / "e.parquet").read_bytes()
    assert json.loads((folder / "test-b.json").read_text())["n"] == 9


SETTINGS = E.EvalSettings(DecodeSettings(3, 5, 0))


def test_evaluate_folder_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    data = {"a": toy_data(tmp_path)}
    monkeypatch.setattr(E, "_load_matcher", lambda run_dir: BagMatcher())
    with pytest.raises(ValueError, match="no data file for test level 'b'"):
        E.evaluate_folder("run", data, [("test", "a"), ("test", "b")], tmp_path / "eval", SETTINGS)
    with pytest.raises(ValueError, match="unknown part"):
        E.evaluate_folder("run", data, [("val", "a")], tmp_path / "eval", SETTINGS)
    calls = []
    real = E.evaluate_part

    def fail_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(*args, **kwargs)

    monkeypatch.setattr(E, "evaluate_part", fail_second)
    with pytest.raises(RuntimeError, match="killed"):
        E.evaluate_folder("run", data, [("dev", "a"), ("test", "a")], tmp_path / "eval", SETTINGS)
    assert list(tmp_path.glob("*eval*")) == []  # neither the folder nor its staging copy


def test_evaluate_a_constant_matcher_scores_chance_or_below(tmp_path, monkeypatch):
    """End to end: a matcher that scores every pair alike gets MRR 1/n, acc 0 and global acc 0."""
    data = toy_data(tmp_path)

    class Constant:
        def factors(self, statements, proofs, batch_size=64):
            n = len(statements)
            return (
                np.zeros((n, 3), np.float32),
                np.zeros((n, 3), np.float32),
                np.ones(n, np.float32),
                None,
            )

    monkeypatch.setattr(E, "_load_matcher", lambda run_dir: Constant())
    for exact_max_n in (100, 5):
        m = E.evaluate_run(
            "run",
            data,
            "test",
            tmp_path / "c.parquet",
            tmp_path / "c.json",
            settings=E.EvalSettings(DecodeSettings(4, exact_max_n, 0)),
        )
        assert m["mrr"] == pytest.approx(1 / 12) and m["acc"] == 0.0 and m["global_acc"] == 0.0
        assert "against the gold" in m["assignment_ties"]
