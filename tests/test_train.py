"""Matcher scores and losses, training schedule, and training runs of every encoder/mode."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from toydata import toy_pairs, train_params

from proofmatch import cli
from proofmatch.artifacts import write_parquet
from proofmatch.config import run_matching
from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation.evaluate import EvalSettings, evaluate_run
from proofmatch.models import optim as optim_mod
from proofmatch.models import runtime
from proofmatch.models import train as train_mod
from proofmatch.models.batching import TokenTable
from proofmatch.models.encoders import NPTConfig, NPTEncoder, WordVocab, pad_batch
from proofmatch.models.losses import global_loss, local_loss, max_assignment, triplet_loss
from proofmatch.models.matcher import (
    Matcher,
    MatcherConfig,
    NotConfigured,
    check_run,
    load_matcher,
    npt_vocab,
)
from proofmatch.models.optim import make_optimizer
from proofmatch.models.params import (
    PretrainParams,
    StaleRecord,
    TrainParams,
    run_params,
    start_checkpoint,
)
from proofmatch.models.sampling import (
    bm25_neighbours,
    epoch_batches,
    neighbour_batches,
    sample_negatives,
    shuffled_batches,
)
from proofmatch.models.selection import rank_metrics
from proofmatch.models.steps import batch_loss, step_schedule
from proofmatch.models.train import train_run
from proofmatch.registry.encoders import ENCODERS, encoder_spec
from proofmatch.registry.settings import (
    BertSettings,
    NPTSettings,
    PretrainedSettings,
    PretrainedSpecterSettings,
    SpecterSettings,
)

CONFIG = Path(__file__).resolve().parents[1] / "config"  # independent of the working directory

# what these tests change of the schema's NPT settings (asgd, unscaled scores and dropout 0.1:
# the settings they were written with)
NPT = dict(
    epochs=30,
    batch_size=30,
    learning_rate=0.01,
    lr_decay=0.99,
    eval_every=5,
    max_length=64,
    d_model=64,
    n_layers=2,
    n_heads=4,
    d_k=16,
    optimizer="asgd",
    scale_scores=False,
    dropout=0.1,
    attention_dropout=0.1,
)


def npt(**changes) -> TrainParams:
    """The TrainParams of an NPT test run: :data:`NPT`, then ``changes``."""
    return train_params("npt", **{**NPT, **changes})


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    d = tmp_path_factory.mktemp("train")
    write_parquet(toy_pairs(n_articles=30, pairs_per_article=6, seed=1), d / "toy.parquet")
    return d / "toy.parquet"


def _matcher(scorer: str, seed: int = 0, score_scale: float = 1.0) -> Matcher:
    torch.manual_seed(seed)
    seqs = [
        ["Let", "$a", "be", "a", "set"],
        ["$A"],
        ["Proof", "$a", "is", "$b"],
        ["set", "$A", "$b"],
    ]
    vocab = WordVocab.build(seqs, min_count=1)
    npt = NPTConfig(vocab_size=len(vocab), d_model=8, n_layers=1, n_heads=2, d_k=4, max_length=16)
    config = MatcherConfig("npt", scorer, "both", 16, npt=npt.to_dict(), score_scale=score_scale)
    return Matcher(config, NPTEncoder(npt), vocab).eval()


def test_embed_switches_modes_only_when_training_and_encodes_no_text_at_once(monkeypatch):
    """A model in eval mode is encoded as it is (eval() walks every module: a query paid for two
    walks), one in training mode is switched and restored; no text runs no encoder."""
    seqs = [["Let", "$a", "be", "a", "set"], ["$A"]]
    m = _matcher("bilinear").train()
    trained = m.embed(seqs)
    assert m.training
    m.eval()
    switched = []
    monkeypatch.setattr(m, "train", lambda mode=True: switched.append(mode) or m)
    assert torch.equal(m.embed(seqs), trained) and switched == []
    assert m.embed([]).shape == (0, m.encoder.dim) and switched == []


def test_set_threads_limits_torch_and_blas():
    """The job's threads hold for NumPy's BLAS too (its default: one thread per core)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    before = torch.get_num_threads()
    with threadpool_limits():  # BLAS's own settings come back afterwards
        runtime.set_threads(1)
        assert torch.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    torch.set_num_threads(before)


# ---------------------------------------------------------------- scores


def test_bilinear_score_matrix_equals_per_pair_form():
    m = _matcher("bilinear")
    S, P = torch.randn(3, 8), torch.randn(4, 8)
    M = m.score_matrix(S, P)
    for i, j in itertools.product(range(3), range(4)):
        assert M[i, j].item() == pytest.approx((S[i] @ m.W @ P[j] + m.b).item(), rel=1e-5, abs=1e-5)
    scaled = _matcher("bilinear", score_scale=1 / 8)  # same seed, same weights
    torch.testing.assert_close(scaled.score_matrix(S, P), (M - m.b) / 8 + m.b)
    # the same as torch's own bilinear layer with these weights
    bil = torch.nn.Bilinear(8, 8, 1)
    bil.weight.data, bil.bias.data = m.W.data[None], m.b.data[None]
    ref = bil(S[:, None].expand(3, 4, 8).reshape(-1, 8), P[None].expand(3, 4, 8).reshape(-1, 8))
    torch.testing.assert_close(M, ref.view(3, 4))


