"""Symbol sets and token slots of every pair, once for all levels (thin wrapper around proofmatch.data.replace)."""

from proofmatch.data.replace import analyze_file
from proofmatch.logs import run_logged

run_logged(snakemake.log[0], analyze_file, snakemake.input.pairs, snakemake.output.symbols)
