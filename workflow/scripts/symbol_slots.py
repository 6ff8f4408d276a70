"""Symbol sets and token slots of every pair, once for all levels (thin wrapper around proofmatch.replace)."""
from proofmatch.logs import run_logged
from proofmatch.replace import analyze_file

run_logged(snakemake.log[0], analyze_file, snakemake.input.pairs, snakemake.output.symbols)
