"""TF-IDF / BM25 baseline with local and global decoding (thin wrapper around proofmatch.evaluation.baselines)."""

from proofmatch.evaluation.baselines import run_baseline
from proofmatch.logs import run_logged

w = snakemake.wildcards
run_logged(
    snakemake.log[0],
    run_baseline,
    w.method,
    snakemake.input.data,
    w.part,
    snakemake.output.ranks,
    snakemake.output.summary,
    topk=snakemake.params.topk,
    exact_max_n=snakemake.params.exact_max_n,
    seed=snakemake.params.seed,
    threads=snakemake.threads,  # the job's: the baseline then never imports torch
)
