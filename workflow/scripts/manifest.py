"""List and shard the corpus, join the metadata (thin wrapper around proofmatch.data.corpus)."""

from proofmatch.data.corpus import write_manifest
from proofmatch.logs import run_logged

# A configured corpus may be several folders, each with its own table (params.tables, None
# where a folder has none); a generated corpus is one folder with its table as an input.
tables = snakemake.params.tables
if tables is None:
    tables = snakemake.input.get("metadata")
# input.corpus is one folder (a string) or the configured list of folders
run_logged(
    snakemake.log[0],
    write_manifest,
    snakemake.input.corpus,
    snakemake.params.n_shards,
    tables,
    snakemake.output.manifest,
    snakemake.output.articles,
)
