"""MLM pretraining of ScratchBERT from scratch on one split family's training text.

Differences from the reference script (notes §6), each on purpose:

* statements and proofs of the **train** part only are the corpus; the **dev** part is the
  validation set (the reference drew an unseeded 10 % of its corpus);
* sequences are **packed**: every text is tokenized with ``[CLS] ... [SEP]``, the texts are
  concatenated and cut into ``max_length`` chunks, so no compute goes to padding (the reference
  padded every line to 512);
* validation masks are drawn once from a seeded generator, so successive validation losses
  differ only by the model and the best checkpoint is chosen on a fixed target;
* a plain torch loop (AdamW, linear warm-up then linear decay) with a resumable checkpoint:
  model, optimizer, scheduler, every RNG state, and the position in the epoch. Data order is a
  function of ``(seed, epoch)`` and the masks of a step of ``(seed, epoch, step)``, so a rerun
  after a kill continues exactly where it stopped;
* ``batch_size`` is the global batch (the reference: 8 chunks per device × 8 accumulation steps
  on the paper's four GPUs). Several processes split each batch, every process draws the same
  masks for the whole batch and takes its rows, and the loss is the mean over the batch's masked
  tokens, so a step equals the one-process step up to dropout; ``micro_batch_size`` bounds the
  chunks a process runs at once (gradient accumulation).

``out_dir`` receives the best model (``save_pretrained``) and the tokenizer files, i.e. a
complete checkpoint that ``BertModel.from_pretrained`` and ``AutoTokenizer`` load; also
``pretrain_log.csv`` (one row per evaluation), ``pretrain_metrics.json`` (written last) and
``checkpoint/state.pt`` (the latest training state).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch

from proofmatch import devices
from proofmatch.splits import read_parts
from proofmatch.store import write_csv, write_json
from proofmatch.tokenizer import load_tokenizer, to_text

log = logging.getLogger(__name__)

STATE_FILE = "state.pt"
LOG_FILE = "pretrain_log.csv"
METRICS_FILE = "pretrain_metrics.json"


def corpus_texts(df: pd.DataFrame) -> list[str]:
    """Statements then proofs of each pair, in row order (each one document of the stream)."""
    out: list[str] = []
    for s, p in zip(df["statement_tokens"], df["proof_tokens"]):
        out += [to_text(s), to_text(p)]
    return out


def pack(sequences: Sequence[Sequence[int]], max_length: int) -> list[list[int]]:
    """Concatenate id sequences and cut the stream into chunks of ``max_length`` (the last one
    may be shorter; the collator pads it)."""
    stream = np.fromiter((i for seq in sequences for i in seq), dtype=np.int64)
    return [stream[i:i + max_length].tolist() for i in range(0, len(stream), max_length)]


def packed_chunks(tokenizer, texts: list[str], max_length: int) -> list[list[int]]:
    ids = tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
    return pack(ids, max_length)


def bert_config(params: dict[str, Any], tokenizer):
    from transformers import BertConfig

    max_len = int(params["max_length"])
    return BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=params["hidden_size"],
        num_hidden_layers=params["num_hidden_layers"],
        num_attention_heads=params["num_attention_heads"],
        intermediate_size=params["intermediate_size"],
        max_position_embeddings=int(params.get("max_position_embeddings") or max(512, max_len)),
        pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=float(params.get("dropout", 0.1)),
        attention_probs_dropout_prob=float(params.get("dropout", 0.1)),
    )


def mlm_collator(tokenizer, params: dict[str, Any]):
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(
        tokenizer, mlm=True, mlm_probability=float(params.get("mlm_probability", 0.2)))


def validation_batches(collator, chunks: list[list[int]], batch_size: int, seed: int) -> list[dict]:
    """Masked validation batches drawn once from their own seeded stream (not the training one),
    so every evaluation scores the same masked positions."""
    with devices.forked_rng(seed + 1):
        return [collator([{"input_ids": c} for c in chunks[i:i + batch_size]])
                for i in range(0, len(chunks), batch_size)]


@torch.no_grad()
def validation_loss(model, batches: list[dict[str, torch.Tensor]], rt: devices.Runtime) -> float:
    """Mean MLM loss per masked token over the fixed validation batches."""
    model.eval()
    total, count = 0.0, 0
    for batch in batches:
        batch = {k: v.to(rt.device) for k, v in batch.items()}
        n = int((batch["labels"] != -100).sum())
        if n == 0:  # a short last chunk may draw no masked token: its mean loss would be NaN
            continue
        with rt.autocast():
            loss = model(**batch).loss
        total += float(loss) * n
        count += n
    model.train()
    if count == 0:
        raise ValueError("the validation batches hold no masked token; the dev part is too small")
    return total / count


def masked_batch(collator, chunks: list[list[int]], idx: np.ndarray, seed: int, epoch: int,
                 step: int) -> dict[str, torch.Tensor]:
    """The masked training batch ``idx`` of a step: its masks depend only on ``(seed, epoch,
    step)``, so every process draws the same ones and a resumed run draws them again."""
    with devices.forked_rng(devices.derived_seed(seed, epoch, step)):
        return collator([{"input_ids": chunks[i]} for i in idx])


def mlm_step(ddp, batch: dict[str, torch.Tensor], rt: devices.Runtime, micro_batch_size: int | None) -> float:
    """Forward and backward of this process's rows of the global ``batch``; return the batch's
    mean MLM loss per masked token (the same on every process).

    Each process's loss is its masked tokens' summed cross-entropy over the batch's number of
    masked tokens, times the number of processes (DDP averages the gradients): the gradient is
    that of the one-process mean over the whole batch, also when the batch is split unevenly or
    into micro-batches."""
    import torch.nn.functional as F

    n = len(batch["input_ids"])
    rows = torch.as_tensor(rt.share(np.arange(n)))
    mine = {k: v[rows] for k, v in batch.items()}
    mine["labels"][rt.n_real(n):] = -100  # rows that only pad this process's share
    n_masked = max(int((batch["labels"] != -100).sum()), 1)
    step = micro_batch_size or len(rows)
    starts = range(0, len(rows), step)
    total = 0.0
    for start in starts:
        part = {k: v[start:start + step].to(rt.device) for k, v in mine.items()}
        labels = part.pop("labels")
        last = start == starts[-1]
        sync = contextlib.nullcontext() if last or not rt.distributed else ddp.no_sync()
        with sync:
            with rt.autocast():
                logits = ddp(**part).logits
            ce = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100,
                                 reduction="sum")
            (ce * (rt.world_size / n_masked)).backward()
        total += float(ce.detach())
    return rt.all_sum(total) / n_masked


def _publish(obj, out_dir: Path) -> None:
    """``obj.save_pretrained`` into a staging folder, then move each file into ``out_dir``
    atomically (a model, a config or a tokenizer)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging.", dir=out_dir))
    try:
        obj.save_pretrained(str(staging))
        for f in sorted(staging.iterdir()):
            os.replace(f, out_dir / f.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def pretrain(data_parquet: str | os.PathLike, tokenizer_dir: str | os.PathLike,
             out_dir: str | os.PathLike, params: dict[str, Any], seed: int) -> None:
    """Pretrain ``BertForMaskedLM`` from scratch with MLM; resume from ``out_dir/checkpoint``.

    ``params``: hidden_size, num_hidden_layers, num_attention_heads, intermediate_size,
    max_length, mlm_probability, epochs, batch_size (global), learning_rate, eval_every_steps,
    and optionally warmup_fraction (default 0.06), weight_decay (0.01), dropout (0.1),
    micro_batch_size (default: a process's whole share of a batch), max_position_embeddings.
    """
    from tqdm.auto import tqdm
    from transformers import BertForMaskedLM

    rt = devices.init_runtime()
    out = Path(out_dir)
    ckpt_dir = out / "checkpoint"
    devices.seed_everything(seed, deterministic=rt.device.type == "cpu")
    tokenizer = load_tokenizer(tokenizer_dir)
    max_length = int(params["max_length"])

    train, dev = read_parts(data_parquet, ["train", "dev"])
    train_chunks = packed_chunks(tokenizer, corpus_texts(train), max_length)
    dev_chunks = packed_chunks(tokenizer, corpus_texts(dev), max_length)
    if not train_chunks or not dev_chunks:
        raise ValueError(f"{data_parquet}: pretraining needs non-empty train and dev parts")
    collator = mlm_collator(tokenizer, params)
    bs = int(params["batch_size"])
    dev_batches = validation_batches(collator, dev_chunks, bs, seed)

    model = BertForMaskedLM(bert_config(params, tokenizer)).to(rt.device)
    ddp = devices.wrap_ddp(model, rt)
    epochs = int(params["epochs"])
    micro = int(params["micro_batch_size"]) if params.get("micro_batch_size") else None
    steps_per_epoch = len(devices.shuffled_batches(len(train_chunks), bs, seed, 0))
    total = epochs * steps_per_epoch
    warmup = int(float(params.get("warmup_fraction", 0.06)) * total)
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(params["learning_rate"]),
                                  weight_decay=float(params.get("weight_decay", 0.01)))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / max(warmup, 1), max(0.0, (total - s) / max(total - warmup, 1))))

    state = {"epoch": 0, "step_in_epoch": 0, "step": 0, "best": float("inf"), "best_step": -1,
             "log": [], "loss_sum": 0.0, "loss_n": 0}
    fingerprint = devices.run_fingerprint(params, seed, train["pair_id"].tolist(), n_dev=len(dev),
                                          vocab_size=len(tokenizer))
    saved = devices.load_checkpoint(ckpt_dir / STATE_FILE, fingerprint)
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        devices.set_rng_state(saved["rng"])
        state = saved["progress"]
        log.info("pretrain: resuming at epoch %d, step %d", state["epoch"], state["step"])
    elif rt.is_main:
        _publish(tokenizer, out)  # out_dir is a complete checkpoint from the first best model on

    def checkpoint() -> None:
        if rt.is_main:
            devices.save_torch_atomic({
                "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "rng": devices.rng_state(),
                "progress": state, "fingerprint": fingerprint}, ckpt_dir / STATE_FILE)
        rt.barrier()

    def evaluate() -> None:
        val = validation_loss(model, dev_batches, rt)
        train_loss = state["loss_sum"] / max(state["loss_n"], 1)
        improved = val < state["best"]
        if improved:
            state["best"], state["best_step"] = val, state["step"]
            if rt.is_main:
                _publish(model, out)
        state["log"].append({"step": state["step"], "epoch": round(state["step"] / steps_per_epoch, 3),
                             "train_loss": train_loss, "val_loss": val, "lr": scheduler.get_last_lr()[0],
                             "best": improved})
        state["loss_sum"], state["loss_n"] = 0.0, 0
        if rt.is_main:
            write_csv(pd.DataFrame(state["log"]), out / LOG_FILE)
        log.info("pretrain step %d: train %.4f  val %.4f%s", state["step"], train_loss, val,
                 "  (best)" if improved else "")

    every = int(params["eval_every_steps"])
    bar = tqdm(total=total, initial=state["step"], desc="pretrain", disable=not rt.is_main)
    model.train()
    while state["epoch"] < epochs:
        batches = devices.shuffled_batches(len(train_chunks), bs, seed, state["epoch"])
        for idx in batches[state["step_in_epoch"]:]:
            batch = masked_batch(collator, train_chunks, idx, seed, state["epoch"], state["step_in_epoch"])
            loss = mlm_step(ddp, batch, rt, micro)
            if not np.isfinite(loss):
                raise FloatingPointError(f"MLM loss is {loss} at step {state['step'] + 1}; lower learning_rate")
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["loss_sum"] += loss
            state["loss_n"] += 1
            state["step"] += 1
            state["step_in_epoch"] += 1
            bar.update(1)
            if state["step"] % every == 0:
                evaluate()
                checkpoint()
        state["epoch"] += 1
        state["step_in_epoch"] = 0
        if state["log"] and state["log"][-1]["step"] == state["step"]:
            checkpoint()
        else:
            evaluate()
            checkpoint()
    bar.close()
    if rt.is_main:
        # re-write the small files last: a workflow manager may have deleted a declared output
        # (config.json) of the killed job before this rerun; the weights are the best step's
        if not (out / "model.safetensors").exists():
            raise FileNotFoundError(f"{out}/model.safetensors (the best model) is missing; delete "
                                    f"{ckpt_dir} and pretrain again")
        model.config.architectures = [type(model).__name__]
        model.config.dtype = model.dtype  # what save_pretrained records
        _publish(model.config, out)
        _publish(tokenizer, out)
        write_json({"best_val_loss": state["best"], "best_step": state["best_step"], "steps": state["step"],
                    "epochs": epochs, "train_chunks": len(train_chunks), "dev_chunks": len(dev_chunks),
                    "max_length": max_length, "seed": seed}, out / METRICS_FILE)
    devices.close_runtime(rt)


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", help="replaced-split Parquet (train part = corpus, dev part = validation)")
    parser.add_argument("--tokenizer", required=True, help="tokenizer folder (proofmatch tokenizer)")
    parser.add_argument("--out", required=True, help="output folder (the ScratchBERT checkpoint)")
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--seed", type=int, help="overrides the config seed")
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    from proofmatch.config import load_config
    from proofmatch.logs import setup_logging

    setup_logging(args.log)
    cfg = load_config(args.config)
    seed = cfg["seed"] if args.seed is None else args.seed
    pretrain(args.data, args.tokenizer, args.out, cfg["pretrain"], seed)
    return 0
