"""Symbol replacement at one level for one split (thin wrapper around proofmatch.replace)."""
from proofmatch.logs import run_logged
from proofmatch.replace import replace_split_file

run_logged(snakemake.log[0], replace_split_file, snakemake.input.pairs, snakemake.input.split,
           snakemake.wildcards.level, snakemake.output.data, seed=snakemake.params.seed,
           alpha=snakemake.params.alpha, protected=snakemake.params.protected)
