"""Train one matching model (thin wrapper around proofmatch.models.train).

With ``resources.gpu`` > 1 the job trains as one DDP run across its GPUs (``runtime.launch``).
``matching.*.batch_size`` is the global batch, which the GPUs split: their number changes the speed,
not the experiment.
"""

from pathlib import Path

from proofmatch.logs import run_logged
from proofmatch.models.params import TrainParams, start_checkpoint
from proofmatch.models.runtime import launch, set_threads
from proofmatch.models.train import train_run

if __name__ == "__main__":
    set_threads(snakemake.threads)
    w = snakemake.wildcards
    matching = dict(snakemake.params.matching)  # this run's part of the config's matching block
    run_logged(
        snakemake.log[0],
        launch,
        int(snakemake.resources.get("gpu", 0)),
        train_run,
        snakemake.input.data,
        Path(snakemake.output[0]).parent,
        w.encoder,
        w.mode,
        w.view,
        TrainParams.from_config(matching, w.encoder),
        seed=snakemake.params.seed,
        pretrained_dir=start_checkpoint(matching, w.encoder, snakemake.input.get("pretrained")),
        decode=matching.get("decode"),
    )
