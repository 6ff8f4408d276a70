"""TF-IDF and BM25 (proofmatch.scoring.lexical) and their baselines (proofmatch.evaluation.baselines) on a toy set."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from rank_bm25 import BM25Okapi

from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation import baselines as B
from proofmatch.scoring import lexical as L


def toy_parquet(tmp_path, n_test: int = 10):
    """Each pair shares two distinctive math symbols; everything else is common vocabulary.

    The symbols come from one pool used by every part, so TF-IDF (fitted on train) knows them.
    """
    rng = np.random.default_rng(0)
    common = ["let", "be", "a", "the", "of", "$=", "$+", "$x", "."]
    rows = []
    for part, count in (("train", 12), ("dev", 4), ("test", n_test)):
        for i in range(count):
            own = [f"$s{2 * i}", f"$s{2 * i + 1}"]
            rows.append(
                {
                    "pair_id": f"{part}-{i}",
                    "article_id": f"art{i}",
                    "part": part,
                    "statement_tokens": list(rng.choice(common, 6)) + own,
                    "proof_tokens": list(rng.choice(common, 12)) + own + own[:1],
                }
            )
    path = tmp_path / "level.parquet"
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def test_bm25_sparse_scores_equal_rank_bm25_get_scores():
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(60)] + ["$a", "$A", "a"]
    docs = [list(rng.choice(vocab, int(rng.integers(1, 25)))) for _ in range(30)]
    queries = [list(rng.choice(vocab + ["unseen"], int(rng.integers(0, 15)))) for _ in range(30)]
    queries[0] = ["w1", "w1", "w1"]  # repeated query tokens count once per occurrence
    ours = L.bm25_scorer(queries, docs)(0, 30)
    bm = BM25Okapi(docs)
    ref = np.array([bm.get_scores(q) for q in queries])
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


def test_tfidf_keeps_single_character_case_and_math_typing():
    train = [["$x", "x", "X", "$A"], ["$x", "y"]]
    f = L.tfidf_scorer(train, [["$x"], ["x"], ["X"]], [["$x"], ["x"], ["X"]])
    S = f(0, 3)
    np.testing.assert_allclose(S, np.eye(3), atol=1e-6)  # $x, x and X are three different tokens


@pytest.mark.parametrize("method", B.METHODS)
def test_run_baseline_on_toy_set(tmp_path, method):
    data = toy_parquet(tmp_path)
    out_pq, out_js = tmp_path / f"{method}.parquet", tmp_path / f"{method}.json"
    m = B.run_baseline(method, data, "test", out_pq, out_js, DecodeSettings(5, 4, 0))
    assert m["n"] == 10 and m["method"] == method and m["global_method"] == "sparse"
    assert m["acc"] == 1.0 and m["mrr"] == 1.0 and m["global_acc"] == 1.0
    df = pd.read_parquet(out_pq)
    assert list(df.columns) == [
        "pair_id",
        "gold_rank",
        "top1",
        "global_pred",
        "topk_ids",
        "topk_scores",
    ]
    assert (df["top1"] == df["pair_id"]).all()
    assert json.loads(out_js.read_text())["hubness"]["=1"]["proofs"] == 10


def test_run_baseline_exact_path_and_errors(tmp_path):
    data = toy_parquet(tmp_path)
    m = B.run_baseline(
        "bm25", data, "dev", tmp_path / "o.parquet", tmp_path / "o.json", DecodeSettings(3, 100, 0)
    )
    assert m["global_method"] == "exact" and m["n"] == 4
    with pytest.raises(ValueError, match="unknown baseline"):
        B.run_baseline(
            "dice",
            data,
            "dev",
            tmp_path / "o.parquet",
            tmp_path / "o.json",
            DecodeSettings(3, 100, 0),
        )
    with pytest.raises(ValueError, match="non-empty proof"):
        L.bm25_scorer([["a"]], [[]])


def test_a_baseline_job_does_not_import_torch(tmp_path):
    """The workflow's baseline job passes its threads, and then never imports torch (2 s of a
    5 s job): the same files as a run that takes torch's thread count."""
    import subprocess
    import sys

    data = toy_parquet(tmp_path)
    code = (
        "import sys\n"
        "from proofmatch.decoding.assign import DecodeSettings\n"
        "from proofmatch.evaluation.baselines import run_baseline\n"
        f"run_baseline('bm25', {str(data)!r}, 'test', {str(tmp_path / 'a.parquet')!r}, "
        f"{str(tmp_path / 'a.json')!r}, DecodeSettings(5, 4, 0), threads=1)\n"
        "print('torch' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split()[-1] == "False", run.stdout + run.stderr
    B.run_baseline(
        "bm25", data, "test", tmp_path / "b.parquet", tmp_path / "b.json", DecodeSettings(5, 4, 0)
    )
    assert pd.read_parquet(tmp_path / "a.parquet").equals(pd.read_parquet(tmp_path / "b.parquet"))


def test_tfidf_paper_sees_what_the_reference_vectorizer_saw():
    assert L.reference_text(["Let", "$x~bold", "$A", "$≤", "$sin"]) == "Let x____bold A ≤ sin"
    # defaults: lowercase, tokens of 2+ word characters: one-letter symbols vanish, $Ab meets ab
    train = [["Let", "$x", "$Ab", "ab", "x~bold"], ["Let", "$F~script", "cover"]]
    f = L.tfidf_paper_scorer(train, [["$x", "$Ab"], ["$F~script"]], [["ab"], ["F~script", "$x"]])
    S = f(0, 2)
    assert S[0, 0] == pytest.approx(1.0) and S[0, 1] == 0.0  # $x is gone, $Ab == ab
    assert S[1, 1] == 0.0  # F____script (math) and "F~script" ("f", "script") differ


def test_count_vectors_equal_scikit_learns():
    """scoring.lexical.count_vectors (built directly, no scikit-learn import) gives exactly what
    CountVectorizer(vocabulary=…).transform gives: tokens outside the vocabulary not counted,
    repeats summed, an empty document an empty row."""
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer

    from proofmatch.scoring.lexical import as_is, count_vectors

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)] + ["$x", "$=", "Proof", "."]
    vocab = {w: i for i, w in enumerate(rng.permutation(words[:35]))}
    docs = [list(rng.choice(words, size=int(rng.integers(0, 30)))) for _ in range(50)] + [[]]
    ours = count_vectors(docs, vocab)
    theirs = CountVectorizer(analyzer=as_is, lowercase=False, vocabulary=vocab).transform(docs)
    assert ours.shape == theirs.shape and ours.dtype == np.float64
    assert (ours != theirs).nnz == 0 and ours.has_sorted_indices
