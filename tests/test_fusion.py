"""Fusion of a trained run with BM25 (proofmatch.scoring.fusion, proofmatch.evaluation.fused).

The core on score matrices: per-row normalisation, the fused scores, the dev MRR of every λ and
the choice among them (ties to the smaller λ), rank fusion; then the two workflow steps on a toy
part whose learned half and BM25 each confuse the gold proof with a different other proof, so that
only their fusion ranks every gold proof first.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from proofmatch.config import validate_config
from proofmatch.decoding.assign import DecodeSettings, decode_all
from proofmatch.decoding.local import dense_scores
from proofmatch.evaluation import fused as FD
from proofmatch.evaluation.evaluate import EvalSettings
from proofmatch.scoring import fusion as F
from proofmatch.scoring.lexical import bm25_scorer


def rows_of(M: np.ndarray):
    """A row-chunk score function over a dense matrix."""
    M = np.asarray(M, dtype=np.float32)
    return lambda start, stop: M[start:stop]


def mrr(M: np.ndarray) -> float:
    return float(np.mean(1.0 / F.gold_ranks(np.asarray(M), np.arange(len(M)))))


# ----------------------------------------------------------------------------- the core


def test_standardize_rows_and_constant_rows():
    z = F.standardize(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]))
    assert z.dtype == np.float32
    assert np.allclose(z[0], [-1.2247449, 0.0, 1.2247449]) and (z[1] == 0).all()
    assert np.allclose(F.standardize(np.array([10.0, 30.0])), [-1.0, 1.0])


def test_fuse_checks_shapes_weights_and_normalization():
    a = np.array([[3.0, 1.0, 2.0]])
    assert np.allclose(
        F.fuse(a, 10 * a, 0.5, normalize="zscore"), 1.5 * F.standardize(a)
    )  # each half on one scale
    with pytest.raises(ValueError, match="one shape"):
        F.fuse(a, a[:, :2], 1.0, normalize="zscore")
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite number >= 0"):
            F.fuse(a, a, bad, normalize="zscore")
    with pytest.raises(ValueError, match="unknown fusion normalization"):
        F.fused_scorer(rows_of(a), rows_of(a), 1.0, normalize="minmax")
    with pytest.raises(ValueError, match="finite number"):
        F.weight_mrr(rows_of(a), rows_of(a), 1, [0.0, -2.0], normalize="zscore")


def test_reciprocal_rank_keeps_order_and_ties():
    r = F.reciprocal_rank(np.array([[0.5, 9.0, 0.5, -1.0]]))
    # ranks 2, 1, 2 (a tie shares its best rank), 4
    assert np.allclose(r, [[1 / 62, 1 / 61, 1 / 62, 1 / 64]])
    M = np.random.default_rng(0).normal(size=(20, 20))
    assert mrr(F.reciprocal_rank(M)) == mrr(M)  # a monotone map of each row: the same ranks


def confusing_halves(n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Learned ties gold i with i^2, lexical ties it with i^1 (each half alone: every gold rank 2)."""
    idx = np.arange(n)
    learned = (idx[:, None] // 4 == idx[None, :] // 4) & (idx[:, None] % 2 == idx[None, :] % 2)
    lexical = idx[:, None] // 2 == idx[None, :] // 2
    return learned.astype(np.float32) * 3.0, lexical.astype(np.float32) * 40.0


@pytest.mark.parametrize("normalize", F.NORMALIZE)
def test_fusion_beats_both_halves_where_they_err_differently(normalize):
    learned, lexical = confusing_halves()
    assert mrr(learned) == mrr(lexical) == 0.5
    by_weight = F.weight_mrr(
        rows_of(learned), rows_of(lexical), 8, F.WEIGHT_GRID, normalize=normalize
    )
    assert set(by_weight) == set(F.WEIGHT_GRID)
    assert by_weight[0.0] == 0.5  # λ = 0 is the learned ranks
    assert all(m == 1.0 for w, m in by_weight.items() if w > 0)
    assert F.choose_weight(by_weight) == 0.125  # every λ > 0 ties at 1.0: the smallest
    scorer = F.fused_scorer(rows_of(learned), rows_of(lexical), 0.125, normalize=normalize)
    local, glob = decode_all(scorer, 8, DecodeSettings(8, 100, 0))
    assert local.mrr == 1.0 and glob.acc == 1.0


def noisy(n: int, seed: int, signal: float = 1.5) -> np.ndarray:
    return signal * np.eye(n) + np.random.default_rng(seed).normal(size=(n, n))


def test_weight_is_chosen_on_dev_and_carries_to_test():
    """Two halves with independent errors: λ chosen on a dev pool lies near 1 (equal noise), and on
    a fresh test pool the fused scores at that λ beat both halves."""
    dev = F.weight_mrr(
        rows_of(noisy(300, 1)),
        rows_of(2.0 * noisy(300, 2) + 7.0),
        300,
        F.WEIGHT_GRID,
        chunk_rows=64,
        normalize="zscore",
    )
    weight = F.choose_weight(dev)
    assert 0.5 <= weight <= 2.0, dev
    assert dev[weight] > max(dev[0.0], dev[8.0]) + 0.03
    learned, lexical = noisy(300, 3), 2.0 * noisy(300, 4) + 7.0
    fused = dense_scores(
        F.fused_scorer(rows_of(learned), rows_of(lexical), weight, normalize="zscore"), 300
    )
    assert mrr(fused) > max(mrr(learned), mrr(lexical)) + 0.03
    assert F.scorer_mrr(rows_of(learned), 300, chunk_rows=7) == pytest.approx(mrr(learned))


def test_choose_weight_ties_go_to_the_smaller_weight():
    assert F.choose_weight({2.0: 0.5, 0.5: 0.5, 1.0: 0.4}) == 0.5
    assert F.choose_weight({0.0: 0.3, 4.0: 0.31}) == 4.0
    with pytest.raises(ValueError, match="no fusion weights"):
        F.choose_weight({})


def test_the_config_grid_is_the_modules():
    cfg = validate_config({})["fusion"]
    assert tuple(cfg["weights"]) == F.WEIGHT_GRID
    assert cfg["normalize"] == "zscore" and cfg["runs"] == ["npt-local", "scratchbert-local"]


# ----------------------------------------------------------------------------- the workflow's two steps


class KeyMatcher:
    """A model stand-in that sees only the ``sk<key>``/``pk<key>`` tokens, which BM25 cannot
    match (a statement's and a proof's differ): score 1 when the keys agree."""

    def __init__(self):
        self.calls = 0

    def factors(self, statements, proofs, batch_size=64):
        self.calls += 1
        keys = sorted({t[2:] for doc in statements + proofs for t in doc if t[:2] in ("sk", "pk")})
        onehot = lambda docs, prefix: np.array(  # noqa: E731
            [[float(f"{prefix}{k}" in doc) for k in keys] for doc in docs], np.float32
        )
        n = len(statements)
        return (
            onehot(statements, "sk"),
            onehot(proofs, "pk"),
            np.zeros(n, np.float32),
            np.zeros(n, np.float32),
        )


def confusing_part(tmp_path) -> str:
    """dev and test parts of 8 pairs each: BM25 ties pair i with i^1 (shared symbol), the
    KeyMatcher ties it with i^2 (shared key)."""
    rows = []
    for part in ("train", "dev", "test"):
        for i in range(8):
            key, sym = f"{part}{i // 4}x{i % 2}", f"${part}b{i // 2}"
            rows.append(
                {
                    "pair_id": f"a/{part}{i}",
                    "article_id": "a",
                    "part": part,
                    "statement_tokens": [sym, f"sk{key}"],
                    "proof_tokens": [sym, f"pk{key}", "so"],
                }
            )
    path = tmp_path / "data.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    return str(path)


def test_the_toy_halves_are_what_the_fusion_test_needs(tmp_path):
    data = pd.read_parquet(confusing_part(tmp_path))
    test = data[data["part"] == "test"]
    learned, lexical = FD.halves(KeyMatcher(), test)
    L, B = dense_scores(learned, 8), dense_scores(lexical, 8)
    assert mrr(L) == mrr(B) == 0.5
    ref = bm25_scorer(
        [list(t) for t in test["statement_tokens"]], [list(t) for t in test["proof_tokens"]]
    )
    assert np.array_equal(
        B, dense_scores(ref, 8)
    )  # the baseline's BM25, fitted on the part's proofs
    with pytest.raises(ValueError, match="input view"):
        FD.halves(KeyMatcher(), test, view="pictures")


def test_weight_on_dev_then_fused_evaluation_on_test(tmp_path, monkeypatch):
    data = confusing_part(tmp_path)
    matcher = KeyMatcher()
    monkeypatch.setattr(FD, "_load_matcher", lambda run_dir: matcher)
    weight_json = tmp_path / "run" / "fusion.json"
    info = FD.fusion_weight("run", data, weight_json, weights=[0.0, 0.5, 2.0], normalize="zscore")
    saved = json.loads(weight_json.read_text())
    assert saved == info
    assert saved["weight"] == 0.5 and saved["part"] == "dev" and saved["n"] == 8
    assert saved["lexical"] == "bm25" and saved["normalize"] == "zscore"
    assert saved["mrr_by_weight"] == {"0.0": 0.5, "0.5": 1.0, "2.0": 1.0}
    assert saved["learned_mrr"] == 0.5 and saved["lexical_mrr"] == 0.5 and saved["mrr"] == 1.0

    out_pq, out_js = tmp_path / "eval" / "test-x.parquet", tmp_path / "eval" / "test-x.json"
    metrics = FD.evaluate_fusion(
        "run",
        weight_json,
        data,
        "test",
        out_pq,
        out_js,
        settings=EvalSettings(DecodeSettings(8, 100, 0)),
    )
    assert json.loads(out_js.read_text()) == metrics
    assert metrics["mrr"] == metrics["acc"] == metrics["global_acc"] == 1.0 and metrics["n"] == 8
    assert metrics["weight"] == 0.5 and metrics["method"] == "fusion" and metrics["part"] == "test"
    # the keys of a model's evaluation, so the tables read it as one
    for key in (
        "n",
        "mrr",
        "acc",
        "global_acc",
        "global_method",
        "fallback_edges",
        "kbest_deficiency",
        "hubness",
        "view",
        "seed",
        "exact_max_n",
        "run_dir",
        "data",
    ):
        assert key in metrics, key
    ranks = pd.read_parquet(out_pq)
    assert list(ranks.columns) == [
        "pair_id",
        "gold_rank",
        "top1",
        "global_pred",
        "topk_ids",
        "topk_scores",
    ]
    assert (ranks["gold_rank"] == 1).all()

    # the stored λ is the one used: λ = 0 gives the learned ranks back
    weight_json.write_text(json.dumps({**saved, "weight": 0.0}))
    again = FD.evaluate_fusion(
        "run",
        weight_json,
        data,
        "test",
        out_pq,
        out_js,
        settings=EvalSettings(DecodeSettings(8, 100, 0)),
    )
    assert again["mrr"] == 0.5 and again["weight"] == 0.0


def test_fuse_run_is_both_steps_in_one_process(tmp_path, monkeypatch):
    """Rule fuse_run: the weight on the run's own level's dev part, then each (part, test level)
    at that weight, byte for byte what fusion_weight and evaluate_fusion write, the model loaded once."""
    data = confusing_part(tmp_path)
    loads = []
    monkeypatch.setattr(FD, "_load_matcher", lambda run_dir: loads.append(run_dir) or KeyMatcher())
    weight_json, folder = tmp_path / "run" / "fusion.json", tmp_path / "eval" / "run"
    info = FD.fuse_run(
        "run",
        {"lv": data},
        "lv",
        [("test", "lv")],
        weight_json,
        folder,
        weights=[0.0, 0.5, 2.0],
        normalize="zscore",
        settings=EvalSettings(DecodeSettings(8, 100, 0)),
    )
    assert len(loads) == 1 and info["weight"] == 0.5
    assert sorted(f.name for f in folder.iterdir()) == ["test-lv.json", "test-lv.parquet"]
    one = tmp_path / "one"
    FD.fusion_weight("run", data, one / "fusion.json", weights=[0.0, 0.5, 2.0], normalize="zscore")
    assert weight_json.read_bytes() == (one / "fusion.json").read_bytes()
    FD.evaluate_fusion(
        "run",
        weight_json,
        data,
        "test",
        one / "e.parquet",
        one / "e.json",
        settings=EvalSettings(DecodeSettings(8, 100, 0)),
    )
    assert (folder / "test-lv.json").read_bytes() == (one / "e.json").read_bytes()
    assert (folder / "test-lv.parquet").read_bytes() == (one / "e.parquet").read_bytes()
    assert json.loads((folder / "test-lv.json").read_text())["weight_file"] == str(weight_json)
    with pytest.raises(ValueError, match="run's level 'other'"):
        FD.fuse_run(
            "run",
            {"lv": data},
            "other",
            [("test", "lv")],
            weight_json,
            folder,
            weights=[0.0],
            normalize="zscore",
            settings=EvalSettings(DecodeSettings(8, 100, 0)),
        )


def test_rank_fusion_weight_and_a_weight_file_not_chosen_on_dev(tmp_path, monkeypatch):
    data = confusing_part(tmp_path)
    monkeypatch.setattr(FD, "_load_matcher", lambda run_dir: KeyMatcher())
    info = FD.fusion_weight(
        "run", data, tmp_path / "fusion.json", weights=F.WEIGHT_GRID, normalize="rank"
    )
    assert info["normalize"] == "rank" and info["weight"] == 0.125 and info["mrr"] == 1.0
    assert FD.read_weight(tmp_path / "fusion.json") == (0.125, "rank")
    with pytest.raises(ValueError, match="chosen on dev"):
        FD.read_weight({**info, "part": "test"})
    with pytest.raises(ValueError, match="not a fusion weight file"):
        FD.read_weight({"weight": 1.0})
    with pytest.raises(ValueError, match="unknown fusion normalization"):
        FD.measure_weights(F.fused_scorer, F.fused_scorer, 8, F.WEIGHT_GRID, normalize="minmax")
