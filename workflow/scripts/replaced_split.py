"""One split's rows of a replacement level (thin wrapper around proofmatch.data.replace.select_split)."""

from proofmatch.data.replace import select_split
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0],
    select_split,
    snakemake.input.data,
    snakemake.input.split,
    snakemake.output.data,
)
