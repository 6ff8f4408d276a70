"""List and shard the corpus, join the metadata (thin wrapper around proofmatch.data.corpus)."""
from proofmatch.data.corpus import write_manifest
from proofmatch.logs import run_logged

run_logged(snakemake.log[0], write_manifest, snakemake.input.corpus, snakemake.params.n_shards,
           snakemake.input.get("metadata"), snakemake.output.manifest, snakemake.output.articles)
