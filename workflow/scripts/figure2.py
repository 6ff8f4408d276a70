"""Figure 2: LIME explanations under Conservation- and Full-trained models (proofmatch.figure)."""
from pathlib import Path

from proofmatch.figure import figure2
from proofmatch.logs import run_logged

run_logged(snakemake.log[0], figure2, Path(snakemake.input.conservation).parent,
           Path(snakemake.input.full).parent, snakemake.input.data, snakemake.output.png,
           snakemake.output.pdf, samples=snakemake.params.samples, seed=snakemake.params.seed)
