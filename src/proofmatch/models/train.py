"""Training of a Matcher: local, hybrid (local + global, paper §7.2) or triplet (SPECTER) steps.

:func:`train_run` is the loop: :func:`build_run`, :func:`resume`, then per epoch
:func:`train_epoch` (its :func:`train_step` s, each on :func:`proofmatch.models.steps.batch_loss`), :func:`evaluate_dev`
and :func:`save_progress`; :func:`finish` writes the result.

The train part's ids are padded once and held on the device (:mod:`proofmatch.models.batching`),
and a step's loss stays there: the epoch reads its losses once, at its end (:func:`step_losses`,
which also fails the run on a non-finite loss, before the epoch's checkpoint). On a GPU no local
step waits for the one before it.

Schedule (paper §8): ASGD (t0 = 1e4 as in the reference, or AdamW: :func:`proofmatch.models.optim.make_optimizer`) with
"the learning rate multiplied by 0.996 after each epoch ... (after 300 epochs)": ``lr_decay``
after each epoch from the ``lr_decay_start``-th on (counted from 1). An epoch is one shuffled pass
over the train part in batches of ``batch_size`` (the reference BERT loop never shuffled), or
with ``matching.pretrained.bm25_neighbours`` a pass in batches of BM25 neighbours
(:func:`proofmatch.models.sampling.neighbour_batches`). Hybrid
training ("optimized by alternating one stochastic step for each loss") gives every batch a local
and then a global step (the reference also took ``2 × n/b`` steps per hybrid epoch). Every
``eval_every`` epochs (NPT "every 20 epochs", BERT "every five epochs") and after the last, the
dev part is decoded locally (:func:`proofmatch.decoding.local.local_decode`: a tie with the gold counts
against it) and the best model is kept (:func:`proofmatch.models.selection.selection_column`): by default the best dev MRR;
``select_metric: accuracy`` selects on dev accuracy, and ``hybrid_selection: global`` makes hybrid
runs select on the dev accuracy of global decoding (:func:`proofmatch.decoding.assign.global_decode`),
as the reference code did. Under ASGD, evaluation and the saved model use its averaged weights
(``eval_weights: average``), what distinguishes ASGD from SGD, or its raw weights
(``eval_weights: raw``: the reference never used the averages).

Several processes (DDP, :func:`proofmatch.models.runtime.launch`) run the experiment of one:
``batch_size`` is the global batch, every rank encodes its share of each batch, and the losses
see the whole batch (:meth:`proofmatch.models.runtime.Runtime.gather`); only dropout masks differ.

Resumability: after every epoch ``checkpoint/state.pt`` (:mod:`proofmatch.models.checkpoint`) is
replaced atomically, after ``checkpoint/model/`` (the best model so far) when it improved. Batches
and negatives of epoch ``e`` depend only on ``(seed, e)``, so a run killed at any point (SIGKILL
included) and rerun replays from the last finished epoch and ends with exactly the metrics of an
uninterrupted run. The run's outputs (``model/``, ``metrics.csv``, ``curve.png``,
``metrics.json``) are written whole by :func:`finish`, which then removes ``checkpoint/``: a
workflow manager may delete a failed job's outputs, never its resume state, and a finished run
leaves none, so running it again trains it again.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from proofmatch.artifacts import atomic_dir, verify, write_csv, write_json
from proofmatch.data.splits import read_parts
from proofmatch.data.views import view as token_view
from proofmatch.decoding.assign import DecodeSettings
from proofmatch.models import checkpoint, pretrained, runtime, sampling
from proofmatch.models.batching import TokenTable
from proofmatch.models.curves import STEP_LOSS, curve_title, plot_curve
from proofmatch.models.matcher import Matcher, build_matcher, check_run
from proofmatch.models.optim import make_optimizer, place_optimizer_state
from proofmatch.models.params import TrainParams
from proofmatch.models.selection import evaluation_weights, rank_metrics, selection_column
from proofmatch.models.steps import batch_loss, step_schedule

log = logging.getLogger(__name__)

RESUME_DIR = (
    "checkpoint"  # the resume state (checkpoint and best model so far) of an unfinished run
)
BEST_DIR = "model"  # the best model: in the resume folder during the run, in the run folder after
# what a killed run leaves in its folder
TEMPORARIES = (
    ".model.*",
    ".metrics.*",
    ".curve.png.*",
    f"{RESUME_DIR}/.{BEST_DIR}.*",
    *(f"{RESUME_DIR}/{t}" for t in checkpoint.TEMPORARIES),
)


# ---------------------------------------------------------------- a run, step by step


@dataclass
class Training:
    """The live state of one training run: its data, model, optimizer and schedule (built once,
    the same on every rank). Not :class:`proofmatch.experiments.Run`, which names a run of the
    experiment grid (split, encoder, mode, level, view) and its paths."""

    out: Path
    rt: runtime.Runtime
    p: TrainParams
    seed: int
    mode: str
    train: pd.DataFrame
    dev: pd.DataFrame
    matcher: Matcher
    model: torch.nn.Module  # the Matcher, or its DDP wrapper
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.ExponentialLR
    fingerprint: dict[str, Any]
    statements: TokenTable  # token ids of the train statements on the device (view and codec fixed)
    proofs: TokenTable  # ... and of their proofs
    articles: np.ndarray  # article code of each train pair (SPECTER's hard negatives)
    neighbours: np.ndarray | None  # each train pair's BM25 neighbours (None: random batches)
    decode: DecodeSettings | None = None  # dev global decoding (train_run's; None: dev_decoding's)

    @property
    def resume_dir(self) -> Path:
        return self.out / RESUME_DIR

    @property
    def state_path(self) -> Path:
        return checkpoint.state_path(self.resume_dir)

    @property
    def best_dir(self) -> Path:
        """The best model so far (the run's ``model/`` once it finishes)."""
        return self.resume_dir / BEST_DIR


@dataclass
class Progress:
    """What changes as a run goes on, and what its checkpoint saves."""

    epoch: int = 0  # epochs done
    best: dict[str, Any] = field(
        default_factory=lambda: {"mrr": -1.0, "acc": 0.0, "score": -1.0, "epoch": -1}
    )
    history: list[dict[str, Any]] = field(default_factory=list)  # one row per epoch (metrics.csv)


def build_run(
    data_parquet: str | os.PathLike,
    out: Path,
    rt: runtime.Runtime,
    encoder: str,
    mode: str,
    view: str,
    p: TrainParams,
    seed: int,
    tokenizer_dir: str | os.PathLike | None,
    pretrained_dir: str | os.PathLike | None,
) -> Training:
    """Read the data, build the model, its optimizer and schedule (seeded weights)."""
    selection_column(p, mode)  # unknown selection keys fail before any work
    train, dev = read_parts(data_parquet, ["train", "dev"])
    if len(train) < 2:  # read_parts already refuses an empty part
        raise ValueError(
            f"{data_parquet}: need at least 2 train pairs for in-batch negatives (got {len(train)})"
        )
    fp = checkpoint.fingerprint(
        p, seed, train["pair_id"].tolist(), encoder=encoder, mode=mode, view=view, n_dev=len(dev)
    )
    matcher = build_matcher(encoder, mode, view, p, train, tokenizer_dir, pretrained_dir).to(
        rt.device
    )
    optimizer = make_optimizer(p.optimizer, matcher.parameters(), p.learning_rate)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=p.lr_decay)
    statements, proofs = (
        TokenTable.build(
            matcher.codec.ids([token_view(t, view) for t in train[col]], p.max_length),
            matcher.codec.pad_id,
            rt.device,
        )
        for col in ("statement_tokens", "proof_tokens")
    )
    return Training(
        out,
        rt,
        p,
        seed,
        mode,
        train,
        dev,
        matcher,
        runtime.wrap_ddp(matcher, rt),
        optimizer,
        scheduler,
        fp,
        statements,
        proofs,
        pd.factorize(train["article_id"])[0],
        sampling.train_neighbours(train, view, p.encoder.batch_neighbours()),
    )