@pytest.mark.parametrize(
    "scorer, scale", [("bilinear", 1.0), ("bilinear", 0.125), ("distance", 1.0)]
)
def test_factors_reproduce_scores(scorer, scale):
    m = _matcher(scorer, score_scale=scale)
    st = [["Let", "$a", "be"], ["$A", "set"], []]
    pf = [["Proof", "$a"], ["$b", "$A", "set"], ["is"], ["$a", "$a"]]
    A, B, row, col = m.factors(st, pf, batch_size=2)
    assert all(x.dtype == np.float32 for x in (A, B, row, col))
    M = A @ B.T + row[:, None] + col[None, :]
    with torch.no_grad():
        ref = m.score_matrix(m.embed(st), m.embed(pf)).numpy()
    np.testing.assert_allclose(M, ref, rtol=1e-4, atol=1e-4)
    if scorer == "distance":
        np.testing.assert_allclose(
            M, -(torch.cdist(m.embed(st), m.embed(pf)).numpy() ** 2), rtol=1e-4, atol=1e-4
        )
    # aligned pairs and broadcasting of a single proof
    np.testing.assert_allclose(m.score_pairs(st, pf[:3]), np.diag(M[:, :3]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(m.score_pairs(st, pf[1:2]), M[:, 1], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):
        m.score_pairs(st, pf)


def test_rank_metrics_counts_ties_against_gold():
    m = _matcher("bilinear")
    with torch.no_grad():
        m.W.zero_()  # every score equals b: every gold ties with all n proofs
    st = [["$a"], ["$b"], ["set"], ["is"]]
    r = rank_metrics(m, st, st)
    assert r == {"mrr": pytest.approx(0.25), "acc": 0.0}
    with torch.no_grad():
        m.W.copy_(torch.eye(8) * 10)
    r = rank_metrics(m, st, st)  # s·s beats s·p for distinct vectors of similar norm
    assert 0.25 < r["mrr"] <= 1.0


def test_one_autocast_policy_for_training_and_evaluation(monkeypatch):
    """Training steps and evaluation's encoding ask the same policy (bf16 only where supported)."""
    seen = []
    real = runtime.autocast

    def recording(device):
        seen.append(torch.device(device).type)
        return real(device)

    monkeypatch.setattr(runtime, "autocast", recording)
    m = _matcher("bilinear")
    m.embed([["$a"], ["set"]])
    ids = m.codec.ids([["$a"], ["set"], ["$b"], ["is"]], 16)
    tables = [TokenTable.build(part, 0, torch.device("cpu")) for part in (ids[:2], ids[2:])]
    batch_loss(m, runtime.Runtime(torch.device("cpu")), "local", np.array([0, 1]), *tables)
    assert seen == ["cpu", "cpu"]
    with real(torch.device("cpu")):
        assert not torch.is_autocast_enabled("cpu")  # CPU runs stay float32 and deterministic
    monkeypatch.setenv(runtime.DEVICE_ENV, "cpu")
    assert runtime.default_device().type == "cpu" and runtime.init_runtime().device.type == "cpu"


def test_batch_groups_are_padded_apart():
    """A training step pads statements and proofs each to its own longest text, and a text's
    vector (eval mode) is the one it has alone: padding never changes it."""
    m = _matcher("bilinear")
    st = [["$a"], ["set", "$A"]]
    pf = [["Proof", "$a", "is", "$b", "set", "$A", "$b"], ["$b", "is"]]
    seen = []
    real = m.encoder.forward

    def recording(ids, mask):
        seen.append(tuple(ids.shape))
        return real(ids, mask)

    m.encoder.forward = recording
    ids = m.codec.ids(st + pf, 16)
    with torch.no_grad():
        (S, P), M = m([tuple(t) for t in (pad_batch(ids[:2], 0), pad_batch(ids[2:], 0))])
    assert seen == [(2, 3), (2, 8)]  # [CLS] + the longest statement, [CLS] + the longest proof
    np.testing.assert_allclose(S, m.embed(st), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(P, m.embed(pf), rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        np.testing.assert_allclose(M, m.score_matrix(S, P), rtol=1e-6)


def test_token_table_batches_are_the_padded_rows():
    """A batch cut from the device table is what padding the same rows alone gives."""
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(3, 50, size=rng.integers(1, 12))) for _ in range(40)]
    table = TokenTable.build(rows, 0, torch.device("cpu"))
    assert len(table) == 40 and table.ids.shape == (40, max(map(len, rows)))
    for _ in range(20):
        idx = rng.choice(40, size=int(rng.integers(1, 10)), replace=False)
        ids, mask = table.batch(idx)
        want_ids, want_mask = pad_batch([rows[i] for i in idx], 0)
        assert torch.equal(ids, want_ids) and torch.equal(mask, want_mask)


# ---------------------------------------------------------------- losses


def test_local_loss_is_row_softmax_cross_entropy():
    M = torch.tensor([[2.0, 0.0, 1.0], [0.0, 1.0, 3.0], [1.0, 1.0, 1.0]])
    a = M.numpy()
    ref = -np.mean([np.log(np.exp(a[i, i]) / np.exp(a[i]).sum()) for i in range(3)])
    assert local_loss(M).item() == pytest.approx(float(ref), rel=1e-6)


def test_global_loss_zero_iff_identity_wins_by_margin():
    good = torch.eye(4) * 2.0  # gold beats every other cell by 2 > margin 1
    loss, acc = global_loss(good.requires_grad_())
    assert loss.item() == 0.0 and acc == 1.0
    loss.backward()
    assert (good.grad == 0).all()
    # identity is the argmax but within the margin: still penalised
    close = torch.eye(4) * 0.5
    loss, _ = global_loss(close)
    assert loss.item() > 0
    # a swap scores higher than the gold assignment
    bad = torch.tensor([[0.0, 3.0, 0.0], [3.0, 0.0, 0.0], [0.0, 0.0, 1.0]], requires_grad=True)
    loss, acc = global_loss(bad)
    assert loss.item() == pytest.approx((3 + 1 + 3 + 1) / 3) and acc == pytest.approx(1 / 3)
    loss.backward()
    assert bad.grad[0, 1] > 0 and bad.grad[0, 0] < 0


def test_global_loss_matches_brute_force_structured_hinge():
    rng = np.random.default_rng(0)
    for _ in range(5):
        M = torch.tensor(rng.normal(size=(5, 5)))
        best = max(
            sum(float(M[i, p[i]]) + (p[i] != i) for i in range(5))
            for p in itertools.permutations(range(5))
        )
        loss, _ = global_loss(M)
        assert loss.item() == pytest.approx(max(0.0, best - float(M.trace())) / 5)


def test_max_assignment_is_exact():
    S = np.array([[1.0, 5.0, 0.0], [4.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    assert max_assignment(S).tolist() == [1, 0, 2]


def test_triplet_loss_uses_l2_distance_and_margin():
    s, pos, neg = torch.zeros(1, 2), torch.tensor([[3.0, 4.0]]), torch.tensor([[0.0, 5.5]])
    assert triplet_loss(s, pos, neg, margin=1.0).item() == pytest.approx(5 - 5.5 + 1, abs=1e-5)
    assert triplet_loss(s, pos, torch.tensor([[0.0, 7.0]]), margin=1.0).item() == 0.0


# ---------------------------------------------------------------- schedule and sampling


def test_step_schedule():
    batches = [np.array([0, 1]), np.array([2, 3]), np.array([4, 5])]
    steps = step_schedule("hybrid", batches)  # one local and one global step on every batch
    assert [k for k, _ in steps] == ["local", "global"] * 3
    assert all(idx is batches[i // 2] for i, (_, idx) in enumerate(steps))
    assert step_schedule("local", batches) == [("local", b) for b in batches]
    assert step_schedule("triplet", batches) == [("triplet", b) for b in batches]
    with pytest.raises(ValueError, match="unknown npt mode 'global'"):
        check_run("npt", "global", "both")  # train_run's boundary: step_schedule trusts it
    with pytest.raises(ValueError, match="unknown npt mode 'triplet'; expected one of local"):
        check_run("npt", "triplet", "both")


def test_epoch_batches_depend_on_seed_and_epoch_only():
    a, b = epoch_batches(23, 5, seed=1, epoch=3), epoch_batches(23, 5, seed=1, epoch=3)
    assert all((x == y).all() for x, y in zip(a, b))
    assert sorted(np.concatenate(a).tolist()) == list(range(23))
    assert not all((x == y).all() for x, y in zip(a, epoch_batches(23, 5, seed=1, epoch=4)))
    assert [len(x) for x in epoch_batches(11, 5, 0, 0)] == [5, 5]  # a lone last pair is dropped


def topical_tokens(n: int = 120, topics: int = 12, seed: int = 0):
    """Statements and proofs of ``n`` pairs: a few words of the pair's topic among common words,
    so that BM25's neighbours of a pair are mostly pairs of its topic."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, topics, n)
    common = [f"w{i}" for i in range(300)]

    def side(i: int, topical: int, other: int) -> list[str]:
        words = [f"t{topic[i]}_{j}" for j in rng.integers(0, 5, topical)]
        return words + list(rng.choice(common, other))

    return [side(i, 4, 6) for i in range(n)], [side(i, 8, 12) for i in range(n)]


def test_bm25_neighbours_are_the_top_of_the_bm25_scores_but_the_own_proof():
    from proofmatch.scoring.lexical import bm25_scorer

    statements, proofs = topical_tokens(40, topics=4)
    got = bm25_neighbours(statements, proofs, 5)
    S = bm25_scorer(statements, proofs)(0, 40)
    np.fill_diagonal(S, -np.inf)
    want = np.lexsort((np.tile(np.arange(40), (40, 1)), -S), axis=1)[:, :5]
    assert got.shape == (40, 5) and (got == want).all()
    assert bm25_neighbours(statements[:3], proofs[:3], 9).shape == (3, 2)  # k capped at n - 1
    with pytest.raises(ValueError, match="at least 2 pairs"):
        bm25_neighbours(statements[:1], proofs[:1], 3)


def test_neighbour_batches_hold_every_pair_once_and_depend_on_seed_and_epoch_only():
    statements, proofs = topical_tokens()
    nb = bm25_neighbours(statements, proofs, 7)
    a = neighbour_batches(nb, 8, seed=1, epoch=3)
    assert sorted(np.concatenate(a).tolist()) == list(range(120))
    assert [len(x) for x in a] == [8] * 15
    assert all((x == y).all() for x, y in zip(a, neighbour_batches(nb, 8, seed=1, epoch=3)))
    assert not all((x == y).all() for x, y in zip(a, neighbour_batches(nb, 8, seed=1, epoch=4)))
    assert not all((x == y).all() for x, y in zip(a, neighbour_batches(nb, 8, seed=2, epoch=3)))
    via = epoch_batches(120, 8, 1, 3, neighbours=nb)  # the training loop's entry
    assert all((x == y).all() for x, y in zip(a, via))
    small = bm25_neighbours(statements[:9], proofs[:9], 3)
    assert [len(x) for x in epoch_batches(9, 4, 0, 0, neighbours=small)] == [
        4,
        4,
    ]  # lone pair dropped
    with pytest.raises(ValueError, match="neighbours of 120 pairs for a pass over 7"):
        epoch_batches(7, 4, 0, 0, neighbours=nb)


def test_neighbour_batches_put_a_pairs_bm25_neighbour_in_its_batch():
    statements, proofs = topical_tokens()
    nb = bm25_neighbours(statements, proofs, 7)

    def together(
        batches: list[np.ndarray],
    ) -> float:  # pairs whose first neighbour shares their batch
        where = np.empty(len(nb), dtype=np.int64)
        for k, b in enumerate(batches):
            where[b] = k
        return float(np.mean(where[nb[:, 0]] == where))

    for epoch in range(3):
        hard = together(neighbour_batches(nb, 8, 0, epoch))
        easy = together(shuffled_batches(120, 8, 0, epoch))
        assert hard > 0.4 > 0.15 > easy, (hard, easy)


def test_sample_negatives_hard_and_easy():
    codes = np.array([0, 0, 0, 1, 1, 2, 3, 3])
    batch = np.arange(8)
    hard = sample_negatives(batch, codes, 1.0, np.random.default_rng(0))
    assert (hard != batch).all()
    has_sibling = np.array([True, True, True, True, True, False, True, True])
    assert (codes[hard][has_sibling] == codes[has_sibling]).all()
    easy = sample_negatives(np.repeat(batch, 50), codes, 0.0, np.random.default_rng(0))
    assert (easy != np.repeat(batch, 50)).all() and len(set(easy.tolist())) == 8


# ---------------------------------------------------------------- training runs


def test_train_params_are_typed_and_refuse_unknown_missing_and_null_keys():
    flat = npt().flat()
    p = TrainParams.from_flat(dict(flat, learning_rate=1, optimizer="adamw"), "npt")
    assert p.learning_rate == 1.0 and isinstance(p.learning_rate, float) and p.optimizer == "adamw"
    with pytest.raises(ValueError, match=r"unknown TrainParams keys \['lerning_rate'\] for enc"):
        TrainParams.from_flat(dict(flat, lerning_rate=0.1), "npt")
    with pytest.raises(ValueError, match=r"unknown TrainParams keys \['pooling'\] for encoder 'n"):
        TrainParams.from_flat(dict(flat, pooling="cls"), "npt")  # NPT reads no pooling
    with pytest.raises(ValueError, match=r"missing TrainParams keys \['optimizer'\]"):
        TrainParams.from_flat({k: v for k, v in flat.items() if k != "optimizer"}, "npt")
    with pytest.raises(ValueError, match=r"missing NPTSettings keys \['min_count'\]"):
        TrainParams.from_flat({k: v for k, v in flat.items() if k != "min_count"}, "npt")
    with pytest.raises(ValueError, match=r"TrainParams keys \['scale_scores'\] cannot be None"):
        TrainParams.from_flat(dict(flat, scale_scores=None), "npt")
    with pytest.raises(ValueError, match=r"unknown pooling 'max'; expected one of cls, mean"):
        train_params("scratchbert", pooling="max")  # the settings' Literal types are checked
    matching = train_matching()
    matching["npt"]["lerning_rate"] = 0.1  # a block that skipped validation
    with pytest.raises(ValueError, match=r"unknown TrainParams keys \['lerning_rate'\]"):
        TrainParams.from_config(matching, "npt")
    with pytest.raises(TypeError, match="TrainParams"):  # one shape of parameters
        train_run("unused.parquet", "unused", "npt", "local", "both", flat, seed=0)


def train_matching() -> dict:
    from proofmatch.config import validate_config

    return validate_config({})["matching"]


SETTINGS = {
    "npt": NPTSettings,
    "scratchbert": BertSettings,
    "specter": SpecterSettings,
    "mathspecter": PretrainedSpecterSettings,
}


@pytest.mark.parametrize("encoder", ["npt", "scratchbert", "specter", "mathbert", "mathspecter"])
def test_train_params_come_from_the_config_and_fingerprints_record_what_a_run_reads(encoder):
    """Every field is the config block's that the encoder reads (its spec's later blocks win),
    the encoder's own as its spec's settings class; its fingerprint records exactly those, with
    ``params_version``, and reads back; an older record (no version) is refused clearly."""
    from proofmatch.models.checkpoint import fingerprint

    matching = train_matching()
    p = TrainParams.from_config(matching, encoder)
    spec = encoder_spec(encoder)
    assert type(p.encoder) is spec.settings_class
    assert SETTINGS.get(encoder, PretrainedSettings) is spec.settings_class
    read = {k: v for b in (spec.block, *spec.settings) for k, v in matching[b].items()}
    read["max_length"] = matching[spec.block].get("max_length", matching["max_length"])
    assert p.flat() == read  # no field of another encoder
    fp = fingerprint(p, 0, ["a/1"], encoder=encoder)
    assert fp["params_version"] == TrainParams.VERSION == 2 and fp["params"] == read
    assert TrainParams.from_record(fp) == p  # a fingerprint's params load back
    old = {k: v for k, v in fp.items() if k != "params_version"}
    with pytest.raises(StaleRecord, match="params_version None .*retrain the run"):
        TrainParams.from_record(old)
    assert p == TrainParams.from_config(
        run_matching(matching, encoder, {"topk": 1, "exact_max_n": 1}), encoder
    )  # the workflow's part
    assert p.replaced(epochs=3, max_length=9).flat() == {**read, "epochs": 3, "max_length": 9}


def test_encoder_settings_share_no_name_with_the_common_fields():
    common = {f.name for f in dataclasses.fields(TrainParams)}
    for spec in ENCODERS.values():
        own = {f.name for f in dataclasses.fields(spec.settings_class)}
        assert not own & common, (spec.name, own & common)


def test_make_optimizer():
    params = [torch.nn.Parameter(torch.zeros(2))]
    assert isinstance(make_optimizer("asgd", params, 0.1), torch.optim.ASGD)
    assert isinstance(make_optimizer("adamw", params, 0.1), torch.optim.AdamW)
    # make_optimizer trusts its name: TrainParams (the config's, or one built by hand) refuses others
    with pytest.raises(ValueError, match="unknown optimizer 'sgd'; expected one of asgd, adamw"):
        train_params("npt", optimizer="sgd")


def test_asgd_state_follows_the_parameters_device():
    """A checkpoint written on a GPU carries ASGD's ``capturable`` flag; resumed on a CPU, the
    flag and the state's scalars follow the CPU parameters, and steps go on."""
    params = [torch.nn.Parameter(torch.ones(3))]
    opt = make_optimizer("asgd", params, 0.1)
    assert opt.param_groups[0]["capturable"] is False  # CPU parameters
    params[0].grad = torch.ones(3)
    opt.step()
    saved = opt.state_dict()
    saved["param_groups"][0]["capturable"] = True  # as a GPU run saves it
    resumed = make_optimizer("asgd", params, 0.1)
    resumed.load_state_dict(saved)
    optim_mod.place_optimizer_state(resumed)
    assert resumed.param_groups[0]["capturable"] is False
    resumed.step()
    assert int(resumed.state[params[0]]["step"]) == 2


def test_a_non_finite_loss_fails_its_epoch_before_the_checkpoint(toy, tmp_path, monkeypatch):
    """Losses are read once per epoch (no step waits for the device); a NaN names its step, and
    the checkpoint stays at the last finished epoch."""
    real = train_mod.batch_loss
    calls = []

    def failing(*args, **kwargs):
        loss, acc = real(*args, **kwargs)
        calls.append(1)
        return (loss * float("nan") if len(calls) == n_batches + 2 else loss), acc

    n_batches = len(
        epoch_batches(int((pd.read_parquet(toy)["part"] == "train").sum()), NPT["batch_size"], 0, 0)
    )
    monkeypatch.setattr(train_mod, "batch_loss", failing)
    with pytest.raises(
        FloatingPointError, match="local loss is nan at epoch 2, step 2; lower learning_rate"
    ):
        train_run(toy, tmp_path / "r", "npt", "local", "both", npt(epochs=3), seed=0)
    assert torch.load(tmp_path / "r" / "checkpoint" / "state.pt", weights_only=False)["epoch"] == 1
    assert train_mod.step_losses(
        [torch.tensor(1.5), torch.tensor(0.5)], ["local", "global"], 0
    ).tolist() == [1.5, 0.5]


@pytest.mark.parametrize(
    "optimizer, lr, scaled, positions",
    [
        ("asgd", 0.01, False, True),
        ("adamw", 0.002, False, True),
        ("adamw", 0.002, True, True),
        ("adamw", 0.002, False, False),
    ],
)
def test_npt_local_learns_and_writes_outputs(optimizer, lr, scaled, positions, toy, tmp_path):
    out = tmp_path / "npt"
    params = npt(optimizer=optimizer, learning_rate=lr, scale_scores=scaled, positions=positions)
    res = train_run(toy, out, "npt", "local", "both", params, seed=3)
    hist = pd.read_csv(out / "metrics.csv")
    assert len(hist) == NPT["epochs"] and hist["loss"].iloc[-1] < hist["loss"].iloc[0] - 1.0
    n_dev = res["n_dev"]
    chance = np.mean(1.0 / np.arange(1, n_dev + 1))  # expected MRR of a random ranking
    assert res["dev_mrr"] > 2.5 * chance and res["dev_acc"] > 3.0 / n_dev
    assert json.loads((out / "metrics.json").read_text()) == res
    assert (out / "curve.png").stat().st_size > 1000
    assert not (out / "checkpoint").exists(), "a finished run leaves no resume state"
    assert sorted(p.name for p in out.iterdir()) == [
        "curve.png",
        "metrics.csv",
        "metrics.json",
        "model",
        "model.sha256",
    ]
    # model/ holds the best epoch and reproduces its dev metrics
    m = load_matcher(out, device="cpu")
    assert m.config.score_scale == (1.0 / NPT["d_model"] if scaled else 1.0)
    assert m.encoder.config.positions is positions
    # the dev MRR is the evaluation stage's own local decoding of the saved model, to the bit
    dev = evaluate_run(
        out,
        toy,
        "dev",
        tmp_path / "dev.parquet",
        tmp_path / "dev.json",
        settings=EvalSettings(DecodeSettings(5, 2000, 0)),
    )
    assert (dev["mrr"], dev["acc"]) == (res["dev_mrr"], res["dev_acc"])
    assert hist.loc[hist["best"], "epoch"].iloc[-1] == res["best_epoch"]


def test_hybrid_gives_every_batch_a_local_and_a_global_step(toy, tmp_path, monkeypatch):
    """§8 "alternating one stochastic step for each loss": the local objective gets as many
    steps, on the same batches, as in local mode, and each batch also gets a global step."""
    calls: list[tuple[str, tuple[int, ...]]] = []
    real = train_mod.batch_loss

    def recording(model, rt, kind, idx, *args, **kwargs):
        calls.append((kind, tuple(int(i) for i in idx)))
        return real(model, rt, kind, idx, *args, **kwargs)

    monkeypatch.setattr(train_mod, "batch_loss", recording)
    params = npt(epochs=2, eval_every=1)
    train_run(toy, tmp_path / "loc", "npt", "local", "math", params, seed=0)
    local_calls, calls[:] = list(calls), []
    train_run(toy, tmp_path / "hyb", "npt", "hybrid", "math", params, seed=0)
    assert [c for c in calls if c[0] == "local"] == local_calls
    assert calls[0::2] == local_calls and [k for k, _ in calls[1::2]] == ["global"] * len(
        local_calls
    )
    assert [b for _, b in calls[1::2]] == [b for _, b in local_calls]
    n_batches = len(
        epoch_batches(int((pd.read_parquet(toy)["part"] == "train").sum()), NPT["batch_size"], 0, 0)
    )
    assert len(local_calls) == 2 * n_batches
    hist = pd.read_csv(tmp_path / "hyb" / "metrics.csv")
    assert hist["local_loss"].notna().all() and hist["global_loss"].notna().all()
    assert hist["global_batch_acc"].between(0, 1).all() and hist["triplet_loss"].isna().all()


def test_lr_decay_starts_late_and_dev_is_checked_every_eval_every_epochs(toy, tmp_path):
    """§8: the rate is "multiplied by 0.996 after each epoch ... (after 300 epochs)"; the model
    is evaluated every ``eval_every`` epochs (and after the last)."""
    params = npt(epochs=5, eval_every=2, lr_decay=0.5, lr_decay_start=3, d_model=16, d_k=8)
    train_run(toy, tmp_path / "late", "npt", "local", "both", params, seed=0)
    hist = pd.read_csv(tmp_path / "late" / "metrics.csv")
    lr = NPT["learning_rate"]
    assert hist["lr"].tolist() == pytest.approx([lr, lr, lr, lr / 2, lr / 4])
    assert hist.loc[hist["dev_mrr"].notna(), "epoch"].tolist() == [2, 4, 5]
    train_run(
        toy,
        tmp_path / "now",
        "npt",
        "local",
        "both",
        dataclasses.replace(params, lr_decay_start=0),
        seed=0,
    )
    assert pd.read_csv(tmp_path / "now" / "metrics.csv")["lr"].tolist() == pytest.approx(
        [lr, lr / 2, lr / 4, lr / 8, lr / 16]
    )


def _fully_replaced(df: pd.DataFrame) -> pd.DataFrame:
    """Every math token of the proofs renamed (what full replacement does to math only)."""
    rename = lambda toks: [f"$r{t[1:]}" if t.startswith("$") else t for t in toks]  # noqa: E731
    return df.assign(proof_tokens=df["proof_tokens"].map(rename))


def test_text_view_vocabulary_and_model_do_not_depend_on_replacement(toy, tmp_path):
    """Table 5's Text rows are equal under Conservation and Full (replacement touches only math)."""
    cons = pd.read_parquet(toy)
    full = _fully_replaced(cons)
    train = cons.query("part == 'train'")
    assert (
        npt_vocab(train, "text", 2).itos == npt_vocab(full.query("part == 'train'"), "text", 2).itos
    )
    assert (
        npt_vocab(train, "both", 2).itos != npt_vocab(full.query("part == 'train'"), "both", 2).itos
    )
    assert not any(t.startswith("$") for t in npt_vocab(train, "text", 1).itos)
    write_parquet(full, tmp_path / "full.parquet")
    params = npt(epochs=1, d_model=16, d_k=8)
    a = train_run(toy, tmp_path / "cons", "npt", "local", "text", params, seed=0)
    b = train_run(
        tmp_path / "full.parquet", tmp_path / "full", "npt", "local", "text", params, seed=0
    )
    assert a == b
    assert (tmp_path / "cons" / "model" / "model.safetensors").read_bytes() == (
        tmp_path / "full" / "model" / "model.safetensors"
    ).read_bytes()


def test_argument_checks(toy, tmp_path):
    with pytest.raises(NotConfigured, match="mathbert"):
        train_run(toy, tmp_path / "m", "mathbert", "local", "both", npt(), seed=0)
    with pytest.raises(ValueError, match="triplet"):
        train_run(toy, tmp_path / "s", "specter", "local", "both", npt(), seed=0)
    with pytest.raises(ValueError, match="view"):
        train_run(toy, tmp_path / "v", "npt", "local", "all", npt(), seed=0)


def _unfinished(monkeypatch, *args, **kwargs) -> None:
    """``train_run(*args, **kwargs)`` failing after its last epoch: its resume state stays."""

    def fail(*a, **k):
        raise RuntimeError("killed before finishing")

    with monkeypatch.context() as m:
        m.setattr(train_mod, "finish", fail)
        with pytest.raises(RuntimeError, match="killed before finishing"):
            train_run(*args, **kwargs)


def test_a_finished_run_trains_again_from_epoch_1(toy, tmp_path, caplog, monkeypatch):
    """A run killed after its last epoch resumes into its outputs; once finished it keeps no
    resume state, so running it again (``snakemake --forcerun``) trains it again from epoch 1."""
    params = npt(epochs=2, eval_every=1)
    run = tmp_path / "r"
    _unfinished(monkeypatch, toy, run, "npt", "local", "both", params, seed=0)
    assert (run / "checkpoint" / "state.pt").exists() and (run / "checkpoint" / "model").is_dir()
    assert not (run / "model").exists() and not (run / "metrics.json").exists()
    caplog.clear()  # the unfinished run's own records (captured when an earlier test left INFO on)
    with caplog.at_level(logging.INFO, logger="proofmatch.models.train"):
        first = train_run(toy, run, "npt", "local", "both", params, seed=0)
    assert (
        f"train: resuming {run} after epoch 2" in caplog.text and "epoch 1: loss" not in caplog.text
    )
    assert not (run / "checkpoint").exists() and (run / "model" / "config.json").exists()
    assert len(pd.read_csv(run / "metrics.csv")) == 2
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="proofmatch.models.train"):
        again = train_run(toy, run, "npt", "local", "both", params, seed=0)
    assert f"train: starting {run} at epoch 1" in caplog.text and "resuming" not in caplog.text
    assert "epoch 1: loss" in caplog.text and "epoch 2: loss" in caplog.text
    assert again == first and not (run / "checkpoint").exists()


def test_changed_params_start_afresh_instead_of_resuming(toy, tmp_path, caplog, monkeypatch):
    """A rerun with other params (Snakemake's answer to a config change) is a new run: the old
    checkpoint (of a run that did not finish) is not resumed, and the result equals a run in an
    empty folder."""
    params = npt(epochs=2, eval_every=1)
    _unfinished(monkeypatch, toy, tmp_path / "r", "npt", "local", "both", params, seed=0)
    changed = dataclasses.replace(params, learning_rate=0.1)
    with caplog.at_level(logging.WARNING, logger="proofmatch.models.checkpoint"):
        rerun = train_run(toy, tmp_path / "r", "npt", "local", "both", changed, seed=0)
    assert "(changed: params.learning_rate); starting afresh" in caplog.text
    fresh = train_run(toy, tmp_path / "f", "npt", "local", "both", changed, seed=0)
    assert rerun == fresh
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "r" / "metrics.csv").drop(columns="train_seconds"),
        pd.read_csv(tmp_path / "f" / "metrics.csv").drop(columns="train_seconds"),
    )


@pytest.fixture(scope="module")
def tiny_scratchbert(toy, tmp_path_factory):
    from transformers import BertForMaskedLM

    from proofmatch.models.pretrain import bert_config
    from proofmatch.models.tokenizer import load_tokenizer, train_tokenizer

    d = tmp_path_factory.mktemp("scratchbert")
    train_tokenizer(toy, d, vocab_size=150, min_frequency=2)
    tok = load_tokenizer(d)
    torch.manual_seed(0)
    cfg = bert_config(
        PretrainParams(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_length=64,
            epochs=1,
            batch_size=1,
            learning_rate=1e-3,
            eval_every_steps=1,
        ),
        tok,
    )
    BertForMaskedLM(cfg).save_pretrained(str(d))
    return d


@pytest.mark.parametrize("encoder,mode", [("scratchbert", "hybrid"), ("specter", "triplet")])
def test_bert_runs_save_loadable_models(encoder, mode, toy, tiny_scratchbert, tmp_path):
    params = train_params(
        encoder,
        epochs=2,
        batch_size=16,
        learning_rate=0.002,
        lr_decay=0.99,
        eval_every=1,
        max_length=64,
        optimizer="asgd",
        pooling="cls",
        **({"margin": 1.0, "hard_fraction": 0.5} if encoder == "specter" else {}),
    )
    res = train_run(
        toy,
        tmp_path / encoder,
        encoder,
        mode,
        "both",
        params,
        seed=0,
        pretrained_dir=tiny_scratchbert,
    )
    m = load_matcher(tmp_path / encoder, device="cpu")
    recorded = json.loads((tmp_path / encoder / "metrics.json").read_text())["fingerprint"]
    assert TrainParams.from_record(recorded) == params  # metrics.json's params read back
    assert m.config.scorer == ("distance" if mode == "triplet" else "bilinear")
    assert not m.config.plain_math  # the ScratchBERT vocabulary has typed math tokens
    dev = pd.read_parquet(toy).query("part == 'dev'")
    again = rank_metrics(m, list(dev["statement_tokens"]), list(dev["proof_tokens"]))
    assert again["mrr"] == pytest.approx(res["dev_mrr"], abs=1e-5)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_specter_pools_by_its_own_config_key(pooling, toy, tiny_scratchbert):
    """SPECTER-style's text vector is ``matching.specter.pooling``, which wins over
    ``matching.bert.pooling``; it was always [CLS], which an MLM-only ScratchBERT leaves nearly the
    same for every input (demo dev MRR 9.6 against 26.3 mean-pooled, docs/models.md)."""
    from proofmatch.config import validate_config
    from proofmatch.models.matcher import build_matcher

    other = "cls" if pooling == "mean" else "mean"
    matching = validate_config(
        {"matching": {"bert": {"pooling": other}, "specter": {"pooling": pooling}}}
    )["matching"]
    p = TrainParams.from_config(matching, "specter")
    assert (
        p.encoder.pooling == pooling
        and TrainParams.from_config(matching, "scratchbert").encoder.pooling == other
    )
    train = pd.read_parquet(toy).query("part == 'train'")
    m = build_matcher(
        "specter", "triplet", "both", p, train, pretrained_dir=tiny_scratchbert
    ).eval()
    assert m.config.pooling == m.encoder.pooling == pooling
    ids, mask = m.tensors(list(train["statement_tokens"][:4]))
    with torch.no_grad():
        hidden = m.encoder.bert(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        got = m.encoder(ids, mask)
    keep = mask[:, :, None].float()
    want = hidden[:, 0] if pooling == "cls" else (hidden * keep).sum(1) / keep.sum(1)
    torch.testing.assert_close(got, want)
    assert (
        validate_config({})["matching"]["specter"]["pooling"] == "mean"
    )  # the demo's (config.yaml)


def test_cli_train_with_project_config(toy, tmp_path):
    rc = cli.main(
        [
            "train",
            str(toy),
            "--out",
            str(tmp_path / "cli"),
            "--encoder",
            "npt",
            "--mode",
            "local",
            "--view",
            "text",
            "--config",
            str(CONFIG / "config.yaml"),
            "--epochs",
            "1",
        ]
    )
    assert rc == 0 and (tmp_path / "cli" / "model" / "config.json").exists()
    rc = cli.main(
        [
            "train",
            str(toy),
            "--out",
            str(tmp_path / "mb"),
            "--encoder",
            "mathbert",
            "--mode",
            "local",
            "--view",
            "both",
            "--config",
            str(CONFIG / "config.yaml"),
        ]
    )
    assert rc == 3  # matching.mathbert is null in the demo config: reported as not run


def test_train_run_takes_params_built_from_the_config_matching_block(toy, tmp_path):
    from proofmatch.config import load_config

    matching = load_config(CONFIG / "config.yaml")["matching"]
    matching["npt"] = dict(matching["npt"], epochs=1, d_model=16, d_k=8)
    res = train_run(
        toy,
        tmp_path / "blk",
        "npt",
        "local",
        "both",
        TrainParams.from_config(matching, "npt"),
        seed=0,
    )
    assert res["epochs"] == 1 and load_matcher(tmp_path / "blk").config.npt["d_model"] == 16
    assert start_checkpoint(matching, "mathbert", None) is None  # matching.mathbert is null ...
    with pytest.raises(NotConfigured):  # ... so MathBERT is not run
        train_run(
            toy,
            tmp_path / "mb",
            "mathbert",
            "local",
            "both",
            TrainParams.from_config(matching, "mathbert"),
            seed=0,
            pretrained_dir=start_checkpoint(matching, "mathbert", None),
        )
    given = {**matching, "mathbert": "some/mathbert"}
    assert start_checkpoint(given, "mathbert", None) == "some/mathbert"
    scratchbert = "results/models/scratchbert/mixed"
    assert start_checkpoint(given, "scratchbert", scratchbert) == scratchbert
    assert start_checkpoint(given, "npt", None) is None


def test_run_params_flattens_config_blocks():
    matching = {
        "max_length": 128,
        "npt": {"d_model": 3, "max_length": 200, "eval_every": 20},
        "bert": {"batch_size": 16, "eval_every": 5},
        "specter": {"margin": 1.0, "hard_fraction": 0.3},
    }
    assert run_params(matching, "npt")["max_length"] == 200
    assert run_params(matching, "npt")["eval_every"] == 20  # §8: NPT every 20 epochs, BERT every 5
    p = run_params(matching, "specter")
    assert p["max_length"] == 128 and p["batch_size"] == 16 and p["hard_fraction"] == 0.3
    assert p["eval_every"] == 5


def test_paper_config_schedules():
    from proofmatch.config import load_config

    m = load_config(CONFIG / "config.yaml", CONFIG / "paper.yaml")["matching"]
    npt, bert = run_params(m, "npt"), run_params(m, "scratchbert")
    assert (npt["eval_every"], npt["lr_decay_start"], npt["lr_decay"]) == (20, 300, 0.996)
    assert (bert["eval_every"], bert["lr_decay_start"], bert["lr_decay"]) == (5, 0, 0.99)


def test_run_params_from_the_workflows_reduced_block():
    """The workflow passes only the encoder's part of `matching`; it flattens like the whole block."""
    whole = {
        "max_length": 64,
        "mathbert": None,
        "npt": {"epochs": 3, "d_model": 16, "eval_every": 2},
        "bert": {"epochs": 5, "eval_every": 1},
        "specter": {"margin": 1.0, "hard_fraction": 0.3},
        "pretrained": {"epochs": 1, "learning_rate": 2e-5},
    }
    reduced = {"max_length": 64, "npt": {"epochs": 3, "d_model": 16, "eval_every": 2}}
    assert (
        run_params(reduced, "npt")
        == run_params(whole, "npt")
        == {"eval_every": 2, "max_length": 64, "epochs": 3, "d_model": 16}
    )
    assert run_matching(whole, "npt") == reduced  # what the workflow passes as a job's params
    assert set(run_matching(whole, "specter")) == {"max_length", "bert", "specter"}
    assert run_matching(whole, "mathbert")["mathbert"] is None
    # a pretrained checkpoint's own block replaces matching.bert's schedule
    assert run_params(whole, "mathbert")["learning_rate"] == 2e-5
    both = {"max_length", "bert", "specter", "pretrained", "mathbert"}
    assert set(run_matching(whole, "mathspecter")) == both
    assert run_params(whole, "mathspecter")["learning_rate"] == 2e-5


def test_the_curve_of_a_one_epoch_run_shows_its_steps(tmp_path):
    """A one-epoch run's curve draws its loss per step (not one dot), dev scores in %, and the
    title names the split and the level it was trained on; metrics.csv keeps one row per epoch
    without the per-step losses."""
    from unittest import mock

    import numpy as np

    from proofmatch.models import curves as C
    from proofmatch.models import train as T

    steps = list(np.linspace(3.0, 2.0, 40))
    history = [
        {
            "epoch": 1,
            "loss": 2.5,
            "local_loss": 2.5,
            "dev_mrr": 0.171,
            "dev_acc": 0.05,
            C.STEP_LOSS: steps,
        }
    ]
    title = C.curve_title(
        tmp_path / "results/runs/mixed/npt-local/full-both", "npt", "local", "both", 13
    )
    assert title == "npt-local, split mixed, trained on level full, both view, seed 13"
    import matplotlib.axes

    drawn = []
    real_plot = matplotlib.axes.Axes.plot

    def spy(self, *args, **kwargs):
        drawn.append((kwargs.get("label"), list(args[1]) if len(args) > 1 else []))
        return real_plot(self, *args, **kwargs)

    with mock.patch.object(matplotlib.axes.Axes, "plot", spy):
        C.plot_curve(history, tmp_path / "curve.png", title)
    assert (tmp_path / "curve.png").stat().st_size > 1000
    by_label = dict(drawn)
    assert by_label["loss per step"] == steps
    assert by_label["dev MRR"] == [pytest.approx(17.1)]
    assert C.STEP_LOSS not in T._csv_rows(history).columns
