"""Training of a Matcher: local, hybrid (local + global, paper §7.2) or triplet (SPECTER) steps.

Schedule (paper §8): ASGD (t0 = 1e4 as in the reference; ``optimizer: adamw`` for small corpora,
see :func:`make_optimizer`) with an exponential learning-rate decay, "the learning rate
multiplied by 0.996 after each epoch ... (after 300 epochs)": the rate is multiplied by
``lr_decay`` after each epoch from the ``lr_decay_start``-th on (counted from 1), so the first
``lr_decay_start`` epochs run at ``learning_rate`` (0 or 1: decay after every epoch). An epoch
is one shuffled pass over the train part in batches of ``batch_size`` (the reference BERT loop
never shuffled and its hybrid NPT "epoch" was not a pass). Hybrid training (§8: "optimized by
alternating one stochastic step for each loss") gives every batch one local step and then one
global step, so the local objective is updated as often as in local mode (the reference also
took ``2 × n/b`` steps per hybrid epoch).
Every ``eval_every`` epochs (per encoder: "every 20 epochs" for NPT, "every five epochs" for the
BERT models) and after the last, the dev part is decoded locally (one matrix product per block of
rows; a tie with the gold counts against it) and the best model by dev MRR is kept (accuracy is
recorded too). Under ASGD, evaluation and the saved model use its averaged weights: averaging is
what distinguishes ASGD from SGD (the reference never used them; before step t0 they equal the
current weights).

Several processes (DDP, :func:`proofmatch.devices.launch`) run the same experiment as one:
``batch_size`` is the global batch, every rank encodes its share of each batch, and the losses
see the whole batch (:meth:`proofmatch.devices.Runtime.gather`); only dropout masks differ.

Resumability: after every epoch ``checkpoint/state.pt`` (weights, optimizer, scheduler, every
RNG state, epoch, best so far, history) is replaced atomically, after ``model/`` when it
improved. Batches and negatives of epoch ``e`` depend only on ``(seed, e)``, so a run killed
at any point (SIGKILL included) and rerun replays from the last finished epoch and ends with
exactly the metrics of an uninterrupted run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch

from proofmatch import devices
from proofmatch.config import run_matching
from proofmatch.encoders import (BertEncoder, NPTConfig, NPTEncoder, WordPieceCodec, WordVocab,
                                 pad_batch)
from proofmatch.model import ENCODERS, Matcher, MatcherConfig, global_loss, local_loss, triplet_loss
from proofmatch.store import atomic_path, write_csv, write_json
from proofmatch.splits import read_parts
from proofmatch.tokenizer import load_tokenizer
from proofmatch.tokens import VIEWS, view as token_view

log = logging.getLogger(__name__)

MODES = ("local", "hybrid", "triplet")
OPTIMIZERS = ("asgd", "adamw")
ASGD_T0 = 1e4
STATE_FILE = "state.pt"


class NotConfigured(RuntimeError):
    """A run that cannot be made with this configuration (e.g. MathBERT without a checkpoint)."""


# ---------------------------------------------------------------- plain helpers


def run_params(matching: dict[str, Any], encoder: str) -> dict[str, Any]:
    """Flatten the config's ``matching`` block (whole, or the workflow's
    :func:`proofmatch.config.run_matching` part of it) into the ``params`` of one :func:`train_run`."""
    part = run_matching(matching, encoder)
    params = {"max_length": part["max_length"]}
    params.update(part["npt" if encoder == "npt" else "bert"])
    params.update(part.get("specter", {}))
    return params


def make_optimizer(name: str, parameters: Iterable[torch.nn.Parameter], lr: float) -> torch.optim.Optimizer:
    """The paper's ASGD (t0 = 1e4, no weight decay), or AdamW (torch defaults).

    ASGD is plain SGD until step t0: the paper's 400 epochs over 147k pairs give it about a
    million steps, a small corpus a few thousand, and from scratch a max-pooled encoder's
    gradients are small (every text's pooled vector starts near the same point), so SGD barely
    leaves its initialisation. AdamW rescales each parameter's step and trains such a model in
    the steps a small corpus offers.
    """
    if name == "asgd":
        return torch.optim.ASGD(parameters, lr=lr, t0=ASGD_T0, weight_decay=0.0)
    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=lr)
    raise ValueError(f"unknown optimizer {name!r}; expected one of {OPTIMIZERS}")


STEPS = {"local": ("local",), "hybrid": ("local", "global"), "triplet": ("triplet",)}


def step_schedule(mode: str, batches: Sequence[np.ndarray]) -> list[tuple[str, np.ndarray]]:
    """The steps of an epoch, ``(loss, batch)``: one per batch, or in hybrid mode a local step
    and then a global step on each batch (§8: "alternating one stochastic step for each loss")."""
    if mode not in STEPS:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    return [(kind, idx) for idx in batches for kind in STEPS[mode]]


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """A shuffled pass over ``n`` items, a function of ``(seed, epoch)`` only. A last batch of a
    single pair is dropped: it has no in-batch negative."""
    return [b for b in devices.shuffled_batches(n, batch_size, seed, epoch) if len(b) >= 2]


def sample_negatives(batch: np.ndarray, article_codes: np.ndarray, hard_fraction: float,
                     rng: np.random.Generator) -> np.ndarray:
    """One negative proof per anchor: with probability ``hard_fraction`` another proof of the same
    article (SPECTER's hard negative) when the article has one, else a random other proof."""
    n = len(article_codes)
    out = np.empty(len(batch), dtype=np.int64)
    hard = rng.random(len(batch)) < hard_fraction
    for k, i in enumerate(batch):
        same = np.flatnonzero(article_codes == article_codes[i]) if hard[k] else np.empty(0)
        same = same[same != i]
        if len(same):
            out[k] = rng.choice(same)
        else:
            j = rng.integers(n - 1)
            out[k] = j + (j >= i)
    return out


@torch.no_grad()
def rank_metrics(matcher: Matcher, statements: Sequence[Sequence[str]], proofs: Sequence[Sequence[str]],
                 batch_size: int = 64, block: int = 1024) -> dict[str, float]:
    """Local-decoding MRR and accuracy of aligned statements/proofs (gold = same index)."""
    A, B, row, col = (torch.from_numpy(x) for x in matcher.factors(statements, proofs, batch_size))
    ranks = []
    for start in range(0, len(A), block):
        stop = min(start + block, len(A))
        M = A[start:stop] @ B.T + row[start:stop, None] + col[None, :]
        sub = M[:, start:stop]  # the gold cells of these rows lie on this block's diagonal
        ranks.append((M >= sub.diagonal()[:, None]).sum(1))
    r = torch.cat(ranks).double()
    return {"mrr": float((1.0 / r).mean()), "acc": float((r == 1).double().mean())}


@contextlib.contextmanager
def averaged_weights(optimizer: torch.optim.Optimizer) -> Iterator[None]:
    """Temporarily load ASGD's averaged parameters (``ax``) into the model."""
    saved = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            ax = optimizer.state.get(p, {}).get("ax")
            if ax is not None:
                saved.append((p, p.detach().clone()))
                p.data.copy_(ax)
    try:
        yield
    finally:
        for p, value in saved:
            p.data.copy_(value)


# ---------------------------------------------------------------- building a model


def _typed_vocab(tokenizer) -> bool:
    """Whether a tokenizer's vocabulary was built on typed math tokens (``$x`` entries)."""
    return any(len(t) > 1 and t[0] == "$" for t in tokenizer.get_vocab())


def score_scale(params: dict[str, Any], dim: int, scorer: str) -> float:
    """``1/d`` for a bilinear scorer when ``scale_scores`` is on, else 1 (the paper's ``sᵀWp + b``).

    Why: max-pooled post-LayerNorm NPT features are all positive (about +2.5 in every dimension)
    and ``W`` starts at the identity, so unscaled scores start near ``6·d`` and the first epoch's
    in-batch softmax loss is far above ``log(batch)`` (9 at d = 128 on Stacks). At d = 256 such a
    run stayed at chance; scaled, it trained at once. Dividing by ``d`` (as scaled dot-product
    attention divides by √d_k) keeps the starting scores O(1) whatever d is. Ranking by a fixed
    ``W`` is unchanged; only the training dynamics are.
    """
    return 1.0 / dim if scorer == "bilinear" and params.get("scale_scores", False) else 1.0


def npt_vocab(train: pd.DataFrame, view: str, min_count: int) -> WordVocab:
    """NPT's word vocabulary: the tokens of the trained ``view`` in the train part.

    Symbol replacement touches only math, so a text-only model's vocabulary, and with it the
    model, is the same at every replacement level (Table 5: the paper's Text rows are equal
    under Conservation and Full); a vocabulary of both views would change size with the level."""
    return WordVocab.build((token_view(t, view) for col in ("statement_tokens", "proof_tokens")
                            for t in train[col]), min_count=min_count)


def build_matcher(encoder: str, mode: str, view: str, params: dict[str, Any], train: pd.DataFrame,
                  tokenizer_dir: str | os.PathLike | None = None,
                  pretrained_dir: str | os.PathLike | None = None) -> Matcher:
    """A fresh Matcher for a run (weights: random for NPT, the checkpoint for BERT encoders)."""
    scorer = "distance" if mode == "triplet" else "bilinear"
    if encoder == "npt":
        if tokenizer_dir is not None:
            log.info("NPT builds its own word vocabulary; tokenizer_dir %s is not used", tokenizer_dir)
        max_length = int(params["max_length"])
        vocab = npt_vocab(train, view, int(params.get("min_count", 2)))
        npt = NPTConfig(vocab_size=len(vocab), d_model=int(params["d_model"]),
                        n_layers=int(params["n_layers"]), n_heads=int(params["n_heads"]),
                        d_k=int(params["d_k"]), dropout=float(params.get("dropout", 0.1)),
                        attention_dropout=float(params.get("attention_dropout", 0.1)),
                        max_length=max_length, positions=bool(params.get("positions", True)))
        config = MatcherConfig(encoder, scorer, view, max_length, npt=npt.to_dict(),
                               score_scale=score_scale(params, npt.d_model, scorer))
        return Matcher(config, NPTEncoder(npt), vocab)
    if encoder == "mathbert" and tokenizer_dir is not None:
        log.info("mathbert keeps its own vocabulary (paper §8); tokenizer_dir %s is not used", tokenizer_dir)
        tokenizer_dir = None
    if pretrained_dir is None:
        what = {"mathbert": "matching.mathbert (a MathBERT path or hub id)",
                "scratchbert": "the ScratchBERT checkpoint (proofmatch pretrain)",
                "specter": "the BERT checkpoint SPECTER starts from"}[encoder]
        raise NotConfigured(f"encoder {encoder!r} needs {what}; none was given")
    # SPECTER-style is [CLS]-pooled by definition; ScratchBERT and MathBERT follow the config
    pooling = "cls" if encoder == "specter" else str(params.get("pooling", "cls"))
    bert = BertEncoder.from_checkpoint(pretrained_dir, pooling)
    tokenizer = load_tokenizer(tokenizer_dir or pretrained_dir)
    if len(tokenizer) > bert.bert.config.vocab_size:
        raise ValueError(f"tokenizer {tokenizer_dir or pretrained_dir} has {len(tokenizer)} entries but the "
                         f"checkpoint {pretrained_dir} only {bert.bert.config.vocab_size}: not its tokenizer")
    max_length = int(params["max_length"])
    if max_length > bert.bert.config.max_position_embeddings:
        raise ValueError(f"max_length {max_length} exceeds the checkpoint's "
                         f"max_position_embeddings {bert.bert.config.max_position_embeddings}")
    config = MatcherConfig(encoder, scorer, view, max_length, plain_math=not _typed_vocab(tokenizer),
                           bert=bert.config_dict(), pooling=pooling,
                           score_scale=score_scale(params, bert.dim, scorer))
    return Matcher(config, bert, WordPieceCodec(tokenizer, plain=config.plain_math))


# ---------------------------------------------------------------- one step


def batch_loss(model: torch.nn.Module, rt: devices.Runtime, kind: str, idx: np.ndarray,
               ids_s: Sequence[Sequence[int]], ids_p: Sequence[Sequence[int]], pad_id: int,
               negatives: np.ndarray | None = None, margin: float = 1.0) -> tuple[torch.Tensor, float]:
    """The ``kind`` loss of the global batch ``idx`` (train rows; ``negatives``: one negative
    proof per row, triplet only) and the batch accuracy of the global step's assignment (NaN for
    the others). ``model`` is the Matcher, or its DDP wrapper: each rank then encodes its share
    of the rows, and the scores and the loss are those of the whole batch on every rank."""
    mine = rt.share(idx)
    rows = [ids_s[i] for i in mine] + [ids_p[i] for i in mine]
    sizes = [len(mine), len(mine)]
    if kind == "triplet":
        if negatives is None:
            raise ValueError("a triplet step needs one negative proof per statement")
        rows += [ids_p[i] for i in rt.share(negatives)]
        sizes.append(len(mine))
    ids, mask = pad_batch(rows, pad_id)
    gather = (lambda x: rt.gather(x, len(idx))) if rt.distributed else None
    with rt.autocast():
        groups, M = model(ids.to(rt.device), mask.to(rt.device), sizes, gather)
    if kind == "local":
        return local_loss(M), float("nan")
    if kind == "global":
        return global_loss(M)
    if kind == "triplet":
        return triplet_loss(groups[0], groups[1], groups[2], margin), float("nan")
    raise ValueError(f"unknown loss {kind!r}")


# ---------------------------------------------------------------- outputs


def _remove_stale_temporaries(out: Path) -> None:
    """Staging folders and temporary files that a killed job left behind (hidden names)."""
    import shutil

    for pattern in (".model.*", ".metrics.*", ".curve.png.*", "checkpoint/.state.pt.*"):
        for p in out.glob(pattern):
            shutil.rmtree(p) if p.is_dir() else p.unlink()


def plot_curve(history: list[dict], path: Path, title: str) -> None:
    """Training losses and dev MRR/accuracy per epoch."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = pd.DataFrame(history)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    for col in ("loss", "local_loss", "global_loss", "triplet_loss"):
        if col in df and df[col].notna().any():
            ax1.plot(df["epoch"], df[col], label=col, lw=1.2)
    ax1.set_xlabel("epoch"), ax1.set_ylabel("train loss"), ax1.legend(fontsize=7)
    ev = df[df["dev_mrr"].notna()]
    ax2.plot(ev["epoch"], ev["dev_mrr"], "o-", label="dev MRR")
    ax2.plot(ev["epoch"], ev["dev_acc"], "s--", label="dev acc")
    ax2.set_xlabel("epoch"), ax2.set_ylim(0, 1), ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    with atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- the training run


def train_run(data_parquet: str | os.PathLike, out_dir: str | os.PathLike, encoder: str, mode: str,
              view: str, params: dict[str, Any], seed: int,
              tokenizer_dir: str | os.PathLike | None = None,
              pretrained_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Train (or resume) one matching model; return the final metrics (also ``metrics.json``).

    ``params`` is either the config's ``matching`` block, whole or reduced to the encoder's part
    (as the workflow passes it; flattened here with :func:`run_params`; its ``mathbert`` entry is
    the MathBERT checkpoint when ``pretrained_dir`` is None) or already flat: epochs,
    batch_size (the global batch, whatever the number of processes), learning_rate, lr_decay,
    eval_every, max_length (optional lr_decay_start 0, optimizer asgd); NPT also d_model,
    n_layers, n_heads, d_k (optional min_count 2, dropout 0.1); triplet mode margin and
    hard_fraction. ``tokenizer_dir`` matters only for ScratchBERT/SPECTER (default: the
    checkpoint's own tokenizer files).
    """
    from tqdm.auto import tqdm

    if "npt" in params or "bert" in params:  # the config's matching block
        if encoder == "mathbert" and pretrained_dir is None:
            pretrained_dir = params.get("mathbert")
        params = run_params(params, encoder)

    if encoder not in ENCODERS:
        raise ValueError(f"unknown encoder {encoder!r}; expected one of {ENCODERS}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; expected one of {VIEWS}")
    if (encoder == "specter") != (mode == "triplet"):
        raise ValueError("the specter encoder is trained in triplet mode, and triplet mode is specter's")

    rt = devices.init_runtime()
    devices.seed_everything(seed, deterministic=rt.device.type == "cpu")
    out = Path(out_dir)
    ckpt_path = out / "checkpoint" / STATE_FILE
    train, dev = read_parts(data_parquet, ["train", "dev"])
    if len(train) < 2:  # read_parts already refuses an empty part
        raise ValueError(f"{data_parquet}: need at least 2 train pairs for in-batch negatives "
                         f"(got {len(train)})")
    fingerprint = devices.run_fingerprint(params, seed, train["pair_id"].tolist(), encoder=encoder,
                                          mode=mode, view=view, n_dev=len(dev))

    matcher = build_matcher(encoder, mode, view, params, train, tokenizer_dir, pretrained_dir).to(rt.device)
    model = devices.wrap_ddp(matcher, rt)
    optimizer = make_optimizer(params.get("optimizer", "asgd"), matcher.parameters(),
                               float(params["learning_rate"]))
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=float(params["lr_decay"]))
    decay_start = int(params.get("lr_decay_start", 0))
    epochs, bs = int(params["epochs"]), int(params["batch_size"])
    eval_every = int(params["eval_every"])
    best = {"mrr": -1.0, "acc": 0.0, "epoch": -1}
    history: list[dict] = []
    start = 0
    if rt.is_main:
        _remove_stale_temporaries(out)
    saved = devices.load_checkpoint(ckpt_path, fingerprint)
    if saved is not None:
        matcher.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        devices.set_rng_state(saved["rng"])
        start, best, history = saved["epoch"], saved["best"], saved["history"]
        log.info("train: resuming %s after epoch %d", out, start)

    # token ids once: the view and the codec do not change during training
    ids_s = matcher.codec.ids([token_view(t, view) for t in train["statement_tokens"]], matcher.config.max_length)
    ids_p = matcher.codec.ids([token_view(t, view) for t in train["proof_tokens"]], matcher.config.max_length)
    articles = pd.factorize(train["article_id"])[0]
    margin, hard_fraction = float(params.get("margin", 1.0)), float(params.get("hard_fraction", 0.0))

    def step(kind: str, idx: np.ndarray, epoch: int, k: int) -> tuple[float, float]:
        negatives = None
        if kind == "triplet":  # drawn for the whole batch, the same on every rank
            negatives = sample_negatives(idx, articles, hard_fraction, devices.epoch_rng(seed, epoch, 1 + k))
        loss, batch_acc = batch_loss(model, rt, kind, idx, ids_s, ids_p, matcher.codec.pad_id,
                                     negatives, margin)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"{kind} loss is {float(loss.detach())} at epoch {epoch + 1}, "
                                     f"step {k + 1}; lower learning_rate")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return float(loss.detach()), batch_acc

    n_steps = len(step_schedule(mode, epoch_batches(len(train), bs, seed, 0)))
    bar = tqdm(total=epochs * n_steps, initial=start * n_steps, desc=f"train {encoder}-{mode}",
               disable=not rt.is_main)
    matcher.train()
    for epoch in range(start, epochs):
        t0 = time.perf_counter()
        losses: dict[str, list[float]] = {"local": [], "global": [], "triplet": []}
        accs: list[float] = []
        for k, (kind, idx) in enumerate(step_schedule(mode, epoch_batches(len(train), bs, seed, epoch))):
            loss, acc = step(kind, idx, epoch, k)
            losses[kind].append(loss)
            if kind == "global":
                accs.append(acc)
            bar.update(1)
        lr = scheduler.get_last_lr()[0]
        if epoch + 1 >= decay_start:
            scheduler.step()
        mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731 (the same on every rank)
        row = {"epoch": epoch + 1, "lr": lr, "loss": mean(sum(losses.values(), [])),
               "local_loss": mean(losses["local"]), "global_loss": mean(losses["global"]),
               "triplet_loss": mean(losses["triplet"]), "global_batch_acc": mean(accs),
               "dev_mrr": float("nan"), "dev_acc": float("nan"), "best": False,
               "train_seconds": time.perf_counter() - t0}
        if (epoch + 1) % eval_every == 0 or epoch + 1 == epochs:
            if rt.is_main:
                with averaged_weights(optimizer):
                    dev_m = rank_metrics(matcher, list(dev["statement_tokens"]), list(dev["proof_tokens"]),
                                         batch_size=max(bs, 64))
                    row.update(dev_mrr=dev_m["mrr"], dev_acc=dev_m["acc"])
                    if dev_m["mrr"] > best["mrr"] + 1e-9:  # ties (float noise) keep the earlier model
                        best = {"mrr": dev_m["mrr"], "acc": dev_m["acc"], "epoch": epoch + 1}
                        row["best"] = True
                        matcher.save_pretrained(out / "model")
                matcher.train()
            bar.set_postfix(loss=f"{row['loss']:.3f}", dev_mrr=f"{row['dev_mrr']:.3f}")
            log.info("epoch %d: loss %.4f  dev MRR %.4f  acc %.4f%s", epoch + 1, row["loss"],
                     row["dev_mrr"], row["dev_acc"], "  (best)" if row["best"] else "")
        history.append(row)
        if rt.is_main:
            write_csv(pd.DataFrame(history), out / "metrics.csv")
            devices.save_torch_atomic({
                "model": matcher.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "rng": devices.rng_state(), "epoch": epoch + 1,
                "best": best, "history": history, "fingerprint": fingerprint}, ckpt_path)
        rt.barrier()
    bar.close()

    best = rt.broadcast(best)  # only rank 0 evaluates
    result = {"encoder": encoder, "mode": mode, "view": view, "seed": seed, "epochs": epochs,
              "best_epoch": best["epoch"], "dev_mrr": best["mrr"], "dev_acc": best["acc"],
              "final_loss": history[-1]["loss"] if history else float("nan"),
              "n_train": len(train), "n_dev": len(dev),
              "n_parameters": int(sum(p.numel() for p in matcher.parameters()))}
    if rt.is_main:
        plot_curve(history, out / "curve.png", f"{encoder}-{mode} {view} (seed {seed})")
        write_json(result, out / "metrics.json")
    devices.close_runtime(rt)
    return result


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", help="replaced-split Parquet (train part trains, dev part selects)")
    parser.add_argument("--out", required=True, help="run folder")
    parser.add_argument("--encoder", required=True, choices=ENCODERS)
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--view", required=True, choices=VIEWS)
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--seed", type=int, help="overrides the config seed")
    parser.add_argument("--tokenizer-dir", help="WordPiece tokenizer (default: the checkpoint's own)")
    parser.add_argument("--pretrained-dir",
                        help="BERT checkpoint (ScratchBERT folder; default for mathbert: matching.mathbert)")
    parser.add_argument("--epochs", type=int, help="overrides the epochs of the config")
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    from proofmatch.config import load_config
    from proofmatch.logs import setup_logging

    setup_logging(args.log)
    cfg = load_config(args.config)
    params = run_params(cfg["matching"], args.encoder)
    if args.epochs:
        params["epochs"] = args.epochs
    pretrained = args.pretrained_dir
    if args.encoder == "mathbert" and pretrained is None:
        pretrained = cfg["matching"].get("mathbert")
    seed = cfg["seed"] if args.seed is None else args.seed
    try:
        result = train_run(args.data, args.out, args.encoder, args.mode, args.view, params, seed,
                           tokenizer_dir=args.tokenizer_dir, pretrained_dir=pretrained)
    except NotConfigured as err:
        logging.getLogger("proofmatch").error("not run: %s", err)
        return 3
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0
