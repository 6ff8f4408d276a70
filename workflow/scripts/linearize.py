"""Linearize one shard of extracted pairs into typed tokens (thin wrapper around proofmatch.data.linearize)."""

from proofmatch.data.linearize import linearize_shard
from proofmatch.logs import run_logged

run_logged(snakemake.log[0], linearize_shard, snakemake.input.pairs, snakemake.output.pairs)
