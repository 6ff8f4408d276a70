"""The paper's sizes on one GPU in one call: does ``config/paper.yaml`` train?

Three questions, each answered by runs of the package's own code on the Stacks corpus's Mixed
Conservation split (4,123 train / 515 dev / 515 test pairs):

a. NPT at the paper's size (d 300, 2 layers, 4 heads, d_k 128, batches of 60, 200 tokens) for
   one paper epoch, 2,450 steps, in three runs: the paper's settings (ASGD 5e-3, unscaled
   ``sᵀWp + b``, ``W`` from ``nn.Bilinear``), the same with ``w_init: zeros``, and
   ``paper.yaml``'s; dev MRR every 245 steps on the 515-pair dev pool.
b. BERT-base ScratchBERT: MLM with ``paper.yaml``'s ``pretrain`` settings (bf16 autocast,
   torch.compile) for the time left (at least 2 minutes), then four matching fine-tunings from
   that checkpoint, {[CLS], mean} x {the paper's ASGD 2e-3 unscaled, ``paper.yaml``'s AdamW 1e-4
   with ``/d``}, 500 steps each.
c. BM25 and TF-IDF on the same dev and test parts.
d. Throughput: NPT steps/s and BERT-base MLM tokens/s as a share of the measured bf16 peak.

Everything trains through the package: :func:`proofmatch.models.train.build_run` and
:func:`~proofmatch.models.train.train_step` (stepped by ``bench/bench_paper_train.py``'s
``step_curve``), :func:`proofmatch.models.pretrain.build_pretraining`,
:func:`~proofmatch.models.pretrain.pretrain_step`, :func:`~proofmatch.models.pretrain.validate`
and :func:`~proofmatch.models.pretrain.finish_pretraining`,
:func:`proofmatch.evaluation.baselines.run_baseline`, :func:`proofmatch.models.selection.rank_metrics`.
What this file adds is the time budget: every part has a wall-clock deadline and stops there
(its rows then say ``stopped_by_deadline``) instead of overrunning the call.

On a CPU machine with a finished ``config/stacks.yaml`` results tree (data into
``bench/gpu/data/``, git-ignored, about 2.5 MB; with ``--wheels``, the wheels a bare GPU machine
lacks into ``bench/gpu/data/wheels/``)::

    python3 bench/gpu/paper_size.py prepare --results path/to/results --wheels

On the GPU machine, with ``bench/gpu/data`` copied beside the checkout::

    bash bench/gpu/run_paper_size.sh          # = python3 bench/gpu/paper_size.py run --out "$OUT"

On any CPU, the same code path at tiny sizes on toy data (tests/test_gpu_script.py)::

    python3 bench/gpu/paper_size.py run --tiny --out /tmp/ps

Output: ``<out>/paper_size/`` (``paper_size.json``, ``paper_size.md``, ``pretrain_log.csv``) and
the same folder archived as ``<out>/paper_size.tgz``, one file to copy back.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "bench" / "gpu" / "data"
SITE = Path(os.environ.get("PAPER_SIZE_SITE", "/tmp/site"))
NEEDED = (
    "lap",
    "jsonschema",
)  # what the training and evaluation code imports and the GPU machine lacks
WHEELS = ("lap==0.5.13", "jsonschema", "jsonschema-specifications", "referencing", "rpds-py")
CONFIGS = ("config/config.yaml", "config/paper.yaml")  # the settings under test: paper.yaml's
SPLIT, TOKENIZER = "conservation.parquet", "tokenizer"

# ---------------------------------------------------------------- the plan (seconds on one H200)
#
# From the bench/ GPU figures (docs/benchmarks.md, one H200): NPT at the paper's size 96 steps/s (local, bench_train.py), BERT-base MLM 41.5 % of
# the measured bf16 peak with torch.compile at 64 chunks of 512 tokens (bench_gpu.py). BERT-base
# fine-tuning at 16 pairs of 200 tokens was never measured on a GPU: 500 steps in 27 s (about
# 19 steps/s) is an estimate; the deadline stops a slower run at its share. Total 349 s, under
# a budget of 6 minutes, so that a rerun fits in a 15-minute GPU slot.
PLAN = {
    "setup": 12,  # imports, wheel install, the bf16 GEMM peak (bench_gpu.bench_gemm)
    "baselines": 8,  # BM25 and TF-IDF, dev and test, on the CPU (515 pairs each)
    "npt": 3
    * 32,  # 2,450 steps at 96 steps/s = 25.5 s, plus building and 10 dev evaluations, per run
    "mlm": 120,  # at least 2 minutes (torch.compile included); it gets what the others leave
    "finetune": 4 * 27,  # 500 steps of 16 pairs per run (estimate, see above)
    "report": 5,
}
BUDGET = sum(PLAN.values())  # 349 s: the whole call's deadline
NPT_STEPS, NPT_EVAL_EVERY = 2450, 245
FT_STEPS, FT_EVAL_EVERY = 500, 250
MLM_VALIDATIONS = 5  # validations spread over MLM's time (and one at its end)
GOAL_TIMES_CHANCE = 3.0  # "trains": dev MRR at least 3 x chance (bench_paper_train.py's criterion)

NPT_RUNS = {  # overrides of paper.yaml's matching.npt
    "paper (asgd 5e-3, unscaled, W bilinear)": {
        "optimizer": "asgd",
        "learning_rate": 0.005,
        "scale_scores": False,
        "w_init": "bilinear",
    },
    "paper, W = 0": {
        "optimizer": "asgd",
        "learning_rate": 0.005,
        "scale_scores": False,
        "w_init": "zeros",
    },
    "paper.yaml (adamw 1e-3, /d, W = I)": {},
}
FT_RUNS = {  # overrides of paper.yaml's matching.bert
    "[CLS], paper (asgd 2e-3, unscaled)": {
        "pooling": "cls",
        "optimizer": "asgd",
        "learning_rate": 0.002,
        "scale_scores": False,
    },
    "mean, paper (asgd 2e-3, unscaled)": {
        "pooling": "mean",
        "optimizer": "asgd",
        "learning_rate": 0.002,
        "scale_scores": False,
    },
    "[CLS], paper.yaml (adamw 1e-4, /d)": {
        "pooling": "cls",
        "optimizer": "adamw",
        "learning_rate": 0.0001,
        "scale_scores": True,
    },
    "mean, paper.yaml (adamw 1e-4, /d)": {
        "pooling": "mean",
        "optimizer": "adamw",
        "learning_rate": 0.0001,
        "scale_scores": True,
    },
}

# --tiny: the same code path at sizes a CPU runs in well under 2 minutes, on the tests' toy corpus.
TINY_PLAN = {"setup": 5, "baselines": 5, "npt": 3 * 8, "mlm": 6, "finetune": 4 * 8, "report": 5}
TINY_STEPS = {"npt": (30, 10), "finetune": (10, 5)}
TINY_CONFIG = {
    "tokenizer": {"vocab_size": 400, "min_frequency": 1},
    "pretrain": {
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_length": 64,
        "batch_size": 8,
        "micro_batch_size": 4,
        "eval_every_steps": 8,
    },
    "matching": {
        "max_length": 64,
        "npt": {
            "d_model": 16,
            "n_layers": 1,
            "n_heads": 2,
            "d_k": 8,
            "batch_size": 12,
            "max_length": 64,
        },
        "bert": {"batch_size": 8},
    },
}


# ---------------------------------------------------------------- setup


def add_paths() -> None:
    """The project's ``src`` (before an installed copy) and ``bench`` (bench_gpu, bench_paper_train)."""
    for p in (REPO / "bench", REPO / "src"):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))


