"""MLM pretraining of ScratchBERT from scratch on one split family's training text.

:func:`pretrain` is the loop: :func:`build_pretraining`, :func:`resume_pretraining`, then
:func:`pretrain_epoch` (its :func:`pretrain_step` s, with :func:`validate` every
``eval_every_steps`` steps of ``eval_every_unit``, :func:`save_progress` every ``eval_every_steps``
optimizer steps, and both at the end of an epoch), and
:func:`finish_pretraining`. ``eval_every_unit`` says what a step of that interval is
(:func:`check_due`): an optimizer step (``steps``) or, as the paper defines it (§8), one example
(``examples``: one packed chunk; a validation when the chunks trained reach each multiple).
What a step computes (the packed chunks, their masks, the loss) is :mod:`proofmatch.models.mlm`.

Differences from the reference script (notes §6), each on purpose:

* the corpus is the statements and proofs of the **train** part (``pretrain.text: pairs``) or
  every paragraph of every article of the dataset, dev and test articles included
  (``pretrain.text: corpus``, :mod:`proofmatch.data.article_text`); the **dev** part's statements
  and proofs are the validation set either way (the reference drew an unseeded 10 % of its corpus);
* sequences are **packed**: every text is tokenized with ``[CLS] ... [SEP]``, the texts are
  concatenated and cut into ``max_length`` chunks, so no compute goes to padding (the reference
  padded every line to 512);
* validation masks are drawn once from a seeded generator, so successive validation losses
  differ only by the model and the best checkpoint is chosen on a fixed target;
* a plain torch loop (AdamW; ``transformers.get_linear_schedule_with_warmup``, the HF Trainer's
  schedule: linear warm-up from 0 over ``warmup_fraction`` of the steps, then linear decay to 0;
  the reference set no warm-up) with a resumable checkpoint:
  model, optimizer, scheduler, every RNG state, and the position in the epoch. Data order is a
  function of ``(seed, epoch)`` and the masks of a step of ``(seed, epoch, step)``, so a rerun
  after a kill continues exactly where it stopped;
* ``batch_size`` is the global batch (the reference: 8 chunks per device × 8 accumulation steps
  on the paper's four GPUs). Several processes split each batch, every process draws the same
  masks for the whole batch and takes its rows, and the loss is the mean over the batch's masked
  tokens, so a step equals the one-process step up to dropout; ``micro_batch_size`` bounds the
  chunks a process runs at once (gradient accumulation).

``out_dir`` is written whole when the run ends (:func:`finish_pretraining`): the best model
(``save_pretrained``) and the tokenizer files, i.e. a complete checkpoint that
``BertModel.from_pretrained`` and ``AutoTokenizer`` load; also ``pretrain_log.csv`` (one row per
evaluation) and ``pretrain_metrics.json``. Until then the run lives in its resume folder beside
it, ``<out_dir>.checkpoint/`` (:func:`resume_dir`): ``state.pt`` (the latest training state),
``best/`` (the best model so far, written when a validation improves) and ``pretrain_log.csv``
(written with the state). ``state.pt``
is written every ``eval_every_steps`` *optimizer* steps and at each epoch's end (:func:`save_due`);
a validation in between (``eval_every_unit: examples``) writes only ``best/`` when it improves.
A rerun after a kill resumes from ``state.pt`` and repeats the validations after it (training is
a function of the seed, so it finds the same best). The resume folder is outside
``out_dir`` because a workflow manager deletes a failed job's outputs; a finished run removes it,
so running it again pretrains again.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from proofmatch import config
from proofmatch.artifacts import atomic_dir, verify, write_csv, write_json
from proofmatch.data.article_text import read_article_text
from proofmatch.data.splits import read_parts
from proofmatch.models import checkpoint, runtime, sampling
from proofmatch.models.mlm import (
    corpus_texts,
    masked_batch,
    mlm_collator,
    mlm_step,
    packed_chunks,
    paragraph_texts,
    validation_batches,
    validation_loss,
)
from proofmatch.models.params import PretrainParams
from proofmatch.models.tokenizer import load_tokenizer

log = logging.getLogger(__name__)

LOG_FILE = "pretrain_log.csv"
METRICS_FILE = "pretrain_metrics.json"
BEST_DIR = "best"  # the best model so far, in the resume folder
# what a killed run leaves in its resume folder
TEMPORARIES = (f".{BEST_DIR}.*", f".{LOG_FILE}.*", *checkpoint.TEMPORARIES)


def resume_dir(out_dir: str | os.PathLike) -> Path:
    """The resume folder of the pretraining run whose output folder is ``out_dir``: beside it,
    ``<out_dir>.checkpoint``."""
    out = Path(out_dir)
    return out.with_name(f"{out.name}.checkpoint")


def bert_config(p: PretrainParams, tokenizer):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=p.hidden_size,
        num_hidden_layers=p.num_hidden_layers,
        num_attention_heads=p.num_attention_heads,
        intermediate_size=p.intermediate_size,
        max_position_embeddings=p.max_position_embeddings or max(512, p.max_length),
        pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=p.dropout,
        attention_probs_dropout_prob=p.dropout,
    )


# ---------------------------------------------------------------- a run, step by step


@dataclass
class Pretraining:
    """What a pretraining run is made of (built once, the same on every process)."""

    out: Path
    rt: runtime.Runtime
    p: PretrainParams
    seed: int
    tokenizer: Any
    train_chunks: list[list[int]]  # packed token ids of the train part
    dev_chunks: list[list[int]]
    collator: Any  # masks a list of chunks (DataCollatorForLanguageModeling)
    dev_batches: list[dict]  # masked once: every validation scores the same positions
    model: Any  # BertForMaskedLM
    ddp: torch.nn.Module  # the model, or its DDP wrapper
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    steps_per_epoch: int
    fingerprint: dict[str, Any]
    eval_every_unit: str = config.default(
        "pretrain.eval_every_unit"
    )  # what eval_every_steps counts (check_due)

    @property
    def resume_dir(self) -> Path:
        return resume_dir(self.out)

    @property
    def state_path(self) -> Path:
        return checkpoint.state_path(self.resume_dir)

    @property
    def best_dir(self) -> Path:
        return self.resume_dir / BEST_DIR


@dataclass
class Progress:
    """What changes as pretraining goes on, and what its checkpoint saves."""

    epoch: int = 0  # epochs done
    step_in_epoch: int = 0  # steps done in the current epoch
    step: int = 0  # steps done in all
    best: float = float("inf")  # best validation loss so far, and its step
    best_step: int = -1
    log: list[dict[str, Any]] = field(
        default_factory=list
    )  # one row per validation (pretrain_log.csv)
    loss_sum: float = 0.0  # training loss since the last validation
    loss_n: int = 0


def build_pretraining(
    data_parquet: str | os.PathLike,
    tokenizer_dir: str | os.PathLike,
    out: Path,
    rt: runtime.Runtime,
    p: PretrainParams,
    seed: int,
    eval_every_unit: str = config.default("pretrain.eval_every_unit"),
    text_parquet: str | os.PathLike | None = None,
) -> Pretraining:
    """Pack the texts, draw the validation masks, build the model, its optimizer and schedule.

    The training text is the train part's statements and proofs, or with ``text_parquet`` (an
    article text table, ``pretrain.text: corpus``) its paragraphs; dev is the validation set."""
    from transformers import BertForMaskedLM, get_linear_schedule_with_warmup

    tokenizer = load_tokenizer(tokenizer_dir)
    train, dev = read_parts(data_parquet, ["train", "dev"])
    if text_parquet is None:
        train_texts, train_ids, text = corpus_texts(train), train["pair_id"].tolist(), {}
    else:  # pairs mode keeps its fingerprint as before
        train_texts, train_ids = paragraph_texts(read_article_text(text_parquet))
        text = {"text": "corpus"}
    train_chunks = packed_chunks(tokenizer, train_texts, p.max_length)
    dev_chunks = packed_chunks(tokenizer, corpus_texts(dev), p.max_length)
    if not train_chunks or not dev_chunks:
        raise ValueError(
            f"{text_parquet or data_parquet}: pretraining needs non-empty train text and dev part"
        )
    collator = mlm_collator(tokenizer, p.mlm_probability)
    dev_batches = validation_batches(collator, dev_chunks, p.batch_size, seed)
    model = BertForMaskedLM(bert_config(p, tokenizer)).to(rt.device)
    steps_per_epoch = len(sampling.shuffled_batches(len(train_chunks), p.batch_size, seed, 0))
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=p.learning_rate, weight_decay=p.weight_decay
    )
    total = (
        p.epochs * steps_per_epoch
    )  # linear warm-up over warmup_fraction of the steps, then linear decay
    scheduler = get_linear_schedule_with_warmup(optimizer, int(p.warmup_fraction * total), total)
    unit = (
        {} if eval_every_unit == "steps" else {"eval_every_unit": eval_every_unit}
    )  # steps: fingerprints as before
    fp = checkpoint.fingerprint(
        p, seed, train_ids, n_dev=len(dev), vocab_size=len(tokenizer), **unit, **text
    )
    ddp = runtime.wrap_ddp(model, rt)
    if p.compile and rt.device.type == "cuda":  # the saved weights stay those of ``model``
        ddp = torch.compile(ddp)
    return Pretraining(
        out,
        rt,
        p,
        seed,
        tokenizer,
        train_chunks,
        dev_chunks,
        collator,
        dev_batches,
        model,
        ddp,
        optimizer,
        scheduler,
        steps_per_epoch,
        fp,
        eval_every_unit,
    )


def resume_pretraining(run: Pretraining) -> Progress:
    """Where the run starts: the step of this run's checkpoint, or the beginning (then the resume
    folder of another run, if any, is removed)."""
    if run.rt.is_main:
        checkpoint.remove_temporaries(run.resume_dir, TEMPORARIES)
        checkpoint.remove_temporaries(
            run.out.parent, (f".{run.out.name}.*",)
        )  # a killed finish's staging
    saved = checkpoint.resume(
        run.state_path, run.fingerprint, run.model, run.optimizer, run.scheduler
    )
    if saved is not None:
        progress = Progress(**saved["progress"])
        log.info("pretrain: resuming at epoch %d, step %d", progress.epoch, progress.step)
        return progress
    if run.rt.is_main:
        checkpoint.discard(run.resume_dir)
    log.info("pretrain: starting %s at step 0", run.out)
    return Progress()


def pretrain_step(run: Pretraining, progress: Progress, idx: np.ndarray) -> None:
    """One optimizer step on the chunks ``idx`` (masks drawn from the step's own seed)."""
    batch = masked_batch(
        run.collator, run.train_chunks, idx, run.seed, progress.epoch, progress.step_in_epoch
    )
    loss = mlm_step(run.ddp, batch, run.rt, run.p.micro_batch_size or None)
    if not np.isfinite(loss):
        raise FloatingPointError(
            f"MLM loss is {loss} at step {progress.step + 1}; lower learning_rate"
        )
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    progress.loss_sum += loss
    progress.loss_n += 1
    progress.step += 1
    progress.step_in_epoch += 1


EVAL_UNITS = ("steps", "examples")
TEXTS = ("pairs", "corpus")  # pretrain.text


def check_due(
    step: int, batch_size: int, every: int, unit: str = config.default("pretrain.eval_every_unit")
) -> bool:
    """Whether a validation is due after optimizer step ``step`` (counted from 1).

    ``steps``: every ``every`` optimizer steps. ``examples``: the paper's (§8) "every 500 steps,
    where one step stands for training on one example": due at the step where the examples
    trained (``step * batch_size`` chunks) reach the next multiple of ``every`` (with batch 4
    and 500, every 125 steps; a step that passes several multiples validates once).
    """
    if unit == "steps":
        return step % every == 0
    if unit == "examples":
        return step * batch_size // every > (step - 1) * batch_size // every
    raise ValueError(f"pretrain.eval_every_unit must be one of {EVAL_UNITS}, not {unit!r}")


def save_due(step: int, every: int) -> bool:
    """Whether the resume state is saved after optimizer step ``step``: every ``every`` optimizer
    steps, whatever ``eval_every_unit`` counts (and at each epoch's end, :func:`pretrain_epoch`).
    Under ``steps`` this is every validation; under ``examples`` (a validation every ~2 steps of
    256 chunks with the paper's 500) a validation saves only a new best model's weights, and the
    full state (model, optimizer, scheduler, RNGs) waits for the next multiple of ``every`` steps."""
    return step % every == 0


def pretrain_epoch(run: Pretraining, progress: Progress, bar) -> None:
    """The rest of the current epoch (a shuffled pass over the chunks), validating every
    ``eval_every_steps`` steps (:func:`check_due`), saving the resume state every
    ``eval_every_steps`` optimizer steps (:func:`save_due`), and both at its end."""
    batches = sampling.shuffled_batches(
        len(run.train_chunks), run.p.batch_size, run.seed, progress.epoch
    )
    for idx in batches[progress.step_in_epoch :]:
        pretrain_step(run, progress, idx)
        bar.update(1)
        if check_due(progress.step, run.p.batch_size, run.p.eval_every_steps, run.eval_every_unit):
            validate(run, progress)
        if save_due(progress.step, run.p.eval_every_steps):
            save_progress(run, progress)
    progress.epoch += 1
    progress.step_in_epoch = 0
    if not (progress.log and progress.log[-1]["step"] == progress.step):
        validate(run, progress)
    save_progress(run, progress)


def validate(run: Pretraining, progress: Progress) -> None:
    """The validation loss, a row of ``pretrain_log.csv``; a new best model is saved to the resume
    folder's ``best/``."""
    val = validation_loss(run.model, run.dev_batches, run.rt)
    train_loss = progress.loss_sum / max(progress.loss_n, 1)
    improved = val < progress.best
    if improved:
        progress.best, progress.best_step = val, progress.step
        if run.rt.is_main:
            with atomic_dir(run.best_dir) as staging:
                run.model.save_pretrained(str(staging))
    progress.log.append(
        {
            "step": progress.step,
            "epoch": round(progress.step / run.steps_per_epoch, 3),
            "train_loss": train_loss,
            "val_loss": val,
            "lr": run.scheduler.get_last_lr()[0],
            "best": improved,
        }
    )
    progress.loss_sum, progress.loss_n = 0.0, 0
    log.info(
        "pretrain step %d: train %.4f  val %.4f%s",
        progress.step,
        train_loss,
        val,
        "  (best)" if improved else "",
    )


def save_progress(run: Pretraining, progress: Progress) -> None:
    """The validation log so far and the checkpoint (rank 0), then every process waits for it."""
    if run.rt.is_main:
        write_csv(pd.DataFrame(progress.log), run.resume_dir / LOG_FILE)
        checkpoint.save(
            run.state_path,
            run.fingerprint,
            run.model,
            run.optimizer,
            run.scheduler,
            progress=asdict(progress),
        )
    run.rt.barrier()


def finish_pretraining(run: Pretraining, progress: Progress) -> None:
    """Write ``out`` whole: the best step's weights (copied from the resume folder), the config,
    the tokenizer files, the validation log and the metrics; then remove the resume folder (a
    kill before that resumes into this again)."""
    if not run.rt.is_main:
        return
    if not (run.best_dir / "model.safetensors").exists():
        raise FileNotFoundError(
            f"{run.best_dir}/model.safetensors (the best model) is missing; delete "
            f"{run.resume_dir} and pretrain again"
        )
    run.model.config.architectures = [type(run.model).__name__]
    run.model.config.dtype = run.model.dtype  # what save_pretrained records
    verify(run.best_dir)  # the copy in the resume folder against the digest written with it
    with atomic_dir(run.out) as staging:
        shutil.copytree(run.best_dir, staging, dirs_exist_ok=True)
        run.model.config.save_pretrained(str(staging))
        run.tokenizer.save_pretrained(str(staging))
        write_csv(pd.DataFrame(progress.log), staging / LOG_FILE)
        write_json(
            {
                "best_val_loss": progress.best,
                "best_step": progress.best_step,
                "steps": progress.step,
                "epochs": run.p.epochs,
                "train_chunks": len(run.train_chunks),
                "dev_chunks": len(run.dev_chunks),
                "max_length": run.p.max_length,
                "seed": run.seed,
            },
            staging / METRICS_FILE,
        )
    checkpoint.discard(run.resume_dir)


def pretrain(
    data_parquet: str | os.PathLike,
    tokenizer_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    params: dict[str, Any],
    seed: int,
    text_parquet: str | os.PathLike | None = None,
) -> None:
    """Pretrain ``BertForMaskedLM`` from scratch with MLM; resume from :func:`resume_dir`.

    ``params``: the config's ``pretrain`` block (:meth:`proofmatch.models.params.PretrainParams.from_config`;
    ``eval_every_unit`` and ``text``, the schema's when left out, are read here, not fingerprinted
    params). ``text: corpus`` trains on ``text_parquet`` (:mod:`proofmatch.data.article_text`).
    """
    from tqdm.auto import tqdm

    unit = params.get("eval_every_unit", config.default("pretrain.eval_every_unit"))
    if unit not in EVAL_UNITS:
        raise ValueError(f"pretrain.eval_every_unit must be one of {EVAL_UNITS}, not {unit!r}")
    text = params.get("text", config.default("pretrain.text"))
    if text not in TEXTS:
        raise ValueError(f"pretrain.text must be one of {TEXTS}, not {text!r}")
    if text == "corpus" and text_parquet is None:
        raise ValueError(
            "pretrain.text: corpus needs the article text table (results/data/article_text.parquet)"
        )
    p = PretrainParams.from_config(params)
    rt = runtime.init_runtime()
    sampling.seed_everything(seed, deterministic=rt.device.type == "cpu")
    run = build_pretraining(
        data_parquet,
        tokenizer_dir,
        Path(out_dir),
        rt,
        p,
        seed,
        eval_every_unit=unit,
        text_parquet=text_parquet if text == "corpus" else None,
    )
    progress = resume_pretraining(run)
    with tqdm(
        total=p.epochs * run.steps_per_epoch,
        initial=progress.step,
        desc="pretrain",
        disable=not rt.is_main,
    ) as bar:
        run.model.train()
        while progress.epoch < p.epochs:
            pretrain_epoch(run, progress, bar)
    finish_pretraining(run, progress)
    runtime.close_runtime(rt)


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "data", help="replaced-split Parquet (train part = corpus, dev part = validation)"
    )
    parser.add_argument(
        "--tokenizer", required=True, help="tokenizer folder (proofmatch tokenizer)"
    )
    parser.add_argument(
        "--text",
        help="article text table (proofmatch article-text): the MLM text under pretrain.text: corpus",
    )
    parser.add_argument("--out", required=True, help="output folder (the ScratchBERT checkpoint)")
    parser.add_argument("--config", default="config/config.yaml", help="config file")
    parser.add_argument("--seed", type=int, help="overrides the config seed")
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    from proofmatch.config import load_config
    from proofmatch.logs import setup_logging

    setup_logging(args.log)
    cfg = load_config(args.config)
    seed = cfg["seed"] if args.seed is None else args.seed
    pretrain(args.data, args.tokenizer, args.out, cfg["pretrain"], seed, text_parquet=args.text)
    return 0
