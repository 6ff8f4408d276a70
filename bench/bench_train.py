"""Benchmark training throughput: NPT matching steps/s (local and global steps) and BERT MLM
tokens/s, on CPU and, when present, CUDA (bf16 autocast, as in training).

Inputs are random token ids of fixed lengths (statements shorter than proofs, packed MLM chunks
full), so the step rows measure the model and the step, not the data pipeline. Each measurement
runs ``--warmup`` steps, then times ``--steps`` steps. The "NPT local epoch" row runs the same
model through the training loop itself (``train_epoch``: batches cut from the device tables, the
optimizer, the losses read once at the epoch's end) over ``--steps`` batches: the gap to the
"NPT local step" row is what the loop costs around the step.

    python bench/bench_train.py                      # demo and paper sizes, CPU (+ CUDA if any)
    python bench/bench_train.py --sizes demo --steps 20
    OMP_NUM_THREADS=1 python bench/bench_train.py    # one core
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np
import pandas as pd
import torch

from proofmatch.config import validate_config
from proofmatch.models import runtime
from proofmatch.models.batching import TokenTable
from proofmatch.models.encoders import NPTConfig, NPTEncoder
from proofmatch.models.losses import global_loss, local_loss
from proofmatch.models.matcher import Matcher, MatcherConfig
from proofmatch.models.optim import make_optimizer
from proofmatch.models.params import TrainParams
from proofmatch.models.train import Training, train_epoch

# (vocab, d_model, n_layers, n_heads, d_k, batch, statement length, proof length, max_length);
# the paper's NPT has 15M parameters, i.e. a word vocabulary of about 44k entries at d = 300
NPT_SIZES = {
    "demo": (2000, 64, 2, 4, 16, 60, 40, 120, 200),
    "paper": (44000, 300, 2, 4, 128, 60, 60, 200, 200),
}
# (vocab, hidden, layers, heads, intermediate, batch, max_length)
BERT_SIZES = {"demo": (2000, 64, 2, 2, 128, 16, 128), "paper": (30522, 768, 12, 12, 3072, 8, 512)}


class _Codec:
    """Stand-in codec: the benchmark feeds ids directly."""

    pad_id = 0

    def save(self, out_dir):  # pragma: no cover
        raise NotImplementedError


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _timed(step, device: torch.device, warmup: int, steps: int) -> float:
    """Seconds per step after ``warmup`` untimed steps."""
    for _ in range(warmup):
        step()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(device)
    return (time.perf_counter() - t0) / steps


def _npt(size: str, device: torch.device) -> Matcher:
    vocab, d, layers, heads, dk, _, _, _, max_len = NPT_SIZES[size]
    torch.manual_seed(0)
    npt = NPTConfig(
        vocab_size=vocab, d_model=d, n_layers=layers, n_heads=heads, d_k=dk, max_length=max_len
    )
    m = Matcher(
        MatcherConfig("npt", "bilinear", "both", max_len, npt=npt.to_dict()),
        NPTEncoder(npt),
        _Codec(),
    )
    return m.to(device).train()


def bench_npt(size: str, device: torch.device, warmup: int, steps: int) -> list[dict]:
    vocab, d, layers, heads, dk, batch, ls, lp, max_len = NPT_SIZES[size]
    m = _npt(size, device)
    opt = make_optimizer("asgd", m.parameters(), 0.005)
    # statements and proofs each padded to their own length, as a training step pads them
    groups = [
        (
            torch.randint(3, vocab, (batch, n), device=device),
            torch.ones(batch, n, dtype=torch.bool, device=device),
        )
        for n in (ls, lp)
    ]
    rows = []
    for kind in ("local", "global"):

        def step():
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                _, M = m(groups)
            loss = local_loss(M) if kind == "local" else global_loss(M)[0]
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        sec = _timed(step, device, warmup, steps)
        rows.append(
            {
                "bench": f"NPT {kind} step",
                "size": size,
                "device": device.type,
                "shape": f"d={d} b={batch} len={ls}/{lp}",
                "per_s": round(1 / sec, 2),
                "unit": "steps/s",
            }
        )
    return rows


def bench_npt_epoch(size: str, device: torch.device, warmup: int, steps: int) -> list[dict]:
    """``train_epoch`` of a local NPT run over ``steps`` batches of the sizes of :func:`bench_npt`
    (the texts have those lengths, so every batch has the bare step's shapes)."""
    from tqdm.auto import tqdm

    vocab, d, _, _, _, batch, ls, lp, max_len = NPT_SIZES[size]
    m = _npt(size, device)
    opt = make_optimizer("asgd", m.parameters(), 0.005)
    rng = np.random.default_rng(0)
    n = batch * steps
    tables = [
        TokenTable.build(rng.integers(3, vocab, size=(n, length)).tolist(), 0, device)
        for length in (ls, lp)
    ]
    p = dataclasses.replace(
        TrainParams.from_config(validate_config({})["matching"], "npt"),
        epochs=warmup + 1,
        batch_size=batch,
        learning_rate=0.005,
        lr_decay=1.0,
        eval_every=1,
        max_length=max_len,
        optimizer="asgd",
    )
    run = Training(
        out=None,
        rt=runtime.Runtime(device),
        p=p,
        seed=0,
        mode="local",
        train=pd.DataFrame(index=range(n)),
        dev=None,
        matcher=m,
        model=m,
        optimizer=opt,
        scheduler=torch.optim.lr_scheduler.ExponentialLR(opt, gamma=1.0),
        fingerprint={},
        statements=tables[0],
        proofs=tables[1],
        articles=np.zeros(n, dtype=np.int64),
        neighbours=None,
    )
    with tqdm(disable=True) as bar:
        for epoch in range(warmup):
            train_epoch(run, epoch, bar)
        _sync(device)
        row = train_epoch(run, warmup, bar)  # returns after reading its losses: the device is done
    return [
        {
            "bench": "NPT local epoch",
            "size": size,
            "device": device.type,
            "shape": f"d={d} b={batch} len={ls}/{lp}",
            "per_s": round(steps / row["train_seconds"], 2),
            "unit": "steps/s",
        }
    ]


def bench_mlm(size: str, device: torch.device, warmup: int, steps: int) -> list[dict]:
    from transformers import BertConfig, BertForMaskedLM

    vocab, hidden, layers, heads, inter, batch, max_len = BERT_SIZES[size]
    if device.type == "cpu" and size == "paper":
        batch = 2  # BERT-base on a few CPU cores: keep a step within seconds
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
        max_position_embeddings=max(512, max_len),
    )
    model = BertForMaskedLM(cfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(5, vocab, (batch, max_len), device=device)
    labels = torch.where(
        torch.rand(batch, max_len, device=device) < 0.2, ids, torch.full_like(ids, -100)
    )

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    sec = _timed(step, device, warmup, steps)
    return [
        {
            "bench": "BERT MLM step",
            "size": size,
            "device": device.type,
            "shape": f"h={hidden} L={layers} b={batch} len={max_len}",
            "per_s": round(batch * max_len / sec, 1),
            "unit": "tokens/s",
        }
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["demo", "paper"], choices=list(NPT_SIZES))
    ap.add_argument(
        "--devices", nargs="+", default=None, help="default: cpu, and cuda when available"
    )
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args()
    devices = args.devices or (["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    rows: list[dict] = []
    for dev in map(torch.device, devices):
        for size in args.sizes:
            steps = args.steps if dev.type == "cuda" or size == "demo" else max(2, args.steps // 5)
            rows += bench_npt(size, dev, args.warmup, steps)
            rows += bench_npt_epoch(size, dev, min(args.warmup, 1), steps)
            rows += bench_mlm(size, dev, args.warmup if size == "demo" else 1, steps)
    print(f"\ntorch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    header = f"{'bench':<18} {'size':<6} {'device':<6} {'shape':<28} {'throughput':>14}"
    print(header + "\n" + "-" * len(header))
    for r in rows:
        print(
            f"{r['bench']:<18} {r['size']:<6} {r['device']:<6} {r['shape']:<28} {r['per_s']:>9} {r['unit']}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
