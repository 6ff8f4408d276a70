"""The released MATcH dataset as the workflow's data (thin wrapper around proofmatch.data.match)."""

from pathlib import Path

from proofmatch.data.match import import_folder
from proofmatch.logs import run_logged

# every output sits under results/ (Corpus.entry_outputs): the tree import_folder writes
root = Path(snakemake.output.pairs).parents[1]
run_logged(
    snakemake.log[0],
    import_folder,
    snakemake.input[0],
    root,
    snakemake.params.splits,
    snakemake.output.report,
    snakemake.params.levels,
)
