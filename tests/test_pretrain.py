"""ScratchBERT MLM pretraining: packing, the loss goes down, the checkpoint reloads, a changed
run starts afresh (resuming after a kill: tests/test_resume.py)."""

from __future__ import annotations

import logging

import pandas as pd
import pytest
import torch
from toydata import toy_pairs

from proofmatch.artifacts import write_parquet
from proofmatch.data.splits import read_part
from proofmatch.models import mlm
from proofmatch.models import pretrain as pt
from proofmatch.models.params import PretrainParams, typed_params
from proofmatch.models.tokenizer import train_tokenizer

PARAMS = dict(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_length=32,
    mlm_probability=0.2,
    epochs=3,
    batch_size=8,
    learning_rate=2e-3,
    eval_every_steps=5,
    warmup_fraction=0.1,
)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("pretrain")
    write_parquet(toy_pairs(n_articles=12, pairs_per_article=5, seed=4), d / "data.parquet")
    train_tokenizer(d / "data.parquet", d / "tok", vocab_size=150, min_frequency=2)
    return d


def test_pack_concatenates_then_chunks():
    chunks = mlm.pack([[1, 2, 3], [4, 5], [6, 7, 8, 9]], 4)
    assert chunks == [[1, 2, 3, 4], [5, 6, 7, 8], [9]]


def test_mlm_loss_decreases_and_checkpoint_reloads(corpus):
    from transformers import AutoTokenizer, BertForMaskedLM, BertModel

    out = corpus / "sb"
    pt.pretrain(corpus / "data.parquet", corpus / "tok", out, PARAMS, seed=1)
    log = pd.read_csv(out / pt.LOG_FILE)
    assert log["val_loss"].iloc[-1] < log["val_loss"].iloc[0] - 0.2
    metrics = pd.read_json(out / pt.METRICS_FILE, typ="series")
    assert metrics["best_val_loss"] == pytest.approx(log["val_loss"].min())
    # a finished run leaves no resume state
    assert not pt.resume_dir(out).exists() and not list(corpus.glob(".*"))
    # out_dir is a complete checkpoint: model + tokenizer
    model = BertForMaskedLM.from_pretrained(str(out), local_files_only=True)
    tok = AutoTokenizer.from_pretrained(str(out))
    assert (
        model.config.vocab_size == len(tok)
        and model.config.max_position_embeddings >= PARAMS["max_length"]
    )
    enc = BertModel.from_pretrained(str(out), local_files_only=True, add_pooling_layer=False)
    batch = tok(["Lemma . Let $a be"], return_tensors="pt")
    assert enc(**batch).last_hidden_state.shape[-1] == PARAMS["hidden_size"]
    # the model on disk is the best one: it reproduces the best validation loss
    dev = mlm.packed_chunks(tok, mlm.corpus_texts(read_part(corpus / "data.parquet", "dev")), 32)
    batches = mlm.validation_batches(
        mlm.mlm_collator(tok, PARAMS["mlm_probability"]), dev, PARAMS["batch_size"], seed=1
    )
    rt = pt.runtime.Runtime(torch.device("cpu"))
    assert mlm.validation_loss(model, batches, rt) == pytest.approx(
        metrics["best_val_loss"], rel=1e-5
    )


def test_changed_params_start_afresh_instead_of_resuming(corpus, caplog, monkeypatch):
    """Snakemake reruns pretraining when its params change: the old state (of a run that did not
    finish) must not be resumed."""
    changed = dict(PARAMS, learning_rate=1e-3)
    pt.pretrain(corpus / "data.parquet", corpus / "tok", corpus / "fresh", changed, seed=3)
    run = corpus / "rerun"

    def fail(*args, **kwargs):
        raise RuntimeError("killed before finishing")

    with monkeypatch.context() as m:
        m.setattr(pt, "finish_pretraining", fail)
        with pytest.raises(RuntimeError, match="killed before finishing"):
            pt.pretrain(
                corpus / "data.parquet", corpus / "tok", run, dict(PARAMS, epochs=1), seed=3
            )
    assert (pt.resume_dir(run) / "state.pt").exists() and not run.exists()
    with caplog.at_level(logging.WARNING, logger="proofmatch.models.checkpoint"):
        pt.pretrain(corpus / "data.parquet", corpus / "tok", run, changed, seed=3)
    assert "(changed: params.epochs, params.learning_rate); starting afresh" in caplog.text
    pd.testing.assert_frame_equal(
        pd.read_csv(run / pt.LOG_FILE), pd.read_csv(corpus / "fresh" / pt.LOG_FILE)
    )
    assert (run / "model.safetensors").read_bytes() == (
        corpus / "fresh" / "model.safetensors"
    ).read_bytes()


