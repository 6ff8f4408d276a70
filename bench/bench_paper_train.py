"""Does a configuration learn? Train one matcher on real pairs for a number of optimizer steps and
check its dev MRR against chance, counting steps rather than epochs.

The paper's NPT saw 147,278 training pairs in batches of 60, about 2,450 steps an epoch; the Stacks
corpus has a few thousand pairs, a few dozen steps an epoch. "Trains" here means: within one
paper epoch's worth of steps, dev MRR reaches ``--times`` (default 3) times chance (the MRR of a
random ranking of the dev pool, ``H_n / n``). The settings are the merged config files' (the
workflow's own ``TrainParams``, model and training step: :func:`proofmatch.models.train.build_run`
and :func:`~proofmatch.models.train.train_step`), with ``--set key=value`` overrides of the
encoder's ``matching`` block; the learning rate decays per epoch of the data, as in training.

    python bench/bench_paper_train.py results/replaced/mixed/conservation.parquet \\
        --config config/config.yaml config/paper.yaml --encoder npt --steps 2500 --eval-every 250

ScratchBERT / MathBERT need ``--pretrained`` (a BERT checkpoint folder with its tokenizer);
``--random-bert WIDTH`` builds a randomly initialised BERT of that width (2 layers, WordPiece
vocabulary trained on the train part) for a CPU check of the BERT scorer at d = 768.
Prints one JSON line per evaluation and a summary; exits 1 when the goal is not reached.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from proofmatch.config import load_config
from proofmatch.models import runtime, sampling
from proofmatch.models.params import TrainParams, run_params
from proofmatch.models.selection import rank_metrics
from proofmatch.models.train import build_run, train_step


def chance_mrr(n: int) -> float:
    """MRR of a uniformly random ranking of ``n`` candidates: the mean of 1/r over r = 1..n."""
    return float(np.sum(1.0 / np.arange(1, n + 1)) / n)


def random_bert(train_parquet: str, width: int, out: Path, max_length: int) -> Path:
    """A randomly initialised 2-layer BERT of ``width`` with a WordPiece vocabulary of the train
    part, saved as a checkpoint folder (what ScratchBERT's pretraining would leave)."""
    from transformers import BertConfig, BertForMaskedLM

    from proofmatch.models.tokenizer import load_tokenizer, train_tokenizer

    train_tokenizer(train_parquet, out, vocab_size=8000, min_frequency=2)
    tokenizer = load_tokenizer(out)
    cfg = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=width,
        num_hidden_layers=2,
        num_attention_heads=max(1, width // 64),
        intermediate_size=4 * width,
        max_position_embeddings=max(512, max_length),
    )
    BertForMaskedLM(cfg).save_pretrained(str(out))
    return out


def step_curve(
    run,
    p: TrainParams,
    seed: int,
    steps: int,
    eval_every: int,
    dev,
    log_every: int = 0,
    deadline: float | None = None,
    emit=None,
) -> tuple[list[dict], float]:
    """``steps`` local training steps of ``run`` (:func:`proofmatch.models.train.train_step`, the
    workflow's step; the learning rate decays per epoch of the data as in training), with dev MRR
    and accuracy (:func:`proofmatch.models.selection.rank_metrics`) every ``eval_every`` steps and
    after the last. ``deadline`` (a ``time.perf_counter()`` value): stop after the first step past
    it, evaluated there, so a time budget is kept instead of overrun. Every row also goes to
    ``emit`` (default: one JSON line on stdout). Returns the curve and the start time; the rows
    carry ``seconds`` (since the start) and ``eval_seconds`` (spent evaluating so far)."""
    emit = emit or (lambda row: print(json.dumps(row), flush=True))
    per_epoch = len(sampling.epoch_batches(len(run.train), p.batch_size, seed, 0))
    curve, losses, t0, eval_s = [], [], time.perf_counter(), 0.0
    run.matcher.train()
    step, epoch, done = 0, 0, False
    while not done:
        batches = sampling.epoch_batches(len(run.train), p.batch_size, seed, epoch)
        for k, idx in enumerate(batches):
            loss, _ = train_step(run, "local", idx, epoch, k)
            losses.append(loss)  # stays on the device until a row reads it
            step += 1
            late = deadline is not None and time.perf_counter() >= deadline
            done = step >= steps or late
            if log_every and step % log_every == 0:
                emit(
                    {
                        "step": step,
                        "train_loss": float(torch.stack(losses[-log_every:]).float().mean()),
                        "seconds": round(time.perf_counter() - t0, 1),
                    }
                )
            if step % eval_every == 0 or done:
                t_eval = time.perf_counter()
                m = rank_metrics(
                    run.matcher,
                    list(dev["statement_tokens"]),
                    list(dev["proof_tokens"]),
                    batch_size=64,
                )
                run.matcher.train()
                eval_s += time.perf_counter() - t_eval
                recent = losses[-(step % eval_every or eval_every) :]
                row = {
                    "step": step,
                    "epoch": round(step / per_epoch, 2),
                    "loss": float(torch.stack(recent).float().mean()),
                    "dev_mrr": m["mrr"],
                    "dev_acc": m["acc"],
                    "seconds": round(time.perf_counter() - t0, 1),
                    "eval_seconds": round(eval_s, 2),
                }
                if late and step < steps:
                    row["stopped_by_deadline"] = True
                curve.append(row)
                emit(row)
            if done:
                break
        epoch += 1
        if epoch >= p.lr_decay_start:
            run.scheduler.step()
    return curve, t0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("data", help="a replaced split Parquet (train and dev parts)")
    ap.add_argument("--config", nargs="+", default=["config/config.yaml", "config/paper.yaml"])
    ap.add_argument("--encoder", default="npt", choices=["npt", "scratchbert", "mathbert"])
    ap.add_argument("--view", default="both")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the encoder's matching block (YAML value), e.g. w_init=zeros; "
        "a key starting with matching. is a path from there, e.g. matching.max_length=64",
    )
    ap.add_argument("--steps", type=int, default=2500)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument(
        "--log-every", type=int, default=0, help="also print the mean training loss every N steps"
    )
    ap.add_argument("--dev", type=int, default=0, help="evaluate on the first N dev pairs (0: all)")
    ap.add_argument(
        "--times", type=float, default=3.0, help="goal: dev MRR at least this many times chance"
    )
    ap.add_argument("--pretrained", help="BERT checkpoint folder (ScratchBERT, MathBERT)")
    ap.add_argument(
        "--random-bert", type=int, metavar="WIDTH", help="a random 2-layer BERT of this width"
    )
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", help="also write the summary here")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    import yaml

    cfg = load_config(*args.config)
    block = "npt" if args.encoder == "npt" else "bert"
    for item in args.set:
        key, _, value = item.partition("=")
        path = key.split(".") if key.startswith("matching.") else ["matching", block, key]
        node = cfg
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = yaml.safe_load(value)
    p = TrainParams.from_config(cfg["matching"], args.encoder)
    seed = cfg["seed"] if args.seed is None else args.seed
    rt = runtime.init_runtime()
    sampling.seed_everything(seed, deterministic=rt.device.type == "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        pretrained = args.pretrained
        if args.random_bert:
            pretrained = str(
                random_bert(args.data, args.random_bert, Path(tmp) / "bert", p.max_length)
            )
        if args.encoder == "mathbert" and pretrained is None:
            pretrained = cfg["matching"]["mathbert"]
        run = build_run(
            args.data,
            Path(tmp) / "run",
            rt,
            args.encoder,
            "local",
            args.view,
            p,
            seed,
            pretrained,
            pretrained,
        )
        dev = run.dev if args.dev <= 0 else run.dev.head(args.dev)
        chance = chance_mrr(len(dev))
        per_epoch = len(sampling.epoch_batches(len(run.train), p.batch_size, seed, 0))
        head = {
            "encoder": args.encoder,
            "settings": run_params(cfg["matching"], args.encoder),
            "n_train": len(run.train),
            "n_dev": len(dev),
            "steps_per_epoch": per_epoch,
            "chance_mrr": chance,
            "goal_mrr": args.times * chance,
            "threads": torch.get_num_threads(),
        }
        print(json.dumps(head), flush=True)
        curve, t0 = step_curve(
            run, p, seed, args.steps, args.eval_every, dev, log_every=args.log_every
        )
    best = max(curve, key=lambda r: r["dev_mrr"])
    first = next((r["step"] for r in curve if r["dev_mrr"] >= args.times * chance), None)
    summary = {
        **head,
        "curve": curve,
        "best_dev_mrr": best["dev_mrr"],
        "best_step": best["step"],
        "first_step_at_goal": first,
        "reached": first is not None,
        "steps_per_second": round(args.steps / (time.perf_counter() - t0), 3),
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "curve"}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    runtime.close_runtime(rt)
    if not math.isfinite(best["dev_mrr"]) or first is None:
        print(
            f"goal not reached: best dev MRR {best['dev_mrr']:.4f} < {args.times} x chance {chance:.4f}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