def run_batches(run: Training, epoch: int) -> list[np.ndarray]:
    """The batches of ``epoch``: random, or built around BM25 neighbours (``run.neighbours``)."""
    return sampling.epoch_batches(len(run.train), run.p.batch_size, run.seed, epoch, run.neighbours)


def resume(run: Training) -> Progress:
    """Where the run starts: after the last epoch of this run's checkpoint, or at the beginning."""
    if run.rt.is_main:
        checkpoint.remove_temporaries(run.out, TEMPORARIES)
    saved = checkpoint.resume(
        run.state_path, run.fingerprint, run.matcher, run.optimizer, run.scheduler
    )
    if saved is None:
        if run.rt.is_main:
            checkpoint.discard(run.resume_dir)  # another run's state, if any
        log.info("train: starting %s at epoch 1", run.out)
        return Progress()
    place_optimizer_state(run.optimizer)  # the checkpoint may come from another device
    log.info("train: resuming %s after epoch %d", run.out, saved["epoch"])
    return Progress(saved["epoch"], saved["best"], saved["history"])


def train_step(
    run: Training, kind: str, idx: np.ndarray, epoch: int, k: int
) -> tuple[torch.Tensor, float]:
    """One optimizer step of the ``kind`` loss on batch ``idx`` (the ``k``-th step of ``epoch``);
    its loss stays on the device (reading it would make the host wait for the step)."""
    negatives, margin = None, {}
    if kind == "triplet":  # drawn for the whole batch, the same on every rank
        triplets = run.p.encoder  # (PretrainedSpecter|Specter)Settings: margin, hard share
        rng = sampling.epoch_rng(run.seed, epoch, 1 + k)
        negatives = sampling.sample_negatives(idx, run.articles, triplets.hard_fraction, rng)
        margin = {"margin": triplets.margin}
    loss, batch_acc = batch_loss(
        run.model, run.rt, kind, idx, run.statements, run.proofs, negatives, **margin
    )
    run.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    run.optimizer.step()
    return loss.detach(), batch_acc


