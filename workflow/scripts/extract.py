"""Extract statement-proof pairs of one shard (thin wrapper around proofmatch.data.extract)."""

from proofmatch.data.extract import extract_shard
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    extract_shard,
    snakemake.input.manifest,
    int(snakemake.wildcards.shard),
    snakemake.output.pairs,
    snakemake.output.report,
    max_file_mb=snakemake.params.max_file_mb,
    max_depth=snakemake.params.max_depth,
)