def ensure_imports(wheels: Path) -> dict[str, Any]:
    """Put the project's ``src`` and ``bench`` on the path and install the wheels of what the GPU
    machine lacks (``NEEDED``) from ``wheels`` into ``SITE``, as the recipe does; before any
    proofmatch import. Returns what was missing and what was installed."""
    add_paths()
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    installed: list[str] = []
    if missing:
        found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
        if not found:
            raise SystemExit(
                f"missing {missing} and no wheels in {wheels}: run `paper_size.py prepare --wheels` "
                f"on a machine with the package index"
            )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-index",
                "--no-deps",
                "--no-compile",
                "--no-cache-dir",
                "--upgrade",
                "--target",
                str(SITE),
                *map(str, found),
            ],
            check=True,
        )
        sys.path.insert(0, str(SITE))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(SITE), os.environ.get("PYTHONPATH")])
        )
        importlib.invalidate_caches()
        installed = [w.name for w in found]
        still = [m for m in NEEDED if importlib.util.find_spec(m) is None]
        if still:
            raise SystemExit(f"still missing {still} after installing {installed}")
    return {"missing": missing, "installed": installed}


def load_settings(tiny: bool) -> dict[str, Any]:
    """paper.yaml merged over the demo config (validated), with the tiny sizes over it for --tiny."""
    from proofmatch.config import deep_merge, load_config, validate_config

    cfg = load_config(*(REPO / c for c in CONFIGS))
    if tiny:
        cfg = deep_merge(cfg, copy.deepcopy(TINY_CONFIG))
        validate_config(cfg)
    return cfg


