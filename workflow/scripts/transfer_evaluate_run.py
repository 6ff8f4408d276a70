"""Encode, score and decode a transfer pool with a trained model, one file a job (thin wrapper around
proofmatch.evaluation.evaluate)."""

from pathlib import Path

from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation.evaluate import EvalSettings, evaluate_run
from proofmatch.logs import run_logged
from proofmatch.models.runtime import set_threads

set_threads(snakemake.threads)
w = snakemake.wildcards
decode = DecodeSettings(snakemake.params.topk, snakemake.params.exact_max_n, snakemake.params.seed)
run_logged(
    snakemake.log[0],
    evaluate_run,
    Path(snakemake.input.model).parent,
    snakemake.input.data,
    w.part,
    snakemake.output.ranks,
    snakemake.output.summary,
    settings=EvalSettings(decode, w.view),
)
