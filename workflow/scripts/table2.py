"""Table 2: token counts of statements and proofs (thin wrapper around proofmatch.evaluation.tables)."""

from proofmatch.evaluation.dataset_tables import write_table2
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0], write_table2, snakemake.input.pairs, snakemake.output.md.removesuffix(".md")
)