def measure_peak(device) -> dict[str, Any]:
    """bf16 matrix-product TFLOP/s: bench_gpu.bench_gemm (8192³) on CUDA; a small product on a CPU."""
    import torch

    if device.type == "cuda":
        from bench_gpu import bench_gemm

        return bench_gemm()
    n, steps = 256, 5
    a, b = (torch.randn(n, n, dtype=torch.bfloat16) for _ in range(2))
    torch.mm(a, b)
    t0 = time.perf_counter()
    for _ in range(steps):
        torch.mm(a, b)
    sec = (time.perf_counter() - t0) / steps
    return {"bench": "bf16 GEMM", "shape": f"{n}^3", "tflops": round(2 * n**3 / sec / 1e12, 4)}


class Clock:
    """The call's deadline and each part's: a part ends at its own planned share, or earlier when
    the parts after it would otherwise not get their planned time before the call's end."""

    def __init__(self, plan: dict[str, float], budget: float):
        self.t0 = time.perf_counter()
        self.plan, self.end = plan, self.t0 + budget
        self.spent: dict[str, float] = {}

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def left(self) -> float:
        return self.end - time.perf_counter()

    def reserve(self, after: list[str]) -> float:
        return sum(self.plan[p] for p in after)

    def deadline(self, share: float, after: list[str], at_least: float = 0.0) -> float:
        """A perf_counter deadline: ``share`` seconds from now, cut so that ``after`` keep their
        plan, but never under ``at_least`` seconds from now."""
        now = time.perf_counter()
        return now + max(at_least, min(share, self.end - now - self.reserve(after)))

    def part(self, name: str, fn: Callable[[], Any]) -> Any:
        t = time.perf_counter()
        try:
            return fn()
        finally:
            self.spent[name] = round(self.spent.get(name, 0.0) + time.perf_counter() - t, 1)


# ---------------------------------------------------------------- prepare (CPU)


