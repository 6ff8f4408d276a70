"""TF-IDF / BM25 baseline with local and global decoding (thin wrapper around proofmatch.evaluation.baselines)."""

from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation.baselines import run_baseline
from proofmatch.logs import run_logged

w = snakemake.wildcards
decode = DecodeSettings(snakemake.params.topk, snakemake.params.exact_max_n, snakemake.params.seed)
run_logged(
    snakemake.log[0],
    run_baseline,
    w.method,
    snakemake.input.data,
    w.part,
    snakemake.output.ranks,
    snakemake.output.summary,
    decode,
    threads=snakemake.threads,  # the job's: the baseline then never imports torch
)