def step_losses(losses: Sequence[torch.Tensor], kinds: Sequence[str], epoch: int) -> np.ndarray:
    """The losses of an epoch's steps, read once at its end; a step whose loss was not finite
    fails the run there (before the epoch's checkpoint, so a rerun resumes before it)."""
    values = torch.stack(losses).float().cpu().numpy().astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        k = int(bad[0])
        raise FloatingPointError(
            f"{kinds[k]} loss is {values[k]} at epoch {epoch + 1}, step {k + 1}; "
            f"lower learning_rate"
        )
    return values


def _csv_rows(history: list[dict[str, Any]]) -> pd.DataFrame:
    """``metrics.csv``: the history, one row per epoch, without its per-step losses."""
    return pd.DataFrame([{k: v for k, v in row.items() if k != STEP_LOSS} for row in history])


def train_epoch(run: Training, epoch: int, bar) -> dict[str, Any]:
    """One shuffled pass over the train part, then the epoch's learning-rate decay; the epoch's
    row of ``metrics.csv`` (mean losses per kind; the dev columns are filled by :func:`evaluate_dev`)."""
    t0 = time.perf_counter()
    losses: list[torch.Tensor] = []
    accs: list[float] = []
    schedule = step_schedule(run.mode, run_batches(run, epoch))
    for k, (kind, idx) in enumerate(schedule):
        loss, acc = train_step(run, kind, idx, epoch, k)
        losses.append(loss)
        if kind == "global":
            accs.append(acc)
        bar.update(1)
    kinds = np.array([kind for kind, _ in schedule])
    values = step_losses(losses, kinds, epoch)
    lr = run.scheduler.get_last_lr()[0]
    if epoch + 1 >= run.p.lr_decay_start:
        run.scheduler.step()
    mean = lambda xs: float(np.mean(xs)) if len(xs) else float("nan")  # noqa: E731 (the same on every rank)
    return {
        "epoch": epoch + 1,
        "lr": lr,
        "loss": mean(values),
        "local_loss": mean(values[kinds == "local"]),
        "global_loss": mean(values[kinds == "global"]),
        "triplet_loss": mean(values[kinds == "triplet"]),
        STEP_LOSS: [round(float(v), 5) for v in values],  # the curve's; not a metrics.csv column
        "global_batch_acc": mean(accs),
        "dev_mrr": float("nan"),
        "dev_acc": float("nan"),
        "dev_global_acc": float("nan"),
        "select_on": selection_column(run.p, run.mode),
        "best": False,
        "train_seconds": time.perf_counter() - t0,
    }


