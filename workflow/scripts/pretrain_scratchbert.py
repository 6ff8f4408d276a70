"""MLM pretraining of ScratchBERT from scratch (thin wrapper around proofmatch.pretrain)."""
from pathlib import Path

from proofmatch.logs import run_logged
from proofmatch.pretrain import pretrain

run_logged(snakemake.log[0], pretrain, snakemake.input.data, Path(snakemake.input.tokenizer).parent,
           Path(snakemake.output[0]).parent, dict(snakemake.params.pretrain), seed=snakemake.params.seed)
