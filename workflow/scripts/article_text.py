"""The article text shards as one table: ScratchBERT's MLM text under pretrain.text: corpus
(thin wrapper around proofmatch.data.article_text)."""

from proofmatch.data.article_text import merge_article_text
from proofmatch.logs import run_logged

run_logged(
    snakemake.log[0], merge_article_text, list(snakemake.input.shards), snakemake.output.text
)
