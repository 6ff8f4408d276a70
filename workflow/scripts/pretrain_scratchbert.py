"""MLM pretraining of ScratchBERT from scratch (thin wrapper around proofmatch.models.pretrain).

With ``resources.gpu`` > 1 the job trains as one DDP run across its GPUs (``runtime.launch``).
``pretrain.batch_size`` is the global batch, which the GPUs split: their number changes the speed,
not the experiment.
"""

from proofmatch.logs import run_logged
from proofmatch.models.pretrain import pretrain
from proofmatch.models.runtime import launch, set_threads

if __name__ == "__main__":
    set_threads(snakemake.threads)
    run_logged(
        snakemake.log[0],
        launch,
        int(snakemake.resources.get("gpu", 0)),
        pretrain,
        snakemake.input.data,
        snakemake.input.tokenizer,
        snakemake.output[0],
        dict(snakemake.params.pretrain),
        seed=snakemake.params.seed,
        text_parquet=snakemake.input.get("text"),
    )
