"""One transfer pool: the training corpus's train part + every pair of a transfer corpus as test
(thin wrapper around proofmatch.evaluation.transfer.build_pool)."""

from proofmatch.evaluation.transfer import build_pool
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    build_pool,
    snakemake.input.pairs,
    snakemake.input.train,
    snakemake.output.data,
    snakemake.output.info,
)
