"""Model selection during training: which weights dev evaluation reads and
``model/`` keeps (ASGD's average or the raw parameters), which dev metric selects the saved
epoch (MRR or accuracy), and hybrid runs selecting on the dev accuracy of global decoding."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from safetensors.torch import load_file
from toydata import toy_pairs, train_params

from proofmatch.artifacts import write_parquet
from proofmatch.config import ConfigError, default, load_config, run_matching, validate_config
from proofmatch.decoding.assign import DecodeSettings
from proofmatch.decoding.local import factor_scorer
from proofmatch.evaluation.evaluate import EvalSettings, evaluate_run
from proofmatch.models import optim as optim_mod
from proofmatch.models import train as train_mod
from proofmatch.models.matcher import load_matcher
from proofmatch.models.params import TrainParams
from proofmatch.models.selection import decoded_metrics, selection_column
from proofmatch.models.train import train_run

CONFIG = Path(__file__).resolve().parents[1] / "config"
# what these tests change of the schema's NPT settings (asgd, unscaled scores and dropout 0.1:
# the settings they were written with)
TINY = dict(
    epochs=4,
    batch_size=16,
    learning_rate=0.01,
    lr_decay=1.0,
    eval_every=1,
    max_length=64,
    d_model=16,
    n_layers=1,
    n_heads=2,
    d_k=8,
    optimizer="asgd",
    scale_scores=False,
    dropout=0.1,
    attention_dropout=0.1,
)


def tiny(**changes) -> TrainParams:
    """The TrainParams of a test run: :data:`TINY`, then ``changes``."""
    return train_params("npt", **{**TINY, **changes})


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    d = tmp_path_factory.mktemp("selection")
    write_parquet(toy_pairs(n_articles=12, pairs_per_article=6, seed=2), d / "toy.parquet")
    return d / "toy.parquet"


# ---------------------------------------------------------------- keys, defaults, paper.yaml


def test_defaults_agree_and_paper_yaml_sets_the_references_selection():
    for block, encoder in (
        ("npt", "npt"),
        ("bert", "scratchbert"),
    ):  # the schema's defaults: today's behaviour
        p = TrainParams.from_config(validate_config({})["matching"], encoder)
        assert default(f"matching.{block}.eval_weights") == p.eval_weights == "average"
        assert default(f"matching.{block}.select_metric") == p.select_metric == "mrr"
        assert default(f"matching.{block}.hybrid_selection") == p.hybrid_selection == "local"
    paper = load_config(CONFIG / "config.yaml", CONFIG / "paper.yaml")["matching"]
    for encoder in ("npt", "scratchbert", "mathbert"):
        q = TrainParams.from_config(paper, encoder)
        assert (q.eval_weights, q.select_metric, q.hybrid_selection) == (
            "raw",
            "accuracy",
            "global",
        )
        assert (
            selection_column(q, "local") == "dev_acc"
            and selection_column(q, "hybrid") == "dev_global_acc"
        )
    demo = TrainParams.from_config(load_config(CONFIG / "config.yaml")["matching"], "npt")
    assert selection_column(demo, "local") == selection_column(demo, "hybrid") == "dev_mrr"


def test_unknown_selection_values_are_refused(toy, tmp_path):
    cfg = load_config(CONFIG / "config.yaml")
    bad = copy.deepcopy(cfg)
    bad["matching"]["npt"]["select_metric"] = "acc"
    with pytest.raises(ConfigError, match="matching.npt.select_metric"):
        validate_config(bad)
    for key, value in (
        ("select_metric", "loss"),
        ("hybrid_selection", "both"),
        ("eval_weights", "ema"),
    ):
        with pytest.raises(ValueError, match=f"unknown {key} '{value}'"):
            train_run(toy, tmp_path / key, "npt", "local", "both", tiny(**{key: value}), seed=0)
        assert not (tmp_path / key / "metrics.csv").exists()


# ---------------------------------------------------------------- (a) raw weights or ASGD's average


@pytest.mark.parametrize("weights", ["average", "raw"])
def test_saved_model_holds_the_chosen_weights(weights, toy, tmp_path, monkeypatch):
    """With t0 = 0 ASGD averages from its first step, so after an epoch of several steps the
    average differs from the raw parameters; ``model/`` must hold the ones ``eval_weights`` names,
    and the checkpoint (training state) always the raw ones."""
    monkeypatch.setattr(optim_mod, "ASGD_T0", 0)
    # keep the resume state that a finished run discards: it holds the raw weights and ASGD's ax
    monkeypatch.setattr(train_mod.checkpoint, "discard", lambda *args, **kwargs: None)
    out = tmp_path / weights
    train_run(
        toy,
        out,
        "npt",
        "local",
        "both",
        tiny(epochs=1, optimizer="asgd", learning_rate=0.5, eval_weights=weights),
        seed=0,
    )
    state = torch.load(out / "checkpoint" / "state.pt", weights_only=False)
    raw = state["model"]
    names = [name for name, _ in load_matcher(out, device="cpu").named_parameters()]
    ax = {name: state["optimizer"]["state"][i]["ax"] for i, name in enumerate(names)}
    assert (
        int(state["optimizer"]["state"][0]["step"]) > 2
    )  # several steps: an average, not the last iterate
    saved = load_file(str(out / "model" / "model.safetensors"))
    differ = [n for n in names if not torch.equal(ax[n], raw[n])]
    assert differ, "the test needs an average that differs from the raw weights"
    for n in names:
        torch.testing.assert_close(
            saved[n], (ax if weights == "average" else raw)[n], rtol=0, atol=0
        )
    other = raw if weights == "average" else ax
    assert any(not torch.equal(saved[n], other[n]) for n in differ)


def test_under_adamw_both_weights_give_the_same_run(toy, tmp_path):
    """AdamW has no average: ``eval_weights`` changes nothing but the fingerprint."""
    a = train_run(
        toy, tmp_path / "a", "npt", "local", "both", tiny(epochs=2, optimizer="adamw"), seed=0
    )
    b = train_run(
        toy,
        tmp_path / "b",
        "npt",
        "local",
        "both",
        tiny(epochs=2, optimizer="adamw", eval_weights="raw"),
        seed=0,
    )
    assert a.pop("fingerprint") != b.pop("fingerprint") and a == b
    assert (tmp_path / "a" / "model" / "model.safetensors").read_bytes() == (
        tmp_path / "b" / "model" / "model.safetensors"
    ).read_bytes()


# ---------------------------------------------------------------- (b), (c) the selected epoch

# A crafted dev history: each metric peaks at another epoch.
HISTORY = {
    1: {"mrr": 0.30, "acc": 0.10, "global_acc": 0.05},
    2: {"mrr": 0.50, "acc": 0.20, "global_acc": 0.10},  # best MRR
    3: {"mrr": 0.45, "acc": 0.30, "global_acc": 0.40},  # best accuracy
    4: {"mrr": 0.40, "acc": 0.30, "global_acc": 0.60},
}  # best global accuracy (accuracy ties epoch 3)


def scripted_run(
    toy, out: Path, mode: str, monkeypatch, **keys
) -> tuple[dict, pd.DataFrame, dict, list]:
    """Train with ``rank_metrics`` replaced by the crafted history; returns the result, metrics.csv,
    the model weights at each evaluated epoch and the ``global_decoding`` flags asked for."""
    snapshots: dict[int, dict[str, torch.Tensor]] = {}
    asked: list[bool] = []

    def scripted(matcher, statements, proofs, batch_size=64, global_decoding=False, decode=None):
        epoch = len(snapshots) + 1
        snapshots[epoch] = {k: v.detach().clone() for k, v in matcher.state_dict().items()}
        asked.append(global_decoding)
        m = dict(HISTORY[epoch])
        if not global_decoding:
            del m["global_acc"]
        return m

    monkeypatch.setattr(train_mod, "rank_metrics", scripted)
    res = train_run(toy, out, "npt", mode, "both", tiny(**keys), seed=0)
    return res, pd.read_csv(out / "metrics.csv"), snapshots, asked


def saved_epoch(out: Path, snapshots: dict) -> int:
    """The evaluated epoch whose weights ``model/`` holds."""
    saved = load_file(str(out / "model" / "model.safetensors"))
    same = [
        e for e, snap in snapshots.items() if all(torch.equal(saved[k], snap[k]) for k in saved)
    ]
    assert len(same) == 1, same
    return same[0]


@pytest.mark.parametrize(
    "mode, keys, column, epoch",
    [
        ("local", {}, "dev_mrr", 2),
        ("local", {"select_metric": "accuracy"}, "dev_acc", 3),  # the tie at epoch 4 keeps epoch 3
        ("hybrid", {}, "dev_mrr", 2),
        ("hybrid", {"select_metric": "accuracy"}, "dev_acc", 3),
        (
            "local",
            {"select_metric": "accuracy", "hybrid_selection": "global"},
            "dev_acc",
            3,
        ),  # local runs: local
    ],
)
def test_selection_by_mrr_or_accuracy_picks_its_epoch(
    mode, keys, column, epoch, toy, tmp_path, monkeypatch
):
    out = tmp_path / "run"
    res, hist, snapshots, asked = scripted_run(toy, out, mode, monkeypatch, **keys)
    assert not any(asked)  # no global decoding where it does not select
    assert res["best_epoch"] == epoch and res["select_on"] == column
    assert (res["dev_mrr"], res["dev_acc"]) == (HISTORY[epoch]["mrr"], HISTORY[epoch]["acc"])
    assert res["dev_global_acc"] is None and hist["dev_global_acc"].isna().all()
    assert (hist["select_on"] == column).all()
    assert hist.loc[hist["best"], "epoch"].iloc[-1] == epoch
    assert saved_epoch(out, snapshots) == epoch
    assert json.loads((out / "metrics.json").read_text()) == res


def test_hybrid_global_selection_uses_global_decoding_accuracy(toy, tmp_path, monkeypatch):
    out = tmp_path / "run"
    res, hist, snapshots, asked = scripted_run(
        toy, out, "hybrid", monkeypatch, select_metric="accuracy", hybrid_selection="global"
    )
    assert asked == [True] * 4
    assert (
        res["best_epoch"] == 4
        and res["select_on"] == "dev_global_acc"
        and res["dev_global_acc"] == 0.60
    )
    assert hist["dev_global_acc"].tolist() == [HISTORY[e]["global_acc"] for e in range(1, 5)]
    assert hist["best"].tolist() == [True, True, True, True]  # global accuracy rises every epoch
    assert (hist["select_on"] == "dev_global_acc").all() and saved_epoch(out, snapshots) == 4


def test_hybrid_global_selection_decodes_the_dev_part_globally(toy, tmp_path):
    """Unscripted: the recorded global accuracy is the evaluation stage's own global decoding of
    the saved model (exact lapjv at this size)."""
    out = tmp_path / "hyb"
    res = train_run(
        toy, out, "npt", "hybrid", "both", tiny(epochs=2, hybrid_selection="global"), seed=0
    )
    hist = pd.read_csv(out / "metrics.csv")
    assert hist["dev_global_acc"].notna().all() and res["select_on"] == "dev_global_acc"
    dev = evaluate_run(
        out,
        toy,
        "dev",
        tmp_path / "dev.parquet",
        tmp_path / "dev.json",
        settings=EvalSettings(DecodeSettings(5, 2000, 0)),
    )
    assert dev["global_method"] == "exact"
    assert (dev["global_acc"], dev["mrr"], dev["acc"]) == (
        res["dev_global_acc"],
        res["dev_mrr"],
        res["dev_acc"],
    )


def test_hybrid_global_selection_decodes_with_the_configs_decode_settings(toy, tmp_path):
    """paper.yaml's decode.exact_max_n: 1 reaches training through run_matching: the dev part is
    decoded over its top-k graph in training as in evaluation, not exactly."""
    matching = {
        "max_length": 64,
        "mathbert": None,
        "npt": {"hybrid_selection": "global"},
        "bert": {},
    }
    decode = {"topk": 5, "exact_max_n": 1, "chunk_rows": 4}
    assert run_matching(matching, "npt", decode)["decode"] == {"topk": 5, "exact_max_n": 1}
    assert "decode" not in run_matching(
        matching, "scratchbert", decode
    )  # bert: hybrid_selection not global
    assert "decode" not in run_matching(matching, "npt")
    out = tmp_path / "hyb1"
    res = train_run(
        toy,
        out,
        "npt",
        "hybrid",
        "both",
        tiny(epochs=2, hybrid_selection="global"),
        seed=0,
        decode=run_matching(matching, "npt", decode)["decode"],
    )
    dev = evaluate_run(
        out,
        toy,
        "dev",
        tmp_path / "dev.parquet",
        tmp_path / "dev.json",
        settings=EvalSettings(DecodeSettings(5, 1, 0)),
    )
    assert dev["global_method"] != "exact"
    assert (dev["global_acc"], dev["mrr"], dev["acc"]) == (
        res["dev_global_acc"],
        res["dev_mrr"],
        res["dev_acc"],
    )


@pytest.mark.parametrize("exact_max_n", [2000, 1])
def test_decoded_metrics_global_accuracy_differs_from_local(exact_max_n, monkeypatch):
    """A hub: statement 1 ranks proof 0 first, so local accuracy is 1/2, but the assignment
    (2 + 1 > 1.9 + 0) gives every statement its own proof; the same exactly and on the sparse
    k-best graph."""
    S = np.array([[2.0, 0.0], [1.9, 1.0]], np.float32)
    scorer = factor_scorer(S, np.eye(2, dtype=np.float32))
    assert decoded_metrics(scorer, 2, decode=DecodeSettings(exact_max_n=exact_max_n)) == {
        "mrr": 0.75,
        "acc": 0.5,
    }
    assert decoded_metrics(scorer, 2, True, DecodeSettings(exact_max_n=exact_max_n)) == {
        "mrr": 0.75,
        "acc": 0.5,
        "global_acc": 1.0,
    }
