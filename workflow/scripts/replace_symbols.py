"""Symbol replacement at one level for every pair, with its summary (thin wrapper around proofmatch.data.replace)."""

from proofmatch.data.replace import replace_level_file
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    replace_level_file,
    snakemake.input.symbols,
    snakemake.wildcards.level,
    snakemake.output.data,
    snakemake.output.summary,
    seed=snakemake.params.seed,
    alpha=snakemake.params.alpha,
    protected=snakemake.params.protected,
    rounding=snakemake.params.rounding,
)
