"""A pretrained checkpoint (the MathBERT column) below fine-tuning: what was loaded, the zero-shot
run, the frozen encoder's bilinear head and its cached vectors, the top layers that train, and the
tables' caption naming the checkpoint. A tiny random BERT saved in a folder stands in for it: no
test downloads or reads a real checkpoint."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from toydata import tiny_bert_checkpoint, toy_pairs, train_params

from proofmatch.artifacts import write_parquet
from proofmatch.models import identity
from proofmatch.models.matcher import build_matcher, load_matcher
from proofmatch.models.params import TrainParams
from proofmatch.models.selection import rank_metrics
from proofmatch.models.train import train_run

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny_pretrained(tmp_path_factory):
    """A random tiny BertModel and an uncased WordPiece tokenizer on untyped words (as a checkpoint
    pretrained elsewhere has), saved in a folder like a downloaded one."""
    rows = toy_pairs(n_articles=4, seed=9)
    texts = [" ".join(t).replace("$", "") for t in rows["statement_tokens"]] * 3
    return tiny_bert_checkpoint(tmp_path_factory.mktemp("tiny-pretrained"), texts, vocab_size=120)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    d = tmp_path_factory.mktemp("pretrained-data")
    write_parquet(toy_pairs(n_articles=12, pairs_per_article=6, seed=3), d / "toy.parquet")
    return d / "toy.parquet"


def params(**fields) -> TrainParams:
    """MathBERT's params under the schema's defaults, shortened for a test."""
    base = {"max_length": 48, "batch_size": 8, "head_batch_size": 8, "head_epochs": 4}
    base.update(epochs=1, eval_every=1)
    return train_params("mathbert", **{**base, **fields})


def test_identify_names_the_checkpoint_from_its_config_and_weights(tiny_pretrained, monkeypatch):
    found = identity.identify(tiny_pretrained)
    weights = (tiny_pretrained / "model.safetensors").read_bytes()
    import hashlib

    assert found.sha256 == hashlib.sha256(weights).hexdigest()
    assert found.shape == "BertModel 2×16" and found.note == "not MathBERT"
    assert found.column().startswith(f"MathBERT column: {found.name} (not MathBERT), BertModel")
    # a known digest names it and says what it is
    monkeypatch.setitem(identity.KNOWN, found.sha256, ("all-MiniLM-L6-v2", "general English"))
    identity._identify.cache_clear()
    known = identity.identify(tiny_pretrained)
    assert known.label() == "all-MiniLM-L6-v2 (general English)"
    identity._identify.cache_clear()
    assert identity.identify("tbs17/MathBERT").label() == "tbs17/MathBERT"  # a hub id: itself
    assert identity.identify("some/encoder").note == "not MathBERT"


def test_pretrained_settings_are_mathberts_own():
    """A pretrained checkpoint's settings are MathBERT's settings object; ScratchBERT's hold
    (and its fingerprint records) none of them."""
    from proofmatch.models.checkpoint import fingerprint

    own = {"normalize", "cosine_scale", "train_layers", "head_epochs", "head_learning_rate"}
    p = train_params("scratchbert")
    assert not own & set(fingerprint(p, 0, ["a/1"])["params"])
    mb = params()
    s = mb.encoder
    assert s.normalize and s.cosine_scale == 20.0 and s.pooling == "mean"
    assert s.score_cosine() == 20.0 and p.encoder.score_cosine() is None
    assert own <= set(fingerprint(mb, 0, ["a/1"])["params"])


def test_zeroshot_run_scores_the_cosine_of_the_checkpoints_vectors(toy, tiny_pretrained, tmp_path):
    out = tmp_path / "zs"
    result = train_run(
        toy, out, "mathbert", "zeroshot", "both", params(), seed=0, pretrained_dir=tiny_pretrained
    )
    for name in ("metrics.json", "metrics.csv", "curve.png", "model/model.safetensors"):
        assert (out / name).exists(), name
    m = load_matcher(out, device="cpu")
    assert m.config.normalize and m.config.pooling == "mean" and m.config.plain_math
    assert torch.equal(m.W.detach(), torch.eye(16)) and float(m.b.detach()) == 0.0
    assert m.config.checkpoint["sha256"] == identity.identify(tiny_pretrained).sha256
    S = m.embed([["Let", "$a"], ["$b", "is", "a", "set"]])
    torch.testing.assert_close(S.norm(dim=1), torch.ones(2))
    from proofmatch.data.splits import read_parts

    (dev,) = read_parts(toy, ["dev"])
    again = rank_metrics(m, list(dev["statement_tokens"]), list(dev["proof_tokens"]))
    assert result["dev_mrr"] == pytest.approx(again["mrr"], abs=1e-6)
    assert result["epochs"] == 0 and result["n_trained_parameters"] == 0
    assert TrainParams.from_record(result["fingerprint"]) == params()


def test_frozen_head_trains_on_cached_vectors_and_never_loses_to_zero_shot(
    toy, tiny_pretrained, tmp_path, monkeypatch
):
    out = tmp_path / "frozen"
    p = params(head_epochs=6, head_learning_rate=0.05)
    zs = train_run(
        toy, tmp_path / "zs", "mathbert", "zeroshot", "both", p, 0, None, tiny_pretrained
    )
    fr = train_run(toy, out, "mathbert", "frozen", "both", p, 0, None, tiny_pretrained)
    assert fr["dev_mrr"] >= zs["dev_mrr"] - 1e-9  # epoch 0 (W = I) is the zero-shot model
    history = list(pd.read_csv(out / "metrics.csv")["dev_mrr"])
    assert len(history) == 7 and history[0] == pytest.approx(zs["dev_mrr"], abs=1e-6)
    m = load_matcher(out, device="cpu")
    assert m.config.score_scale == 20.0
    if fr["best_epoch"] > 0:
        assert not torch.equal(m.W.detach(), torch.eye(16))
    # the encoder's weights are the checkpoint's: only W trained
    fresh = build_matcher("mathbert", "frozen", "both", p, None, None, tiny_pretrained)
    for k, v in fresh.encoder.state_dict().items():
        assert torch.equal(v, m.encoder.state_dict()[k]), k
    # the vectors are cached: a second run with another head reads them and encodes nothing
    monkeypatch.setattr(
        type(m), "embed", lambda *a, **k: (_ for _ in ()).throw(AssertionError("encoded again"))
    )
    p2 = p.replaced(head_epochs=2)
    again = train_run(toy, out, "mathbert", "frozen", "both", p2, 0, None, tiny_pretrained)
    assert again["best_epoch"] <= 2


def test_train_layers_freezes_all_but_the_top(tiny_pretrained, toy):
    m = build_matcher(
        "mathbert", "local", "both", params(train_layers=1), None, None, tiny_pretrained
    )
    trained = {n for n, t in m.encoder.named_parameters() if t.requires_grad}
    assert trained and all(n.startswith("bert.encoder.layer.1.") for n in trained)
    with pytest.raises(ValueError, match="train_layers 3"):
        build_matcher(
            "mathbert", "local", "both", params(train_layers=3), None, None, tiny_pretrained
        )


def test_local_fine_tuning_of_the_pretrained_checkpoint(toy, tiny_pretrained, tmp_path):
    out = tmp_path / "ft"
    r = train_run(
        toy, out, "mathbert", "local", "both", params(train_layers=1), 0, None, tiny_pretrained
    )
    m = load_matcher(out, device="cpu")
    assert m.config.normalize and m.config.score_scale == 20.0 and r["epochs"] == 1


def test_bm25_neighbour_batches_fine_tune_and_are_recorded(
    toy, tiny_pretrained, tmp_path, monkeypatch
):
    """``bm25_neighbours`` on and off: both runs finish one local epoch on other batches, and the
    fingerprint records the setting (NPT's and ScratchBERT's hold no such field)."""
    from proofmatch.models import train

    drawn: dict[int, list] = {}
    real = train.run_batches

    def spy(run, epoch):
        batches = real(run, epoch)
        drawn[run.p.encoder.bm25_neighbours] = batches
        return batches

    monkeypatch.setattr(train, "run_batches", spy)
    results = {}
    for k in (0, 7):
        p = params(bm25_neighbours=k, train_layers=1)
        out = tmp_path / f"k{k}"
        results[k] = train_run(toy, out, "mathbert", "local", "both", p, 0, None, tiny_pretrained)
        assert (out / "model/model.safetensors").exists() and results[k]["epochs"] == 1
        assert results[k]["fingerprint"]["params"]["bm25_neighbours"] == k
        assert TrainParams.from_record(results[k]["fingerprint"]) == p
    assert results[0]["fingerprint"] != results[7]["fingerprint"]
    flat = lambda bs: sorted(np.concatenate(bs).tolist())  # noqa: E731
    assert flat(drawn[0]) == flat(drawn[7]) == list(range(results[0]["n_train"]))
    assert [b.tolist() for b in drawn[0]] != [b.tolist() for b in drawn[7]]
    for encoder in ("npt", "scratchbert"):
        assert "bm25_neighbours" not in train_params(encoder).flat()


def test_mathspecter_trains_the_checkpoint_with_triplets(toy, tiny_pretrained, tmp_path):
    """SPECTER-style (MathBERT): the checkpoint with its own tokenizer (a ScratchBERT tokenizer
    given is not used), matching.pretrained's schedule and vectors, matching.specter's triplets;
    one epoch trains, saves and loads back as the same model."""
    from proofmatch.models.tokenizer import build_tokenizer, wrap_fast

    p = train_params("mathspecter", max_length=48, batch_size=8, epochs=1, eval_every=1)
    s = p.encoder
    assert (s.margin, s.hard_fraction, s.pooling, s.normalize) == (1.0, 0.3, "mean", True)
    assert p.learning_rate == params().learning_rate  # matching.pretrained's, not bert's
    typed = tmp_path / "scratch-tokenizer"  # a ScratchBERT-like vocabulary: typed math tokens
    texts = ["let $a be $b", "the proof of $c"] * 5
    wrap_fast(build_tokenizer(lambda: iter(texts), vocab_size=60, min_frequency=1)).save_pretrained(
        str(typed)
    )
    fresh = build_matcher("mathspecter", "triplet", "both", p, None, typed, tiny_pretrained)
    own = build_matcher("mathbert", "local", "both", params(), None, None, tiny_pretrained)
    assert fresh.codec.tokenizer.get_vocab() == own.codec.tokenizer.get_vocab()
    assert fresh.config.plain_math and fresh.config.scorer == "distance"
    out = tmp_path / "mathspecter"
    r = train_run(toy, out, "mathspecter", "triplet", "both", p, 0, typed, tiny_pretrained)
    assert r["epochs"] == 1 and TrainParams.from_record(r["fingerprint"]) == p
    losses = pd.read_csv(out / "metrics.csv")["triplet_loss"].dropna()
    assert len(losses) == 1 and losses.gt(0).all()
    m = load_matcher(out, device="cpu")
    assert (m.config.encoder, m.config.scorer, m.config.normalize) == (
        "mathspecter",
        "distance",
        True,
    )
    assert m.config.checkpoint["sha256"] == identity.identify(tiny_pretrained).sha256
    from proofmatch.data.splits import read_parts

    (dev,) = read_parts(toy, ["dev"])
    again = rank_metrics(m, list(dev["statement_tokens"]), list(dev["proof_tokens"]))
    assert r["dev_mrr"] == pytest.approx(again["mrr"], abs=1e-6)


def test_caption_names_the_loaded_checkpoint(tiny_pretrained):
    from proofmatch import result_tables as RT
    from proofmatch.config import validate_config
    from proofmatch.evaluation.captions import checkpoint_caption

    cfg = validate_config({"matching": {"mathbert": str(tiny_pretrained)}})
    table3 = RT.table3()
    text = checkpoint_caption(table3, cfg)
    assert "MathBERT column:" in text and "(not MathBERT)" in text and "ZeroShot" in text
    labels = [r.labels[0] for r in table3.rows]
    assert "MathBERT-ZeroShot-Local" in labels and "MathBERT-Frozen-Global" in labels
    assert "SPECTER-style (MathBERT)-Triplet-Local" in labels
    assert text.count("column:") == 1  # one checkpoint, however many encoders start from it
    only = RT.table3(encoders=("mathspecter",))
    assert checkpoint_caption(only, cfg).startswith(" MathBERT column:")
    assert "ZeroShot" not in checkpoint_caption(only, cfg)
    assert checkpoint_caption(RT.table4(), cfg) == ""  # no MathBERT row
    assert checkpoint_caption(table3, validate_config({})) == ""  # not configured: rows say so


def test_findings_on_a_stand_in_say_so(tiny_pretrained):
    """A finding judged on the runs of a checkpoint that is not MathBERT carries the caveat."""
    from proofmatch.config import validate_config
    from proofmatch.evaluation import findings as F
    from proofmatch.evaluation import verdicts as VD

    cfg = validate_config({"matching": {"mathbert": str(tiny_pretrained)}})
    caveat = VD.caveats(cfg)["mathbert"]
    assert "not MathBERT" in caveat and "stand-in" in caveat
    assert VD.caveats(validate_config({})) == {}
    (finding,) = [f for f in F.findings() if f.key == "npt_over_mathbert"]
    index = [f"s{i}" for i in range(20)]
    frames = {
        ev: pd.DataFrame(
            {m: [1.0 if ev.model == "npt" else 0.5] * 20 for m in ("mrr", "acc", "global_acc")},
            index=index,
        )
        for ev in finding.evaluations()
    }
    row = VD.judge(finding, frames, 200, 0, {"mathbert": caveat})
    assert row["Verdict"] == F.HOLDS and caveat in row["Note"]
    (other,) = [f for f in F.findings() if f.key == "scratchbert_over_npt"]
    assert VD.judge(other, {}, 200, 0, {"mathbert": caveat})["Note"].startswith("not run")


def test_search_serves_a_pretrained_run_fused_with_bm25(toy, tiny_pretrained, tmp_path):
    """A frozen run's model is an ordinary matcher: a fusion index is built from it and a typed
    query (encoded by the checkpoint, with its own lowercasing and untyped math) is answered."""
    from proofmatch.data.splits import read_part
    from proofmatch.search.build import build_index
    from proofmatch.search.index import SearchIndex

    run = tmp_path / "run"
    train_run(toy, run, "mathbert", "frozen", "both", params(), 0, None, tiny_pretrained)
    build_index(
        tmp_path / "ix",
        toy,
        run_dir=run,
        method="fusion",
        fusion_weight_by_hand=0.5,
        parts=["test"],
    )
    ix = SearchIndex(tmp_path / "ix")
    test = read_part(toy, "test")
    _, hits = ix.search(test["pair_id"].iloc[0], k=5)
    assert len(hits) == 5 and ix.meta["method"] == "fusion"
    query = r"Let $a$ be a set and $b$ the other."
    _, typed = ix.search(query, k=3)
    assert len(typed) == 3 and ix.describe()["query_encoder"] == "float32"
    # int8 query encoding (opt-in): its own copy of the encoder, the index's float one untouched
    q8 = SearchIndex(tmp_path / "ix", quantize="int8")
    assert q8.describe()["query_encoder"] == "int8" and q8.query_matcher is not q8.matcher
    linear = torch.nn.Linear
    assert any(type(m) is linear for m in q8.matcher.encoder.modules())
    assert not any(type(m) is linear for m in q8.query_matcher.encoder.modules())
    a, b = ix._learned_query(ix.parse(query))[0], q8._learned_query(q8.parse(query))[0]
    assert np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b) > 0.9
    assert len(q8.search(query, k=3)[1]) == 3
    same_id = test["pair_id"].iloc[
        0
    ]  # an id query uses the stored vector: quantizing changes nothing
    assert [h.row for h in q8.search(same_id, k=5)[1]] == [h.row for h in hits]
    with pytest.raises(ValueError, match="quantize 'int4'"):
        SearchIndex(tmp_path / "ix", quantize="int4")
