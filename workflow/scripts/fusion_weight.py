"""Choose a trained run's fusion weight λ on its dev part (thin wrapper around proofmatch.evaluation.fused)."""
from pathlib import Path

from proofmatch.models.runtime import set_threads
from proofmatch.evaluation.fused import fusion_weight
from proofmatch.logs import run_logged

set_threads(snakemake.threads)
run_logged(snakemake.log[0], fusion_weight, Path(snakemake.input.model).parent, snakemake.input.data,
           snakemake.output[0], weights=list(snakemake.params.weights), normalize=snakemake.params.normalize,
           view=snakemake.wildcards.view)
