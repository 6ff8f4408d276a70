"""Build the fusion search index of one training run (thin wrapper around proofmatch.search.build):
the run's model and BM25, fused with the λ of the run's fusion.json (a declared input)."""

from pathlib import Path

from proofmatch.logs import run_logged
from proofmatch.models.runtime import set_threads
from proofmatch.search.build import build_index

set_threads(snakemake.threads)
run_logged(
    snakemake.log[0],
    build_index,
    snakemake.output[0],
    snakemake.input.data,
    run_dir=Path(snakemake.input.run).parent,
    method="fusion",
    pairs_parquet=snakemake.input.pairs,
    articles_parquet=snakemake.input.articles,
    seed=snakemake.params.seed,
)