def evaluate_dev(run: Training, progress: Progress, row: dict[str, Any]) -> None:
    """Dev MRR and accuracy (and global accuracy where it selects) into ``row`` (rank 0; the
    ``eval_weights``); a better value of the ``select_on`` column than so far is the new best, and
    its model is saved to ``model/``."""
    if run.rt.is_main:
        column = row["select_on"]
        with evaluation_weights(run.optimizer, run.p.eval_weights):
            m = rank_metrics(
                run.matcher,
                list(run.dev["statement_tokens"]),
                list(run.dev["proof_tokens"]),
                batch_size=max(run.p.batch_size, 64),
                global_decoding=column == "dev_global_acc",
                decode=run.decode or dev_decoding(None, run.seed),
            )
            row.update(
                dev_mrr=m["mrr"], dev_acc=m["acc"], dev_global_acc=m.get("global_acc", float("nan"))
            )
            if (
                row[column] > progress.best["score"] + 1e-9
            ):  # ties (float noise) keep the earlier model
                progress.best = {
                    "mrr": m["mrr"],
                    "acc": m["acc"],
                    "score": row[column],
                    "epoch": row["epoch"],
                }
                if "global_acc" in m:
                    progress.best["global_acc"] = m["global_acc"]
                row["best"] = True
                run.matcher.save_pretrained(run.best_dir)
        run.matcher.train()
    log.info(
        "epoch %d: loss %.4f  dev MRR %.4f  acc %.4f  global acc %.4f%s",
        row["epoch"],
        row["loss"],
        row["dev_mrr"],
        row["dev_acc"],
        row["dev_global_acc"],
        "  (best)" if row["best"] else "",
    )


def save_progress(run: Training, progress: Progress) -> None:
    """``metrics.csv`` and the checkpoint (rank 0), then every rank waits for them."""
    if run.rt.is_main:
        write_csv(_csv_rows(progress.history), run.out / "metrics.csv")
        checkpoint.save(
            run.state_path,
            run.fingerprint,
            run.matcher,
            run.optimizer,
            run.scheduler,
            epoch=progress.epoch,
            best=progress.best,
            history=progress.history,
        )
    run.rt.barrier()


def finish(run: Training, progress: Progress, encoder: str, view: str) -> dict[str, Any]:
    """The run's outputs: its best model (``model/``, copied from the resume folder),
    ``metrics.csv``, training curve (``curve.png``) and result (``metrics.json``, last); then the
    resume folder is removed. All are written again here because a workflow manager deletes a
    failed job's outputs: a run killed after its last epoch resumes straight into this."""
    best = run.rt.broadcast(progress.best)  # only rank 0 evaluates
    history = progress.history
    result = {
        "encoder": encoder,
        "mode": run.mode,
        "view": view,
        "seed": run.seed,
        "epochs": run.p.epochs,
        "best_epoch": best["epoch"],
        "dev_mrr": best["mrr"],
        "dev_acc": best["acc"],
        "dev_global_acc": best.get("global_acc"),
        "select_on": selection_column(run.p, run.mode),
        "final_loss": history[-1]["loss"] if history else float("nan"),
        "n_train": len(run.train),
        "n_dev": len(run.dev),
        "n_parameters": int(sum(p.numel() for p in run.matcher.parameters())),
        "fingerprint": run.fingerprint,
    }
    if run.rt.is_main:
        publish_best(run)
        write_csv(_csv_rows(history), run.out / "metrics.csv")
        plot_curve(
            history, run.out / "curve.png", curve_title(run.out, encoder, run.mode, view, run.seed)
        )
        write_json(result, run.out / "metrics.json")
        checkpoint.discard(run.resume_dir)
    return result


def publish_best(run: Training) -> None:
    """Copy the best model into the run's ``model/``, swapped in whole; the copy in the resume
    folder stays until the run's last output is written (a kill before then resumes into
    :func:`finish` again)."""
    from proofmatch.models.matcher import CONFIG_FILE

    if not (run.best_dir / CONFIG_FILE).exists():
        raise FileNotFoundError(
            f"{run.best_dir} (the best model) is missing; delete {run.resume_dir} and train again"
        )
    verify(run.best_dir)  # the copy in the resume folder against the digest written with it
    with atomic_dir(run.out / BEST_DIR) as staging:
        shutil.copytree(run.best_dir, staging, dirs_exist_ok=True)


