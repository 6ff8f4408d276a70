"""A trained run fused with BM25 in one process: its weight λ chosen on its dev part (fusion.json),
then each (part, test level) the tables read scored at that weight, written into the fusion's
evaluation folder (thin wrapper around proofmatch.evaluation.fused)."""

from pathlib import Path

from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation.evaluate import EvalSettings
from proofmatch.evaluation.fused import fuse_run
from proofmatch.logs import run_logged
from proofmatch.models.runtime import set_threads

set_threads(snakemake.threads)
w = snakemake.wildcards
data = {
    Path(p).stem: p for p in snakemake.input.data
}  # level -> results/replaced/{split}/{level}.parquet
decode = DecodeSettings(snakemake.params.topk, snakemake.params.exact_max_n, snakemake.params.seed)
run_logged(
    snakemake.log[0],
    fuse_run,
    Path(snakemake.input.model).parent,
    data,
    w.level,
    [tuple(e) for e in snakemake.params.evaluations],
    snakemake.output.weight,
    snakemake.output.evaluations,
    weights=list(snakemake.params.weights),
    normalize=snakemake.params.normalize,
    settings=EvalSettings(decode, w.view),
)
