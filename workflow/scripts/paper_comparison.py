"""This run's Tables 3-6 beside the paper's numbers (proofmatch.evaluation.comparison)."""

from proofmatch.evaluation.comparison import comparison_from_inputs
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    comparison_from_inputs,
    list(snakemake.input.evaluations),
    snakemake.input.paper,
    snakemake.input.filter_report,
    snakemake.output.md,
    snakemake.output.csv,
    corpus_source=snakemake.params.corpus_source,
    corpus_dir=snakemake.params.corpus_dir,
    not_run=dict(snakemake.params.not_run),
    bootstrap=(snakemake.params.resamples, snakemake.params.seed),
)
