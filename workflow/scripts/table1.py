"""Table 1: corpus and category statistics (thin wrapper around proofmatch.evaluation.tables)."""

from proofmatch.evaluation.dataset_tables import write_table1
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    write_table1,
    snakemake.input.manifest,
    snakemake.input.articles,
    snakemake.input.pairs,
    snakemake.output.md.removesuffix(".md"),
)
