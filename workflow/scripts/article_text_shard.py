"""Every paragraph of one manifest shard's dataset articles as typed tokens (thin wrapper around
proofmatch.data.article_text)."""

from proofmatch.data.article_text import article_text
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    article_text,
    snakemake.input.manifest,
    snakemake.input.pairs,
    snakemake.output.text,
    max_file_mb=snakemake.params.max_file_mb,
    max_depth=snakemake.params.max_depth,
    shard=int(snakemake.wildcards.shard),
)
