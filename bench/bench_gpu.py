"""GPU throughput against the hardware's limit: BERT MLM tokens/s with model FLOPs utilisation (MFU),
and NPT matching steps/s at the paper's size, each in the variants the training code can choose.

MFU is model FLOPs per second over the bf16 peak. A BERT training token costs
``6 * n_params + 12 * n_layers * hidden * seq_len`` FLOPs (forward + backward of every weight, plus
the attention score and value products; Chowdhery et al. 2022, appendix B). Two peaks are reported:
the datasheet's dense bf16 rate (989 TFLOP/s for an H100/H200 SXM) and the rate of one large bf16
matrix product measured in the same run, which is what the chip delivers on random data.

Every variant runs ``--warmup`` untimed steps (compilation included), then ``--steps`` timed steps
between CUDA synchronisations. A variant that fails (out of memory, a compiler error) is reported
with its error instead of stopping the run.

    python bench/bench_gpu.py --json gpu.json            # needs a CUDA device
    python bench/bench_gpu.py --only mlm --steps 5
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
from collections.abc import Callable

import torch

DATASHEET_BF16_TFLOPS = 989.0


def _timed(step: Callable[[], None], warmup: int, steps: int) -> float:
    """Seconds per step after ``warmup`` untimed steps."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def bench_gemm(n: int = 8192, steps: int = 10) -> dict:
    """TFLOP/s of one ``n x n x n`` bf16 matrix product on random data: the practical ceiling."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    sec = _timed(lambda: torch.mm(a, b), 3, steps)
    return {"bench": "bf16 GEMM", "shape": f"{n}^3", "tflops": round(2 * n**3 / sec / 1e12, 1)}


def bench_mlm(
    attn: str,
    batch: int,
    seq: int,
    compile_model: bool,
    warmup: int,
    steps: int,
    peak_tflops: float,
) -> dict:
    """BERT-base MLM steps (bf16 autocast, fused AdamW) in one configuration."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=30522,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=512,
    )
    model = BertForMaskedLM._from_config(cfg, attn_implementation=attn).cuda().train()
    assert model.config._attn_implementation == attn, model.config._attn_implementation
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fwd = torch.compile(model) if compile_model else model
    ids = torch.randint(5, cfg.vocab_size, (batch, seq), device="cuda")
    labels = torch.where(
        torch.rand(batch, seq, device="cuda") < 0.15, ids, torch.full_like(ids, -100)
    )
    mask = torch.ones_like(ids)

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fwd(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    sec = _timed(step, warmup, steps)
    tokens_s = batch * seq / sec
    flops_token = 6 * n_params + 12 * cfg.num_hidden_layers * cfg.hidden_size * seq
    tflops = tokens_s * flops_token / 1e12
    return {
        "bench": "BERT-base MLM",
        "attn": attn,
        "batch": batch,
        "seq": seq,
        "compile": compile_model,
        "tokens_s": round(tokens_s),
        "model_tflops": round(tflops, 1),
        "mfu_datasheet": round(100 * tflops / DATASHEET_BF16_TFLOPS, 1),
        "mfu_measured_peak": round(100 * tflops / peak_tflops, 1),
        "max_mem_gb": round(torch.cuda.max_memory_allocated() / 2**30, 1),
    }


def bench_npt(variant: str, kind: str, warmup: int, steps: int) -> dict:
    """NPT at the paper's size (d = 300, 2 layers, 4 heads, d_k = 128, batch 60, ASGD): one
    optimisation step per call. ``variant``: eager, compile (inductor) or graphs (inductor with CUDA
    graphs, ``mode="reduce-overhead"``)."""
    from proofmatch.models.encoders import NPTConfig, NPTEncoder
    from proofmatch.models.losses import global_loss, local_loss
    from proofmatch.models.matcher import Matcher, MatcherConfig
    from proofmatch.models.optim import make_optimizer

    class _Codec:
        pad_id = 0

    torch.manual_seed(0)
    vocab, batch, ls, lp = 44000, 60, 60, 200
    npt = NPTConfig(vocab_size=vocab, d_model=300, n_layers=2, n_heads=4, d_k=128, max_length=200)
    m = Matcher(
        MatcherConfig("npt", "bilinear", "both", 200, npt=npt.to_dict()), NPTEncoder(npt), _Codec()
    )
    m.cuda().train()
    opt = make_optimizer(
        "asgd", m.parameters(), 0.005
    )  # as training makes it (capturable on a GPU)
    # statements and proofs each padded to their own length, as a training step pads them
    groups = [
        (
            torch.randint(3, vocab, (batch, n), device="cuda"),
            torch.ones(batch, n, dtype=torch.bool, device="cuda"),
        )
        for n in (ls, lp)
    ]
    fwd = m
    if variant == "compile":
        fwd = torch.compile(m)
    elif variant == "graphs":
        fwd = torch.compile(m, mode="reduce-overhead")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            _, M = fwd(groups)
        loss = local_loss(M) if kind == "local" else global_loss(M)[0]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    sec = _timed(step, warmup, steps)
    return {
        "bench": f"NPT {kind} step",
        "variant": variant,
        "shape": f"d=300 b={batch} len={ls}/{lp}",
        "steps_s": round(1 / sec, 1),
    }


def _guard(fn: Callable[..., dict], **kw) -> dict:
    try:
        row = fn(**kw)
    except Exception as exc:  # reported, not hidden: the row carries the error
        row = {
            "bench": fn.__name__,
            **{k: v for k, v in kw.items() if k not in ("warmup", "steps")},
            "error": f"{type(exc).__name__}: {str(exc)[:300]}",
        }
        traceback.print_exc()
    finally:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["mlm", "npt"], default=None)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 32, 64, 128])
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu.py needs a CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = True
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    rows = [_guard(bench_gemm)]
    peak = rows[0].get("tflops", DATASHEET_BF16_TFLOPS)
    w, s = args.warmup, args.steps
    if args.only in (None, "mlm"):
        rows.append(
            _guard(
                bench_mlm,
                attn="eager",
                batch=8,
                seq=512,
                compile_model=False,
                warmup=w,
                steps=s,
                peak_tflops=peak,
            )
        )
        for b in args.batches:
            rows.append(
                _guard(
                    bench_mlm,
                    attn="sdpa",
                    batch=b,
                    seq=512,
                    compile_model=False,
                    warmup=w,
                    steps=s,
                    peak_tflops=peak,
                )
            )
        best = max(
            (r for r in rows if r.get("tokens_s") and r.get("attn") == "sdpa"),
            key=lambda r: r["tokens_s"],
            default=None,
        )
        if best:
            rows.append(
                _guard(
                    bench_mlm,
                    attn="sdpa",
                    batch=best["batch"],
                    seq=512,
                    compile_model=True,
                    warmup=w,
                    steps=s,
                    peak_tflops=peak,
                )
            )
    if args.only in (None, "npt"):
        for variant in ("eager", "compile", "graphs"):
            rows.append(
                _guard(bench_npt, variant=variant, kind="local", warmup=max(w, 5), steps=max(s, 50))
            )
        rows.append(_guard(bench_npt, variant="eager", kind="global", warmup=w, steps=max(s, 50)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
