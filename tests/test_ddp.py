"""Several processes (two CPU ranks, gloo) run the experiment of one process (fidelity item 6).

The configured batch size is the global batch: each rank encodes its share of a batch, and the
in-batch softmax, the assignment of the global loss and the triplet loss see the whole batch.
With dropout off, a step's loss and gradients, a few epochs of NPT training and a few steps of
MLM pretraining through ``runtime.launch`` equal those of one process; only rank 0 writes files,
and both ranks take the same steps.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from toydata import toy_pairs, train_params

from proofmatch.artifacts import write_parquet
from proofmatch.models import runtime, sampling

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def cpu_only(monkeypatch):
    """Both runs on the CPU also where there is a GPU (two ranks cannot share one)."""
    monkeypatch.setenv(runtime.DEVICE_ENV, "cpu")


NPT = dict(
    epochs=3,
    batch_size=13,
    learning_rate=0.01,
    lr_decay=0.9,
    eval_every=2,
    max_length=48,
    d_model=16,
    n_layers=1,
    n_heads=2,
    d_k=8,
    dropout=0.0,
    attention_dropout=0.0,
    optimizer="asgd",
    scale_scores=False,
)
MLM = dict(
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=32,
    max_length=24,
    mlm_probability=0.2,
    epochs=1,
    batch_size=7,
    micro_batch_size=2,
    learning_rate=2e-3,
    eval_every_steps=3,
    warmup_fraction=0.1,
    dropout=0.0,
)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddp")
    write_parquet(toy_pairs(n_articles=10, pairs_per_article=5, seed=5), d / "toy.parquet")
    return d / "toy.parquet"


# ---------------------------------------------------------------- sharing a batch


def test_share_and_gather_cover_the_batch_once_in_order():
    batch = np.array([10, 11, 12, 13, 14])
    shares = [runtime.Runtime(torch.device("cpu"), r, 3).share(batch) for r in range(3)]
    assert [s.tolist() for s in shares] == [[10, 11], [12, 13], [14, 10]]  # equal sizes, padded
    assert [runtime.Runtime(torch.device("cpu"), r, 3).n_real(5) for r in range(3)] == [2, 2, 1]
    tiny = [runtime.Runtime(torch.device("cpu"), r, 4).share(batch[:2]) for r in range(4)]
    assert [s.tolist() for s in tiny] == [[10], [11], [10], [10]]  # no rank is ever empty
    one = runtime.Runtime(torch.device("cpu"))
    assert one.share(batch).tolist() == batch.tolist()


# ---------------------------------------------------------------- one step


def _step_worker(data: str, batch: list[int]) -> dict:
    """Loss and parameter gradients of one step of each kind on ``batch`` (NPT, dropout off)."""
    from proofmatch.data.splits import read_part
    from proofmatch.models.batching import TokenTable
    from proofmatch.models.matcher import build_matcher
    from proofmatch.models.steps import batch_loss

    rt = runtime.init_runtime()
    train = read_part(data, "train")
    idx = np.asarray(batch)
    out = {}
    for kind in ("local", "global", "triplet"):
        torch.manual_seed(0)
        mode = "triplet" if kind == "triplet" else "local"
        matcher = build_matcher("npt", mode, "both", train_params("npt", **NPT), train)
        model = runtime.wrap_ddp(matcher, rt)
        statements, proofs = (
            TokenTable.build(
                matcher.codec.ids(list(train[col]), NPT["max_length"]),
                matcher.codec.pad_id,
                rt.device,
            )
            for col in ("statement_tokens", "proof_tokens")
        )
        neg = sampling.sample_negatives(
            idx, pd.factorize(train["article_id"])[0], 0.5, np.random.default_rng(1)
        )
        loss, acc = batch_loss(model, rt, kind, idx, statements, proofs, neg, 1.0)
        loss.backward()
        out[kind] = {
            "loss": float(loss.detach()),
            "acc": acc,
            "grads": {
                n: p.grad.clone() for n, p in matcher.named_parameters() if p.grad is not None
            },
        }
    if rt.distributed:  # rank 0 reports what every rank computed
        every: list = [None] * rt.world_size
        torch.distributed.all_gather_object(every, out)
        out = {"ranks": every}
    runtime.close_runtime(rt)
    return out


def test_two_ranks_give_the_loss_and_gradients_of_one_process(toy):
    batch = [3, 0, 7, 12, 5, 9, 1]  # odd: the second rank's share is padded
    one = runtime.launch(1, _step_worker, str(toy), batch)
    two = runtime.launch(2, _step_worker, str(toy), batch)["ranks"]
    for kind in ("local", "global", "triplet"):
        ref = one[kind]
        assert ref["loss"] > 0 and len(ref["grads"]) > 5
        for rank in two:
            got = rank[kind]
            assert got["loss"] == pytest.approx(ref["loss"], rel=1e-5)
            assert got["acc"] == pytest.approx(ref["acc"], nan_ok=True)
            assert got["grads"].keys() == ref["grads"].keys()
            for name, g in ref["grads"].items():
                torch.testing.assert_close(
                    got["grads"][name], g, rtol=1e-4, atol=1e-6, msg=f"{kind} {name}"
                )
    # a rank alone sees only its rows: its loss would differ (the test can tell the two apart)
    half = runtime.launch(1, _step_worker, str(toy), batch[:4])
    assert half["local"]["loss"] != pytest.approx(one["local"]["loss"], rel=1e-3)


# ---------------------------------------------------------------- whole runs through runtime.launch


def _instrumented(record: str, target: str, *args, **kwargs):
    """Run ``target`` (``module:function``) in this rank, counting its steps and the files it
    touches under the run's output folder (Python audit events); write the record beside."""
    import importlib

    from proofmatch.models import pretrain, train

    rank = int(os.environ.get("RANK", "0"))
    out = str(Path(kwargs.pop("watch")).resolve())
    touched: list[str] = []
    events = {
        "open",
        "os.rename",
        "os.replace",
        "os.mkdir",
        "os.remove",
        "os.rmdir",
        "shutil.rmtree",
    }

    def writes(args: tuple) -> bool:  # the "open" event: (path, mode, flags)
        mode, flags = args[1], args[2]
        if isinstance(mode, str):
            return bool(set(mode) & set("wax+"))
        return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))

    def hook(event: str, args: tuple) -> None:
        if event not in events or not args or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        if event == "open" and not writes(args):
            return
        path = os.fsdecode(args[0])
        if os.path.abspath(path).startswith(out):
            touched.append(f"{event} {path}")

    steps = {"n": 0}
    for mod, name in ((train, "batch_loss"), (pretrain, "mlm_step")):
        real = getattr(mod, name)

        def counted(*a, _real=real, **k):
            steps["n"] += 1
            return _real(*a, **k)

        setattr(mod, name, counted)
    module, fn = target.split(":")
    sys.addaudithook(hook)
    result = getattr(importlib.import_module(module), fn)(*args, **kwargs)
    touched_now = list(touched)  # before the record itself is written
    Path(record, f"rank-{rank}.json").write_text(
        json.dumps({"steps": steps["n"], "touched": touched_now})
    )
    return result