def train_run(
    data_parquet: str | os.PathLike,
    out_dir: str | os.PathLike,
    encoder: str,
    mode: str,
    view: str,
    p: TrainParams,
    seed: int,
    tokenizer_dir: str | os.PathLike | None = None,
    pretrained_dir: str | os.PathLike | None = None,
    decode: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Train (or resume) one matching model; return the final metrics (also ``metrics.json``).

    ``p``: the run's settings, :meth:`TrainParams.from_config` of the config's ``matching`` block.
    ``decode``: ``topk`` and ``exact_max_n`` of the dev global decoding that selects a hybrid run
    under ``hybrid_selection: global`` (the ``decode`` of :func:`proofmatch.config.run_matching`);
    None: the schema's.
    ``pretrained_dir``: the BERT checkpoint the run starts from
    (:func:`proofmatch.models.params.start_checkpoint`; MathBERT's is ``matching.mathbert``).
    ``tokenizer_dir`` matters only for ScratchBERT/SPECTER (default: the checkpoint's own files).
    """
    from tqdm.auto import tqdm

    if not isinstance(p, TrainParams):
        raise TypeError(
            f"train_run takes TrainParams (TrainParams.from_config), not {type(p).__name__}"
        )
    check_run(encoder, mode, view)
    if mode in pretrained.HEAD_MODES:  # a pretrained checkpoint as it is, or a head on it
        return head_run(data_parquet, Path(out_dir), encoder, mode, view, p, seed, pretrained_dir)
    rt = runtime.init_runtime()
    sampling.seed_everything(seed, deterministic=rt.device.type == "cpu")
    run = build_run(
        data_parquet, Path(out_dir), rt, encoder, mode, view, p, seed, tokenizer_dir, pretrained_dir
    )
    run.decode = dev_decoding(decode, seed)
    progress = resume(run)
    n_steps = len(step_schedule(mode, run_batches(run, 0)))
    with tqdm(
        total=p.epochs * n_steps,
        initial=progress.epoch * n_steps,
        desc=f"train {encoder}-{mode}",
        disable=not rt.is_main,
    ) as bar:
        run.matcher.train()
        for epoch in range(progress.epoch, p.epochs):
            row = train_epoch(run, epoch, bar)
            if (epoch + 1) % p.eval_every == 0 or epoch + 1 == p.epochs:
                evaluate_dev(run, progress, row)
                bar.set_postfix(loss=f"{row['loss']:.3f}", dev_mrr=f"{row['dev_mrr']:.3f}")
            progress.epoch = epoch + 1
            progress.history.append(row)
            save_progress(run, progress)
    result = finish(run, progress, encoder, view)
    runtime.close_runtime(rt)
    return result


def dev_decoding(decode: Mapping[str, int] | None, seed: int) -> DecodeSettings:
    """How a run decodes its dev part globally (``hybrid_selection: global``): ``decode.topk`` and
    ``decode.exact_max_n`` where its params carry them (:func:`proofmatch.config.run_matching`),
    else the schema's, and the run's ``seed``."""
    if decode is None:
        return DecodeSettings(seed=seed)
    return DecodeSettings(int(decode["topk"]), int(decode["exact_max_n"]), seed)


def head_run(
    data_parquet: str | os.PathLike,
    out: Path,
    encoder: str,
    mode: str,
    view: str,
    p: TrainParams,
    seed: int,
    pretrained_dir: str | os.PathLike | None,
) -> dict[str, Any]:
    """A ``zeroshot`` or ``frozen`` run (:func:`proofmatch.models.pretrained.head_run`) with the
    outputs of a trained run: ``model/``, ``metrics.csv``, ``curve.png``, ``metrics.json`` last."""
    result, history = pretrained.head_run(
        data_parquet, out, encoder, mode, view, p, seed, pretrained_dir, BEST_DIR
    )
    write_csv(pd.DataFrame(history), out / "metrics.csv")
    plot_curve(history, out / "curve.png", curve_title(out, encoder, mode, view, seed))
    write_json(result, out / "metrics.json")
    return result
