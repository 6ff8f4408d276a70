"""Render one of Tables 3-7 or the baselines table from evaluation summaries (proofmatch.tables)."""
from proofmatch.logs import run_logged
from proofmatch.tables import render

run_logged(snakemake.log[0], render, snakemake.rule, dict(snakemake.input.items()),
           snakemake.output.md.removesuffix(".md"), not_run=dict(snakemake.params.not_run))
