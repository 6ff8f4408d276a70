"""Figure 2: LIME explanations of two test pairs under Conservation- and Full-trained models (proofmatch.evaluation.figure)."""

from pathlib import Path

from proofmatch.evaluation.figure import figure2
from proofmatch.logs import run_logged
from proofmatch.models.runtime import set_threads

set_threads(snakemake.threads)
run_logged(
    snakemake.log[0],
    figure2,
    Path(snakemake.input.conservation).parent,
    Path(snakemake.input.full).parent,
    snakemake.input.data,
    snakemake.output.png,
    snakemake.output.pdf,
    samples=snakemake.params.samples,
    seed=snakemake.params.seed,
    out_json=snakemake.output.shares,
)
