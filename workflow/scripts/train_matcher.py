"""Train one matching model (thin wrapper around proofmatch.train)."""
from pathlib import Path

from proofmatch.logs import run_logged
from proofmatch.train import train_run

w = snakemake.wildcards
pretrained = snakemake.input.get("pretrained")
run_logged(snakemake.log[0], train_run, snakemake.input.data, Path(snakemake.output[0]).parent,
           w.encoder, w.mode, w.view, dict(snakemake.params.matching), seed=snakemake.params.seed,
           tokenizer_dir=Path(snakemake.input.tokenizer).parent,
           pretrained_dir=Path(pretrained).parent if pretrained else None)
