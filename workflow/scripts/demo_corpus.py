"""Generate the project's demo corpus (thin wrapper around proofmatch.demo.generate.generate)."""

from pathlib import Path

from proofmatch.demo.generate import generate
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    generate,
    Path(snakemake.output.xhtml).parent,
    n_articles=snakemake.params.n_articles,
    seed=snakemake.params.seed,
)