def _records(folder: Path) -> dict[int, dict]:
    return {
        int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in folder.glob("rank-*.json")
    }


def test_npt_training_on_two_ranks_equals_one_process(toy, tmp_path):
    from proofmatch.models.train import train_run

    one = train_run(
        toy, tmp_path / "one", "npt", "hybrid", "both", train_params("npt", **NPT), seed=4
    )
    rec = tmp_path / "rec"
    rec.mkdir()
    two = runtime.launch(
        2,
        _instrumented,
        str(rec),
        "proofmatch.models.train:train_run",
        toy,
        tmp_path / "two",
        "npt",
        "hybrid",
        "both",
        train_params("npt", **NPT),
        seed=4,
        watch=tmp_path / "two",
    )
    records = _records(rec)
    assert sorted(records) == [0, 1]
    assert records[0]["steps"] == records[1]["steps"] > 0  # every step on both ranks
    assert records[0]["touched"] and not records[1]["touched"], records[1]["touched"]
    a, b = (
        pd.read_csv(tmp_path / d / "metrics.csv").drop(columns="train_seconds")
        for d in ("one", "two")
    )
    pd.testing.assert_frame_equal(a, b, rtol=1e-4)
    assert two["best_epoch"] == one["best_epoch"] and two["dev_mrr"] == pytest.approx(
        one["dev_mrr"], abs=1e-6
    )
    from safetensors.torch import load_file

    wa, wb = (load_file(str(tmp_path / d / "model" / "model.safetensors")) for d in ("one", "two"))
    for name in wa:
        torch.testing.assert_close(wb[name], wa[name], rtol=1e-4, atol=1e-5)


def test_mlm_pretraining_on_two_ranks_equals_one_process(toy, tmp_path):
    from proofmatch.models.pretrain import LOG_FILE, METRICS_FILE, pretrain
    from proofmatch.models.tokenizer import train_tokenizer

    train_tokenizer(toy, tmp_path / "tok", vocab_size=120, min_frequency=2)
    pretrain(toy, tmp_path / "tok", tmp_path / "one", MLM, seed=6)
    rec = tmp_path / "rec"
    rec.mkdir()
    runtime.launch(
        2,
        _instrumented,
        str(rec),
        "proofmatch.models.pretrain:pretrain",
        toy,
        tmp_path / "tok",
        tmp_path / "two",
        MLM,
        seed=6,
        watch=tmp_path / "two",
    )
    records = _records(rec)
    assert records[0]["steps"] == records[1]["steps"] > 3
    assert records[0]["touched"] and not records[1]["touched"], records[1]["touched"]
    a, b = (pd.read_csv(tmp_path / d / LOG_FILE) for d in ("one", "two"))
    assert len(a) >= 2
    pd.testing.assert_frame_equal(a, b, rtol=1e-4)
    ma, mb = (json.loads((tmp_path / d / METRICS_FILE).read_text()) for d in ("one", "two"))
    assert ma.pop("best_val_loss") == pytest.approx(mb.pop("best_val_loss"), rel=1e-5) and ma == mb
