"""Build the search index of one training run (thin wrapper around proofmatch.search.build)."""
from pathlib import Path

from proofmatch.models.runtime import set_threads
from proofmatch.logs import run_logged
from proofmatch.search.build import build_index

set_threads(snakemake.threads)
run_logged(snakemake.log[0], build_index, snakemake.output[0], snakemake.input.data,
           run_dir=Path(snakemake.input.run).parent, pairs_parquet=snakemake.input.pairs,
           articles_parquet=snakemake.input.articles, seed=snakemake.params.seed)
