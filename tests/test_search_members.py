"""A fusion index of several learned runs (proofmatch.search.members): built from the small search
demo's NPT run and a tiny random BERT (a zero-shot run of a checkpoint saved in a folder), its
scores are the weighted sum of each run's z-scores and BM25's computed here directly, explanations
split each token's share by run, bad weights are refused naming the option, and the CLI and the
web page serve it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from toydata import tiny_bert_checkpoint, train_params

from proofmatch import cli
from proofmatch.data.splits import read_parts
from proofmatch.models.matcher import load_matcher
from proofmatch.scoring.fusion import standardize
from proofmatch.scoring.lexical import bm25_weights, count_vectors
from proofmatch.scoring.tokens import token_lists
from proofmatch.search.build import build_index
from proofmatch.search.explain import explain
from proofmatch.search.index import SearchIndex, top_order
from proofmatch.search.members import system_by_hand

pytestmark = pytest.mark.usefixtures("one_thread")

WEIGHTS, BM25_WEIGHT = (1.0, 0.5), 0.25
TEXT = r"Let $f$ be continuous on $[a, b]$. Then $f$ is bounded."


@pytest.fixture(scope="module")
def bert_run(search_demo, tmp_path_factory):
    """A zero-shot run of a tiny random BertModel with a WordPiece tokenizer of the demo's words."""
    from proofmatch.models.train import train_run

    root = tmp_path_factory.mktemp("bert")
    data = pd.read_parquet(search_demo["data"])
    texts = [" ".join(map(str, t)).replace("$", "") for t in data["statement_tokens"]]
    tiny_bert_checkpoint(root / "ckpt", texts, vocab_size=200)
    params = train_params("mathbert", max_length=48, batch_size=8, epochs=1, eval_every=1)
    run = root / "run"
    train_run(
        search_demo["data"], run, "mathbert", "zeroshot", "both", params, seed=0,
        pretrained_dir=root / "ckpt",
    )  # fmt: skip
    return run


