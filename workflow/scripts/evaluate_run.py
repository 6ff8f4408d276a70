"""Every evaluation of one trained run in one process: each (part, test level) the tables read,
written into the run's evaluation folder (thin wrapper around proofmatch.evaluation.evaluate)."""

from pathlib import Path

from proofmatch.decoding.assign import DecodeSettings
from proofmatch.evaluation.evaluate import EvalSettings, evaluate_folder
from proofmatch.logs import run_logged
from proofmatch.models.runtime import set_threads

set_threads(snakemake.threads)
data = {
    Path(p).stem: p for p in snakemake.input.data
}  # test level -> results/replaced/{split}/{level}.parquet
decode = DecodeSettings(snakemake.params.topk, snakemake.params.exact_max_n, snakemake.params.seed)
run_logged(
    snakemake.log[0],
    evaluate_folder,
    Path(snakemake.input.model).parent,
    data,
    [tuple(e) for e in snakemake.params.evaluations],
    snakemake.output[0],
    settings=EvalSettings(decode, snakemake.wildcards.view),
)
