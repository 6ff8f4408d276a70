"""The transfer table: in-corpus and cross-corpus MRR and accuracy (thin wrapper around proofmatch.evaluation.transfer)."""

from proofmatch.evaluation.transfer import render_transfer
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    render_transfer,
    list(snakemake.input),
    snakemake.output.md.removesuffix(".md"),
    snakemake.params.settings,
)
