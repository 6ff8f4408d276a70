"""Symbol sets and token slots of every pair, once for all levels (thin wrapper around proofmatch.data.replace)."""

from proofmatch.logs import run_logged
from proofmatch.data.replace import analyze_file

run_logged(snakemake.log[0], analyze_file, snakemake.input.pairs, snakemake.output.symbols)
