"""Filter pairs (non-English articles, too short or too long pairs) with an audit (proofmatch.data.filters)."""

from proofmatch.data.filters import filter_pairs
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    filter_pairs,
    list(snakemake.input.shards),
    list(snakemake.input.reports),
    snakemake.output.pairs,
    snakemake.output.audit,
    snakemake.output.report,
    language=snakemake.params.language,
    min_tokens=snakemake.params.min_tokens,
    max_tokens=snakemake.params.max_tokens,
)
