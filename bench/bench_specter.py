"""SPECTER-style variants on the demo: one training run of the package's
``train_run`` per call, with the demo config's ``matching`` settings and the changes given as JSON.

``TrainParams`` fields and SPECTER-style's settings (``margin``, ``hard_fraction``, ``epochs`` ...) are
replaced directly. For this measurement only, the other keys patch the package in-process:
``pool`` (cls | mean) the text vector (unset: ``matching.specter.pooling``); ``k`` negatives per statement (each drawn as
``sampling.sample_negatives`` draws one); ``in_batch`` adds the batch's other gold proofs as
negatives of the same hinge; ``orig`` leaves the loss and the sampling unpatched (the patched
loss is ``relu(‖s−p⁺‖ − ‖s−p⁻‖ + margin)``, as ``F.triplet_margin_loss`` up to its eps: dev MRR
9.5 against 9.6). ``sq`` (squared distances in the hinge) and ``norm`` (unit vectors) were not measured. ``seed``,
``data``, ``ckpt`` and ``out`` (default ``/tmp/specter-NAME``) say what runs where; ``encoder:
scratchbert`` trains ScratchBERT-Local instead. Each run's line is
appended to ``results.jsonl`` in the working directory; read dev MRR only (docs/models.md,
"SPECTER-style, measured").

    PYTHONPATH=src python bench/bench_specter.py mean-k5 '{"pool": "mean", "k": 5, "hard_fraction": 0.4}'
"""

import json
import sys
import time
from pathlib import Path

import torch

torch.set_num_threads(1)
import numpy as np
import torch.nn.functional as F

from proofmatch.config import load_config
from proofmatch.models import encoders, sampling
from proofmatch.models import train as T
from proofmatch.models.params import TrainParams

name, over = sys.argv[1], json.loads(sys.argv[2])
data = over.pop("data", "results/replaced/mixed/conservation.parquet")
ckpt = over.pop("ckpt", "results/models/scratchbert/mixed")
encoder = over.pop("encoder", "specter")
mode = "local" if encoder == "scratchbert" else "triplet"
pool = over.pop("pool", None)
k = over.pop("k", 1)
in_batch = over.pop("in_batch", False)
ORIG = over.pop("orig", False)
over_out = over.pop("out", None)
SEED = over.pop("seed", 13)
sq = over.pop("sq", False)
norm = over.pop("norm", False)
matching = load_config(Path(__file__).resolve().parents[1] / "config/config.yaml")["matching"]
p = TrainParams.from_config(matching, encoder)
p = p.replaced(**over)

if pool:
    orig = encoders.BertEncoder.from_checkpoint.__func__
    encoders.BertEncoder.from_checkpoint = classmethod(
        lambda cls, path, pooling="cls": orig(cls, path, pool)
    )
if norm:
    fwd = encoders.BertEncoder.forward
    encoders.BertEncoder.forward = lambda self, i, m: F.normalize(fwd(self, i, m), dim=-1)

stats = []


def batch_loss(model, rt, kind, idx, statements, proofs, negatives=None, margin=1.0):
    if kind != "triplet":
        return orig_bl(model, rt, kind, idx, statements, proofs, negatives, margin)
    padded = [statements.batch(idx), proofs.batch(idx), proofs.batch(negatives.reshape(-1))]
    enc, Msc = model(padded)
    s, pp, pn = enc

    def dist(a, b):
        d2 = ((a - b) ** 2).sum(-1)
        return d2 if sq else torch.sqrt(d2.clamp(min=1e-12))

    dpos = dist(s, pp)  # [n]
    dneg = dist(s.repeat_interleave(k, 0), pn).view(len(idx), k)  # [n, k]
    terms = [F.relu(dpos[:, None] - dneg + margin).reshape(-1)]
    if in_batch:
        D = dist(s[:, None, :], pp[None, :, :])
        off = ~torch.eye(len(idx), dtype=torch.bool)
        terms.append(F.relu(dpos[:, None] - D + margin)[off])
    t = torch.cat(terms)
    if len(stats) % 50 == 0:
        print(
            f"step {len(stats)} dpos {dpos.mean():.3f} dneg {dneg.mean():.3f} active {(t > 0).float().mean():.2f} "
            f"|s| {s.norm(dim=1).mean():.2f}",
            flush=True,
        )
    stats.append(1)
    return t.mean(), float("nan")


orig_bl = T.batch_loss
if not ORIG:
    T.batch_loss = batch_loss
orig_sn = sampling.sample_negatives


def sample_k(batch, codes, hf, rng):
    return np.stack([orig_sn(batch, codes, hf, rng) for _ in range(k)], 1)


if not ORIG:
    sampling.sample_negatives = sample_k

t0 = time.time()
out = over_out or f"/tmp/specter-{name}"
res = T.train_run(data, out, encoder, mode, "both", p, seed=SEED, pretrained_dir=ckpt)
import pandas as pd

h = pd.read_csv(f"{out}/metrics.csv")
print(h[["epoch", "loss", "dev_mrr", "dev_acc"]].to_string(index=False))
line = {
    "name": name,
    "over": sys.argv[2],
    "best_epoch": res["best_epoch"],
    "dev_mrr": round(100 * res["dev_mrr"], 1),
    "dev_acc": round(100 * res["dev_acc"], 1),
    "secs": round(time.time() - t0),
}
print(line)
open("results.jsonl", "a").write(json.dumps(line) + "\n")