def prepare(data: Path, results: Path | None, tiny: bool, wheels: bool) -> dict[str, Any]:
    """Write the split and the tokenizer into ``data``: from a results tree of
    ``snakemake --configfile config/config.yaml config/stacks.yaml`` (``results/replaced/mixed/
    conservation.parquet``, rule split_replace) or, with ``tiny``, the tests' toy corpus. The
    WordPiece tokenizer is trained on its train part with the settings' ``tokenizer`` block
    (paper.yaml's: 30,522 words, min frequency 2; rule train_tokenizer's function). MLM reads the
    train part's statements and proofs (the articles' text) from the same Parquet. ``wheels``:
    download the wheels the GPU machine lacks into ``data/wheels`` (recipe)."""
    from proofmatch.artifacts import digest_path, write_parquet
    from proofmatch.models.tokenizer import train_tokenizer

    cfg = load_settings(tiny)
    data.mkdir(parents=True, exist_ok=True)
    split = data / SPLIT
    if tiny:
        sys.path.insert(0, str(REPO / "tests"))
        from toydata import toy_pairs

        write_parquet(toy_pairs(n_articles=30, pairs_per_article=6, seed=1), split)
    else:
        if results is None:
            raise SystemExit("prepare needs --results (a results tree of the Stacks run) or --tiny")
        src = results / "replaced" / "mixed" / SPLIT
        if not src.exists():
            raise SystemExit(
                f"{src} is missing: run `snakemake -c2 --configfile config/config.yaml "
                f"config/stacks.yaml results/replaced/mixed/{SPLIT}` first"
            )
        shutil.copy2(src, split)
        shutil.copy2(digest_path(src), digest_path(split))  # the table's digest travels with it
    tok = data / TOKENIZER
    shutil.rmtree(tok, ignore_errors=True)
    train_tokenizer(
        split,
        tok,
        vocab_size=cfg["tokenizer"]["vocab_size"],
        min_frequency=cfg["tokenizer"]["min_frequency"],
    )
    if wheels:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "--implementation",
                "cp",
                "--platform",
                "manylinux_2_28_x86_64",
                "--platform",
                "manylinux2014_x86_64",
                "--platform",
                "manylinux_2_17_x86_64",
                "-d",
                str(data / "wheels"),
                *WHEELS,
            ],
            check=True,
        )
    size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
    manifest = {
        "split": str(split.relative_to(data)),
        "tokenizer": TOKENIZER,
        "tiny": tiny,
        "source": "toy_pairs" if tiny else str(results),
        "bytes": size,
        "wheels": sorted(w.name for w in (data / "wheels").glob("*.whl"))
        if (data / "wheels").is_dir()
        else [],
    }
    (data / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    if size > 60 * 2**20:
        raise SystemExit(
            f"{data} holds {size / 2**20:.1f} MiB; keep it under 60 MiB to copy it with the checkout"
        )
    return manifest


# ---------------------------------------------------------------- the parts


def chance_mrr(n: int) -> float:
    from bench_paper_train import chance_mrr as c

    return c(n)


def run_baselines(cfg: dict, split: Path, work: Path) -> list[dict[str, Any]]:
    """BM25 and TF-IDF on the dev and test parts (run_baseline; paper.yaml's decoding: top 500)."""
    from proofmatch.decoding.assign import DecodeSettings
    from proofmatch.evaluation.baselines import run_baseline

    rows = []
    for method in ("bm25", "tfidf"):
        for part in ("dev", "test"):
            t = time.perf_counter()
            m = run_baseline(
                method,
                split,
                part,
                work / f"{method}_{part}.parquet",
                work / f"{method}_{part}.json",
                DecodeSettings.from_config(cfg),
            )
            rows.append(
                {
                    "method": method,
                    "part": part,
                    "mrr": m["mrr"],
                    "acc": m["acc"],
                    "global_acc": m["global_acc"],
                    "n": m.get("n"),
                    "seconds": round(time.perf_counter() - t, 2),
                }
            )
            print(json.dumps({"baseline": rows[-1]}), flush=True)
    return rows


def matching_run(
    cfg: dict,
    encoder: str,
    block: str,
    overrides: dict,
    split: Path,
    work: Path,
    rt,
    steps: int,
    eval_every: int,
    deadline: float,
    pretrained: Path | None = None,
) -> dict[str, Any]:
    """One matching run (local loss, view both) for ``steps`` steps or until ``deadline``: the
    workflow's model and step (build_run, train_step) stepped by bench_paper_train.step_curve;
    dev MRR every ``eval_every`` steps; test MRR of the final weights."""
    import torch
    from bench_paper_train import step_curve

    from proofmatch.data.splits import read_parts
    from proofmatch.models import sampling
    from proofmatch.models.params import TrainParams, run_params
    from proofmatch.models.selection import rank_metrics
    from proofmatch.models.train import build_run

    c = copy.deepcopy(cfg)
    c["matching"][block].update(overrides)
    p = TrainParams.from_config(c["matching"], encoder)
    seed = c["seed"]
    sampling.seed_everything(seed, deterministic=rt.device.type == "cpu")
    run = build_run(split, work, rt, encoder, "local", "both", p, seed, pretrained, pretrained)
    chance = chance_mrr(len(run.dev))
    curve, t0 = step_curve(
        run,
        p,
        seed,
        steps,
        eval_every,
        run.dev,
        deadline=deadline,
        emit=lambda row: print(json.dumps({"run": encoder, **row}), flush=True),
    )
    if rt.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    (test,) = read_parts(split, ["test"])
    t = rank_metrics(
        run.matcher, list(test["statement_tokens"]), list(test["proof_tokens"]), batch_size=64
    )
    last, best = curve[-1], max(curve, key=lambda r: r["dev_mrr"])
    done = last["step"]
    first = next((r["step"] for r in curve if r["dev_mrr"] >= GOAL_TIMES_CHANCE * chance), None)
    out = {
        "encoder": encoder,
        "overrides": overrides,
        "settings": run_params(c["matching"], encoder),
        "n_train": len(run.train),
        "n_dev": len(run.dev),
        "n_test": len(test),
        "steps_planned": steps,
        "steps_done": done,
        "stopped_by_deadline": done < steps,
        "seconds": round(seconds, 1),
        "steps_s": round(done / max(seconds - last["eval_seconds"], 1e-9), 2),
        "chance_mrr": chance,
        "goal_mrr": GOAL_TIMES_CHANCE * chance,
        "first_step_at_goal": first,
        "reached_goal": first is not None,
        "best_dev_mrr": best["dev_mrr"],
        "best_step": best["step"],
        "final_dev_mrr": last["dev_mrr"],
        "final_dev_acc": last["dev_acc"],
        "final_loss": last["loss"],
        "test_mrr": t["mrr"],
        "test_acc": t["acc"],
        "curve": curve,
    }
    del run
    if rt.device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def mlm_flops_per_token(n_params: int, layers: int, hidden: int, seq: int) -> int:
    """bench_gpu.py's count: 6 x params (forward and backward of every weight) plus the attention
    score and value products (Chowdhery et al. 2022, appendix B)."""
    return 6 * n_params + 12 * layers * hidden * seq


def run_mlm(
    cfg: dict,
    split: Path,
    tokenizer: Path,
    out: Path,
    rt,
    deadline: float,
    peak_tflops: float,
    n_validations: int,
) -> dict[str, Any]:
    """MLM pretraining with the ``pretrain`` block (build_pretraining, pretrain_step, validate,
    finish_pretraining) until ``deadline``: the package's loop but for when it stops (after the
    step past the deadline, not after ``epochs``) and when it validates (``n_validations``
    times, evenly over the time, and at the end; validate saves the best model). ``out`` is then
    a ScratchBERT checkpoint (model and tokenizer) the fine-tunings start from."""
    import numpy as np
    import torch

    from proofmatch.models import sampling
    from proofmatch.models.params import PretrainParams
    from proofmatch.models.pretrain import (
        Progress,
        build_pretraining,
        finish_pretraining,
        pretrain_step,
        validate,
    )

    p = PretrainParams.from_config(cfg["pretrain"])
    seed = cfg["seed"]
    sampling.seed_everything(seed, deterministic=rt.device.type == "cpu")
    t_build = time.perf_counter()
    run = build_pretraining(split, tokenizer, out, rt, p, seed, cfg["pretrain"]["eval_every_unit"])
    build_s = time.perf_counter() - t_build
    progress = Progress()
    run.model.train()
    t0 = time.perf_counter()
    every = max((deadline - t0) / (n_validations + 1), 1e-3)
    next_val, durations, sizes, val_s = t0 + every, [], [], 0.0
    stopped = False
    while not stopped:
        batches = sampling.shuffled_batches(
            len(run.train_chunks), p.batch_size, seed, progress.epoch
        )
        for idx in batches[progress.step_in_epoch :]:
            t = time.perf_counter()
            pretrain_step(run, progress, idx)  # reads its loss: the step has finished on the device
            durations.append(time.perf_counter() - t)
            sizes.append(len(idx))
            now = time.perf_counter()
            stopped = (
                now >= deadline
                or progress.epoch * run.steps_per_epoch + progress.step_in_epoch
                >= p.epochs * run.steps_per_epoch
            )
            if now >= next_val and not stopped:
                tv = time.perf_counter()
                validate(run, progress)
                val_s += time.perf_counter() - tv
                next_val = time.perf_counter() + every
            if stopped:
                break
        else:
            progress.epoch += 1
            progress.step_in_epoch = 0
    tv = time.perf_counter()
    validate(run, progress)
    finish_pretraining(run, progress)
    val_s += time.perf_counter() - tv
    seconds = time.perf_counter() - t0
    n_params = sum(q.numel() for q in run.model.parameters())
    steady = np.array(durations[1:] if len(durations) > 1 else durations)
    med = float(
        np.median(steady)
    )  # the median step: the first (torch.compile) and recompiles left out
    tokens_s = float(np.median(sizes)) * p.max_length / med
    flops = mlm_flops_per_token(n_params, p.num_hidden_layers, p.hidden_size, p.max_length)
    tflops = tokens_s * flops / 1e12
    out_row = {
        "settings": {**cfg["pretrain"]},
        "n_params": n_params,
        "train_chunks": len(run.train_chunks),
        "dev_chunks": len(run.dev_chunks),
        "steps_per_epoch": run.steps_per_epoch,
        "steps_done": progress.step,
        "epochs_done": round(progress.step / run.steps_per_epoch, 2),
        "epochs_planned": p.epochs,
        "stopped_by_deadline": progress.step < p.epochs * run.steps_per_epoch,
        "build_seconds": round(build_s, 1),
        "seconds": round(seconds, 1),
        "validation_seconds": round(val_s, 1),
        "first_step_seconds": round(durations[0], 2),
        "median_step_seconds": round(med, 4),
        "tokens_s": round(tokens_s),
        "model_tflops": round(tflops, 3),
        "peak_tflops": peak_tflops,
        "share_of_measured_peak": round(100 * tflops / peak_tflops, 1) if peak_tflops else None,
        "compiled": bool(p.compile and rt.device.type == "cuda"),
        "val_log": progress.log,
        "best_val_loss": progress.best,
        "best_step": progress.best_step,
        "final_lr": run.scheduler.get_last_lr()[0],
    }
    del run
    if rt.device.type == "cuda":
        torch.cuda.empty_cache()
    return out_row


# ---------------------------------------------------------------- report


def pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}"


