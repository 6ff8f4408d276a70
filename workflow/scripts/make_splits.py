"""Mixed, Unmixed and probability-domain splits (thin wrapper around proofmatch.data.splits)."""

from proofmatch.data.splits import write_splits
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    write_splits,
    snakemake.input.pairs,
    snakemake.input.articles,
    dict(snakemake.output.items()),
    fractions=snakemake.params.fractions,
    seed=snakemake.params.seed,
    pr_category=snakemake.params.pr_category,
)
