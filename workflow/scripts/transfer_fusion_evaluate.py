"""Score and decode a transfer pool with a trained run fused with BM25 at its stored weight, one file
a job (thin wrapper around proofmatch.evaluation.fused)."""

from pathlib import Path

from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation.evaluate import EvalSettings
from proofmatch.evaluation.fused import evaluate_fusion
from proofmatch.logs import run_logged
from proofmatch.models.runtime import set_threads

set_threads(snakemake.threads)
w = snakemake.wildcards
decode = DecodeSettings(snakemake.params.topk, snakemake.params.exact_max_n, snakemake.params.seed)
run_logged(
    snakemake.log[0],
    evaluate_fusion,
    Path(snakemake.input.model).parent,
    snakemake.input.weight,
    snakemake.input.data,
    w.part,
    snakemake.output.ranks,
    snakemake.output.summary,
    settings=EvalSettings(decode, w.view),
)
