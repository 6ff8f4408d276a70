"""Render one of Tables 3-7 or the baselines table from evaluation summaries (proofmatch.evaluation.tables)."""

from pathlib import Path

from proofmatch.evaluation.tables import table_from_inputs
from proofmatch.logs import run_logged

md = Path(snakemake.output.md)
run_logged(
    snakemake.log[0],
    table_from_inputs,
    md.stem,
    list(snakemake.input),
    str(md.with_suffix("")),
    not_run=dict(snakemake.params.not_run),
    fusion=[tuple(r) for r in snakemake.params.fusion],
    config=snakemake.params.settings,
)