def markdown(result: dict[str, Any]) -> str:
    """The one table of the run (and its throughput and timing lines)."""
    m = result["meta"]
    lines = [
        f"# paper_size.py: {'TINY (CPU check, toy data; numbers mean nothing)' if m['tiny'] else 'paper sizes'}"
        f" on {m['device']}",
        "",
        f"torch {m['torch']}, transformers {m['transformers']}; data {m['data']}; "
        f"wall {result['wall_seconds']} s of a {m['budget_s']} s budget.",
        "",
        "| part | run | steps done / planned | s | dev MRR best (step) | dev MRR last | test MRR | "
        "chance | first step ≥ 3 x chance |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, rows in (("NPT", result["npt"]), ("ScratchBERT fine-tune", result["finetune"])):
        for name, r in rows.items():
            if "error" in r:
                lines.append(f"| {kind} | {name} | error: {r['error'][:120]} | | | | | | |")
                continue
            cut = " (deadline)" if r["stopped_by_deadline"] else ""
            lines.append(
                f"| {kind} | {name} | {r['steps_done']} / {r['steps_planned']}{cut} | {r['seconds']} | "
                f"{pct(r['best_dev_mrr'])} ({r['best_step']}) | {pct(r['final_dev_mrr'])} | "
                f"{pct(r['test_mrr'])} | {pct(r['chance_mrr'])} | {r['first_step_at_goal'] or 'never'} |"
            )
    for r in result["baselines"]:
        if "error" in r:
            lines.append(f"| baseline | error: {r['error'][:120]} | | | | | | | |")
            continue
        dev = r["part"] == "dev"
        lines.append(
            f"| baseline | {r['method']} ({r['part']}) | | {r['seconds']} | {pct(r['mrr']) if dev else ''} | | "
            f"{'' if dev else pct(r['mrr'])} | | |"
        )
    mlm = result["mlm"]
    lines.append("")
    if "error" in mlm:
        lines.append(f"MLM: error: {mlm['error'][:300]}")
    else:
        lines.append(
            f"MLM (BERT {mlm['settings']['num_hidden_layers']} x {mlm['settings']['hidden_size']}, "
            f"{mlm['n_params']:,} parameters): {mlm['steps_done']} steps of "
            f"{mlm['settings']['batch_size']} x {mlm['settings']['max_length']} tokens "
            f"({mlm['epochs_done']} of {mlm['epochs_planned']} epochs) in {mlm['seconds']} s; "
            f"validation loss {mlm['best_val_loss']:.3f} at step {mlm['best_step']}."
        )
    tp = result["throughput"]
    lines += [
        "",
        f"Throughput: NPT {tp.get('npt_steps_s')} steps/s (paper.yaml run); MLM {tp.get('mlm_tokens_s')} "
        f"tokens/s = {tp.get('mlm_share_of_measured_peak')} % of the measured bf16 peak "
        f"({tp.get('peak_tflops')} TFLOP/s).",
        "",
        "Time per part (s): "
        + ", ".join(f"{k} {v}" for k, v in result["part_seconds"].items())
        + "; planned: "
        + ", ".join(f"{k} {v}" for k, v in result["meta"]["plan_s"].items())
        + ".",
        "",
    ]
    return "\n".join(lines)


def guarded(name: str, fn: Callable[[], Any]) -> Any:
    """A part that fails (out of memory, a compiler error) is reported with its error; the next
    parts still run."""
    import traceback

    try:
        return fn()
    except Exception as exc:  # reported, not hidden
        traceback.print_exc()
        return {"error": f"{type(exc).__name__}: {str(exc)[:500]}", "part": name}


def run_all(data: Path, out: Path, tiny: bool, budget: float | None) -> dict[str, Any]:
    plan = TINY_PLAN if tiny else PLAN
    clock = Clock(plan, budget or sum(plan.values()))
    installed = ensure_imports(data / "wheels")
    import torch
    import transformers

    from proofmatch.models import runtime

    if tiny and not (data / SPLIT).exists():
        prepare(data, None, tiny=True, wheels=False)
    cfg = load_settings(tiny)
    split, tokenizer = data / SPLIT, data / TOKENIZER
    if not (split.exists() and tokenizer.is_dir()):
        raise SystemExit(
            f"{data} lacks {SPLIT} or {TOKENIZER}/: run `paper_size.py prepare` on the CPU first"
        )
    folder = out / "paper_size"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    work = Path(tempfile.mkdtemp(prefix="paper_size_"))
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
    rt = runtime.init_runtime()
    device = (
        torch.cuda.get_device_name()
        if rt.device.type == "cuda"
        else f"CPU ({platform.processor() or 'cpu'})"
    )
    print(
        f"paper_size: {device}, torch {torch.__version__}, budget {clock.end - clock.t0:.0f} s",
        flush=True,
    )
    peak = guarded("peak", lambda: measure_peak(rt.device))
    clock.spent["setup"] = round(clock.now(), 1)  # imports, wheels, data check, the peak
    npt_steps, npt_every = TINY_STEPS["npt"] if tiny else (NPT_STEPS, NPT_EVAL_EVERY)
    ft_steps, ft_every = TINY_STEPS["finetune"] if tiny else (FT_STEPS, FT_EVAL_EVERY)
    result: dict[str, Any] = {
        "meta": {
            "tiny": tiny,
            "device": device,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": platform.python_version(),
            "data": str(data),
            "configs": list(CONFIGS),
            "overrides": TINY_CONFIG if tiny else {},
            "plan_s": plan,
            "budget_s": round(clock.end - clock.t0),
            "wheels": installed,
            "goal": f"dev MRR >= {GOAL_TIMES_CHANCE} x chance",
        },
        "peak": peak,
    }

    result["baselines"] = clock.part(
        "baselines", lambda: guarded("baselines", lambda: run_baselines(cfg, split, work))
    )
    if isinstance(result["baselines"], dict):
        result["baselines"] = [result["baselines"]]

    later = ["mlm", "finetune", "report"]
    result["npt"] = {}
    share = plan["npt"] / len(NPT_RUNS)
    for k, (name, over) in enumerate(NPT_RUNS.items()):
        dl = clock.deadline(share, later, at_least=1.0)
        result["npt"][name] = clock.part(
            "npt",
            lambda: guarded(
                name,
                lambda: matching_run(
                    cfg, "npt", "npt", over, split, work / f"npt{k}", rt, npt_steps, npt_every, dl
                ),
            ),
        )

    mlm_dir = work / "scratchbert"
    dl = clock.deadline(clock.left(), ["finetune", "report"], at_least=plan["mlm"])
    result["mlm"] = clock.part(
        "mlm",
        lambda: guarded(
            "mlm",
            lambda: run_mlm(
                cfg,
                split,
                tokenizer,
                mlm_dir,
                rt,
                dl,
                (peak or {}).get("tflops") or 0.0,
                MLM_VALIDATIONS,
            ),
        ),
    )
    if "error" not in result["mlm"]:
        shutil.copy2(mlm_dir / "pretrain_log.csv", folder / "pretrain_log.csv")

    result["finetune"] = {}
    for k, (name, over) in enumerate(FT_RUNS.items()):
        rest = len(FT_RUNS) - k
        share = max(1.0, (clock.left() - plan["report"]) / rest)
        dl = time.perf_counter() + share
        if "error" in result["mlm"]:
            result["finetune"][name] = {"error": "no ScratchBERT checkpoint (MLM failed)"}
            continue
        result["finetune"][name] = clock.part(
            "finetune",
            lambda: guarded(
                name,
                lambda: matching_run(
                    cfg,
                    "scratchbert",
                    "bert",
                    over,
                    split,
                    work / f"ft{k}",
                    rt,
                    ft_steps,
                    ft_every,
                    dl,
                    mlm_dir,
                ),
            ),
        )

    def report() -> None:
        ok = {n: r for n, r in result["npt"].items() if "error" not in r}
        yaml_run = ok.get("paper.yaml (adamw 1e-3, /d, W = I)") or next(iter(ok.values()), {})
        mlm = result["mlm"]
        result["throughput"] = {
            "npt_steps_s": yaml_run.get("steps_s"),
            "npt_steps_s_per_run": {n: r["steps_s"] for n, r in ok.items()},
            "mlm_tokens_s": mlm.get("tokens_s"),
            "mlm_share_of_measured_peak": mlm.get("share_of_measured_peak"),
            "peak_tflops": (peak or {}).get("tflops"),
        }
        ft = {n: r for n, r in result["finetune"].items() if "error" not in r}
        result["questions"] = {
            "npt_trains_within_2450_steps": {
                n: {
                    "reached_goal": r["reached_goal"],
                    "steps_done": r["steps_done"],
                    "full_length": not r["stopped_by_deadline"],
                }
                for n, r in ok.items()
            },
            "bert_leaves_chance": {
                n: {
                    "reached_goal": r["reached_goal"],
                    "steps_done": r["steps_done"],
                    "best_dev_mrr": r["best_dev_mrr"],
                }
                for n, r in ft.items()
            },
            "pooling_best_dev_mrr": {
                pool: max(
                    (r["best_dev_mrr"] for n, r in ft.items() if r["settings"]["pooling"] == pool),
                    default=None,
                )
                for pool in ("cls", "mean")
            },
            "note": "measured in this one call only; TINY runs answer nothing"
            if tiny
            else "measured in this one call (one seed); see docs/results.md before acting on it",
        }
        result["part_seconds"] = {**clock.spent}
        result["wall_seconds"] = round(clock.now(), 1)
        result["part_seconds"]["report"] = 0.0
        (folder / "paper_size.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        (folder / "paper_size.md").write_text(markdown(result))

    clock.part("report", report)
    result["part_seconds"]["report"] = clock.spent["report"]
    result["wall_seconds"] = round(clock.now(), 1)
    (folder / "paper_size.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    (folder / "paper_size.md").write_text(markdown(result))
    with tarfile.open(out / "paper_size.tgz", "w:gz") as tar:
        tar.add(folder, arcname="paper_size")
    shutil.rmtree(work, ignore_errors=True)
    runtime.close_runtime(rt)
    print((folder / "paper_size.md").read_text(), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser(
        "prepare", help="(CPU) write the split, the tokenizer and the wheels into --data"
    )
    pr.add_argument(
        "--results", type=Path, help="a results tree of the Stacks run (results/replaced/mixed/...)"
    )
    pr.add_argument(
        "--wheels", action="store_true", help="also download the wheels the GPU machine lacks"
    )
    pr.add_argument(
        "--tiny", action="store_true", help="the tests' toy corpus instead of --results"
    )
    pr.add_argument("--data", type=Path, default=DATA)
    rn = sub.add_parser("run", help="(GPU) the runs, the JSON, the table and the archive")
    rn.add_argument(
        "--data",
        type=Path,
        default=None,
        help=f"prepared folder (default {DATA}; --tiny: <out>/data)",
    )
    rn.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "paper-size-out")))
    rn.add_argument(
        "--tiny",
        action="store_true",
        help="tiny sizes on the toy corpus, on the CPU (<= 2 minutes)",
    )
    rn.add_argument(
        "--budget",
        type=float,
        default=None,
        help=f"the call's deadline in seconds (default: "
        f"the plan's sum, {BUDGET} s; tiny {sum(TINY_PLAN.values())} s)",
    )
    rn.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        add_paths()
        print(json.dumps(prepare(args.data, args.results, args.tiny, args.wheels), indent=2))
        return 0
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    data = args.data or ((args.out / "data") if args.tiny else DATA)
    args.out.mkdir(parents=True, exist_ok=True)
    run_all(data, args.out, args.tiny, args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