def test_check_interval_counts_steps_or_examples():
    """§8: "every 500 steps, where one step stands for training on one example"."""

    def due(n, batch, every, unit):
        return [s for s in range(1, n + 1) if pt.check_due(s, batch, every, unit)]

    assert due(1000, 4, 500, "steps") == [500, 1000]
    assert due(400, 4, 500, "examples") == [125, 250, 375]  # 500 examples = 125 steps of 4
    assert due(8, 256, 500, "examples") == [2, 4, 6, 8]  # 500 / 256 = 1.95 steps
    assert due(128, 256, 500, "examples")[-3:] == [
        124,
        125,
        127,
    ]  # 31,500 at step 124, 32,000 at 125
    assert due(3, 600, 500, "examples") == [1, 2, 3]  # a step past several multiples checks once
    with pytest.raises(ValueError, match="eval_every_unit"):
        pt.check_due(1, 4, 500, "epochs")


def test_pretraining_validates_every_n_examples(corpus):
    """eval_every_unit: examples in a run: 16 chunks at 8 per step is a validation every 2 steps."""
    out = corpus / "by_examples"
    pt.pretrain(
        corpus / "data.parquet",
        corpus / "tok",
        out,
        dict(PARAMS, epochs=1, eval_every_steps=16, eval_every_unit="examples"),
        seed=1,
    )
    steps = pd.read_csv(out / pt.LOG_FILE)["step"].tolist()
    assert len(steps) >= 3 and all(s % 2 == 0 for s in steps[:-1]) and steps[:2] == [2, 4]
    with pytest.raises(ValueError, match="eval_every_unit"):
        pt.pretrain(
            corpus / "data.parquet",
            corpus / "tok",
            corpus / "bad",
            dict(PARAMS, eval_every_unit="epochs"),
            seed=1,
        )


def test_a_check_by_examples_saves_the_best_weights_not_the_resume_state(corpus, monkeypatch):
    """eval_every_unit: examples validates every 2 steps (16 chunks at 8 per step) and writes best/
    when it improves, but the resume state (model, optimizer, scheduler) only every
    eval_every_steps optimizer steps and at the epoch's end."""
    saved, best = [], []
    real_save, real_validate = pt.checkpoint.save, pt.validate

    def save(*args, progress, **kw):
        saved.append(progress["step"])
        return real_save(*args, progress=progress, **kw)

    def validate(run, progress):
        before = progress.best_step
        real_validate(run, progress)
        if progress.best_step != before:
            best.append(progress.step)

    monkeypatch.setattr(pt.checkpoint, "save", save)
    monkeypatch.setattr(pt, "validate", validate)
    out = corpus / "by_examples_saves"
    pt.pretrain(
        corpus / "data.parquet",
        corpus / "tok",
        out,
        dict(PARAMS, epochs=1, eval_every_steps=16, eval_every_unit="examples"),
        seed=1,
    )
    steps = pd.read_csv(out / pt.LOG_FILE)["step"].tolist()
    last = steps[-1]
    assert len(steps) >= 3 and best and set(best) <= set(steps)
    assert saved == [s for s in range(1, last + 1) if s % 16 == 0] + [last], (saved, steps)
    assert len(saved) < len(steps)
    assert pt.save_due(32, 16) and not pt.save_due(2, 16)


def test_learning_rate_warms_up_from_zero_then_decays_linearly(corpus, tmp_path):
    """The HF Trainer's schedule (transformers.get_linear_schedule_with_warmup)."""
    p = typed_params(PretrainParams, dict(PARAMS, warmup_fraction=0.25))
    rt = pt.runtime.Runtime(torch.device("cpu"))
    run = pt.build_pretraining(corpus / "data.parquet", corpus / "tok", tmp_path, rt, p, seed=1)
    total = p.epochs * run.steps_per_epoch
    warmup = int(0.25 * total)
    rates = []
    for _ in range(total):
        rates.append(run.scheduler.get_last_lr()[0])
        run.optimizer.step()  # no gradients: the weights stay, the schedule advances
        run.scheduler.step()
    expected = [s / warmup if s < warmup else (total - s) / (total - warmup) for s in range(total)]
    assert warmup >= 2 and rates[0] == 0.0
    assert rates == pytest.approx([p.learning_rate * f for f in expected])


def test_validation_loss_skips_batches_without_masked_tokens():
    """A short last chunk can draw no [MASK]: its NaN mean must not poison the validation loss."""
    import types

    from proofmatch.models import runtime

    class Fake(torch.nn.Module):
        def forward(self, input_ids, labels, **_):
            masked = labels != -100
            return types.SimpleNamespace(
                loss=torch.tensor(2.0) if masked.any() else torch.tensor(float("nan"))
            )

    some = {
        "input_ids": torch.ones(1, 4, dtype=torch.long),
        "labels": torch.tensor([[-100, 3, -100, -100]]),
    }
    none = {"input_ids": torch.ones(1, 2, dtype=torch.long), "labels": torch.tensor([[-100, -100]])}
    rt = runtime.Runtime(torch.device("cpu"))
    assert mlm.validation_loss(Fake(), [some, none], rt) == 2.0
    with pytest.raises(ValueError, match="no masked token"):
        mlm.validation_loss(Fake(), [none], rt)
