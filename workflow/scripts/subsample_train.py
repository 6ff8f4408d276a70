"""A share of a split's train part for the data-scaling curve (thin wrapper around proofmatch.data.subsample)."""

from proofmatch.data.subsample import subsample_train
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    subsample_train,
    snakemake.input.data,
    snakemake.output[0],
    fraction=snakemake.params.fraction,
    seed=snakemake.params.seed,
)