@pytest.fixture(scope="module")
def multi(search_demo, bert_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("multi") / "index"
    runs = [("npt", search_demo["run"]), ("bert", bert_run)]
    build_index(
        out,
        search_demo["data"],
        method="fusion",
        pairs_parquet=search_demo["pairs"],
        articles_parquet=search_demo["articles"],
        system=system_by_hand(runs, list(WEIGHTS), BM25_WEIGHT),
    )
    return SearchIndex(out)


def _direct(search_demo, runs, ix, q_id, part):
    """Each run's scores and BM25's of statement ``q_id`` against the candidates, computed here:
    each part encoded with one ``factors`` call as building does, then ``A @ B.T + row + col``."""
    parts = ix.meta["parts"]
    frames = read_parts(search_demo["data"], parts)
    data = pd.concat(frames, ignore_index=True)
    cols = np.arange(len(data)) if part is None else np.flatnonzero(data["part"] == part)
    qi = int(np.flatnonzero(data["pair_id"] == q_id)[0])
    rows = []
    for run in runs:
        m = load_matcher(run, "cpu")
        got = [m.factors(list(f["statement_tokens"]), list(f["proof_tokens"])) for f in frames]
        A, B, row, col = (np.concatenate([g[k] for g in got]) for k in range(4))
        S = A[qi].astype(np.float64) @ B.T.astype(np.float64) + row[qi] + col
        rows.append(S[cols])
    W, vocab = bm25_weights(token_lists(data["proof_tokens"]))
    st = token_lists(data["statement_tokens"].iloc[[qi]])
    bm25 = np.asarray((count_vectors(st, vocab) @ W[cols].T).toarray()[0], np.float64)
    return rows, bm25, cols


@pytest.mark.parametrize("part", [None, "test"])
def test_scores_are_the_weighted_sum_of_each_runs_zscores(search_demo, bert_run, multi, part):
    ix = multi
    meta = ix.meta
    assert [m["name"] for m in meta["members"]] == ["npt", "bert"]
    assert [m["weight"] for m in meta["members"]] == list(WEIGHTS)
    assert meta["fusion"]["weight"] == BM25_WEIGHT and meta["fusion"]["source"] == "hand"
    assert meta["members"][1]["run"]["run_dir"] == str(bert_run)
    assert meta["members"][0]["run"]["fingerprint"] is not None
    assert "run" not in meta and "model" not in meta
    ids = ix.table.loc[ix.table["part"] == "test", "pair_id"].tolist()
    for pid in ids[::23]:
        rows, bm25, cols = _direct(search_demo, [search_demo["run"], bert_run], ix, pid, part)
        fused = sum(w * standardize(s) for w, s in zip(WEIGHTS, rows)) + BM25_WEIGHT * standardize(
            bm25
        )
        np.testing.assert_allclose(ix.scores(ix.parse(pid), part), fused, rtol=1e-4, atol=1e-4)
        gold = int(np.flatnonzero(ix.table["pair_id"].to_numpy()[cols] == pid)[0])
        _, hits = ix.search(pid, k=10, part=part)
        assert [h.row for h in hits] == cols[top_order(fused, 10, gold)].tolist()
        for h in hits:
            c = int(np.flatnonzero(cols == h.row)[0])
            assert [m["name"] for m in h.members] == ["npt", "bert"]
            for m, w, s in zip(h.members, WEIGHTS, rows):
                assert m["score"] == pytest.approx(s[c], rel=1e-4, abs=1e-4)
                assert m["weighted_z"] == pytest.approx(w * standardize(s)[c], abs=1e-4)
                lo, hi = (1 + int((s > s[c] + eps).sum()) for eps in (1e-3, -1e-3))
                assert lo <= m["rank"] <= hi
            assert h.learned == pytest.approx(sum(m["weighted_z"] for m in h.members), abs=1e-4)
            assert h.score == pytest.approx(
                h.learned + BM25_WEIGHT * standardize(bm25)[c], abs=1e-4
            )


def test_explain_splits_the_learned_share_by_run(multi):
    ix = multi
    _, hits = ix.search(TEXT, k=3, part="test")
    e = explain(ix, TEXT, hits[1].pair_id, part="test")
    assert e["score"] == pytest.approx(hits[1].score, rel=1e-4, abs=1e-4)
    assert e["fusion"]["learned"] == pytest.approx(hits[1].learned, abs=1e-4)
    assert [m["name"] for m in e["fusion"]["members"]] == ["npt", "bert"]
    for m, hm in zip(e["fusion"]["members"], hits[1].members):
        assert m["score"] == pytest.approx(hm["score"], rel=1e-4, abs=1e-4)
        assert m["share"] == pytest.approx(hm["weighted_z"], abs=1e-4)
    for t in e["statement"] + e["proof"]:
        assert t["weight"] == pytest.approx(t["learned"] + t["bm25"], abs=1e-9)
        assert t["learned"] == pytest.approx(sum(t["members"].values()), abs=1e-9)
    assert any(t["members"]["bert"] != 0 for t in e["statement"])
    assert e["budget"]["encoder_batches"] == 4


def test_one_run_indexes_keep_their_files(search_demo, search_index):
    meta = search_index.meta
    assert "members" not in meta and meta["run"]["run_dir"] == str(search_demo["run"])
    assert not search_index.members and search_index.describe()["run_dir"]


def _index(search_demo, tmp_path, *extra):
    return cli.main(
        ["index", str(search_demo["data"]), "--out", str(tmp_path / "ix"), "--parts", "test"]
        + list(extra)
    )


def test_bad_weights_are_refused_naming_the_option(search_demo, bert_run, tmp_path, capsys):
    two = ["--run", f"npt={search_demo['run']}", "--run", f"bert={bert_run}", "--fusion"]
    for extra, message in [
        (["--weights", "1", "--bm25-weight", "0.5"], "--weights: 1 weights for 2 runs"),
        (["--weights", "1", "-0.5", "--bm25-weight", "0.5"], "--weights: a weight must be"),
        (["--weights", "1", "nan", "--bm25-weight", "0.5"], "--weights: a weight must be"),
        (["--weights", "1", "1", "--bm25-weight", "-1"], "--bm25-weight: a weight must be"),
        (["--weights", "0", "0", "--bm25-weight", "1"], "every run's weight is 0"),
        (["--weights", "1", "1"], "--bm25-weight"),
        (["--weights", "1", "1", "--bm25-weight", "1", "--fusion-weight", "1"], "--fusion-weight"),
    ]:
        assert _index(search_demo, tmp_path, *two, *extra) == 2, extra
        assert message in capsys.readouterr().err, extra
    one = ["--run", str(search_demo["run"]), "--fusion", "--weights", "1", "--bm25-weight", "1"]
    assert _index(search_demo, tmp_path, *one) == 2
    assert "--weights is for a fusion of two or more runs" in capsys.readouterr().err
    plain = two[:-1] + ["--weights", "1", "1", "--bm25-weight", "1"]
    assert _index(search_demo, tmp_path, *plain) == 2
    assert "add --fusion" in capsys.readouterr().err
    assert not (tmp_path / "ix").exists()


def test_weights_from_a_bench_json_are_recorded_with_it(search_demo, bert_run, tmp_path, capsys):
    bench = tmp_path / "bench.json"
    system = {"weights": {"npt": 1.0, "bm25": 0.75, "bert": 0.3}, "dev_mrr": 0.5}
    bench.write_text(json.dumps({"npt": {"weights": {"npt": 1.0}}, "greedy:npt+bert": system}))
    two = ["--run", f"npt={search_demo['run']}", "--run", f"bert={bert_run}", "--fusion"]
    assert _index(search_demo, tmp_path, *two, "--weights-from", str(bench)) == 2
    assert "--weights-from needs --system" in capsys.readouterr().err
    assert _index(search_demo, tmp_path, *two, "--weights-from", str(bench), "--system", "npt") == 2
    assert "fuses the runs ['npt'], the runs given are ['bert', 'npt']" in capsys.readouterr().err
    args = ["--weights-from", str(bench), "--system", "greedy:npt+bert"]
    assert _index(search_demo, tmp_path, *two, *args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["weights"] == {"npt": 1.0, "bert": 0.3} and out["fusion_weight"] == 0.75
    meta = json.loads((tmp_path / "ix/index.json").read_text())
    f = meta["fusion"]
    assert f["source"] == "bench" and f["system"] == "greedy:npt+bert" and f["recorded"] == system
    assert len(f["file_sha256"]) == 64 and f["file"] == str(bench)


def test_cli_and_web_serve_it(multi, capsys):
    from fastapi.testclient import TestClient

    from proofmatch.search.web import create_app

    assert cli.main(["search", str(multi.path), TEXT, "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "fusion (npt (1) + bert (0.5) + BM25, λ = 0.25, given by hand)" in out
    assert "     npt " in out and "     bert " in out
    pid = multi.search(TEXT, k=1)[1][0].pair_id
    assert cli.main(["search", str(multi.path), TEXT, "--explain", pid]) == 0
    assert "  run bert (weight 0.5): score " in capsys.readouterr().out
    client = TestClient(create_app(multi))
    body = client.get("/api/search", params={"q": TEXT, "k": 3, "part": "test"}).json()
    assert [m["name"] for m in body["results"][0]["members"]] == ["npt", "bert"]
    assert [m["name"] for m in body["index"]["members"]] == ["npt", "bert"]
    page = client.get("/", params={"q": TEXT, "part": "test"})
    assert page.status_code == 200 and "bert" in page.text and "npt (1) + bert (0.5)" in page.text
    pid = body["results"][0]["pair_id"]
    e = client.get("/api/explain", params={"q": TEXT, "id": pid, "part": "test"}).json()
    assert e["fusion"]["members"][1]["name"] == "bert"


def test_bench_search_times_it_and_gives_its_mrr(multi, tmp_path):
    """bench_search on the fusion of two runs: each run's synthetic proofs, the in-process and
    HTTP rows, and the MRR of the test statements by the index's own scoring."""
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "rows.json"
    bench = Path(__file__).resolve().parents[1] / "bench/bench_search.py"
    args = ["--sizes", "300", "--queries", "3", "--repeats", "1", "--clients", "1", "--mrr", "test"]
    done = subprocess.run(
        [sys.executable, str(bench), "--index", str(multi.path), *args, "--out", str(out)],
        timeout=600,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.read_text())
    (mrr,) = [r for r in rows if r.get("bench", "").startswith("MRR")]
    ids = multi.table.loc[multi.table["part"] == "test", "pair_id"].tolist()
    ranks = [
        next(h.rank for h in multi.search(p, k=len(ids), part="test")[1] if h.is_own_proof)
        for p in ids
    ]
    assert mrr["mrr_id_query"] == pytest.approx(np.mean(1 / np.array(ranks)), abs=1e-4)
    assert {r["n"] for r in rows if "p50_ms" in r} == {300}


def test_the_server_wraps_each_runs_encoder_and_concurrent_searches_equal_sequential_ones(multi):
    """The server's searcher wraps every run's query encoder (search.batching); eight searches at
    once give the hits and scores of each searched alone."""
    from concurrent.futures import ThreadPoolExecutor

    from proofmatch.search.batching import BatchedEncoder
    from proofmatch.search.web import Searcher

    texts = [TEXT, *(str(t)[:300] for t in multi.table["statement_text"].iloc[:7])]
    alone = [multi.search(t, k=10) for t in texts]
    searcher = Searcher(multi, 4000, 50)
    assert len(searcher.encoders) == len(multi.members) == 2
    assert all(isinstance(m.query_matcher, BatchedEncoder) for m in multi.members)
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda t: searcher.run(t, 10, 1, ""), texts))
    for (_, hits), (_, hits_together) in zip(alone, together):
        assert [h.pair_id for h in hits] == [h.pair_id for h in hits_together]
        np.testing.assert_allclose(
            [h.score for h in hits], [h.score for h in hits_together], rtol=1e-5, atol=1e-5
        )
