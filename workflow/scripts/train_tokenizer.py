"""Train the WordPiece tokenizer on a training split (thin wrapper around proofmatch.models.tokenizer)."""

from proofmatch.logs import run_logged
from proofmatch.models.tokenizer import train_tokenizer

run_logged(
    snakemake.log[0],
    train_tokenizer,
    snakemake.input.data,
    snakemake.output[0],
    vocab_size=snakemake.params.vocab_size,
    min_frequency=snakemake.params.min_frequency,
)
