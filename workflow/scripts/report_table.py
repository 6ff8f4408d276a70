"""The findings, seeds or scaling table (thin wrapper around proofmatch.evaluation.report and .scaling)."""

from pathlib import Path

from proofmatch.evaluation import report as R
from proofmatch.evaluation import scaling as S
from proofmatch.logs import run_logged

md = Path(snakemake.output.md)
name, prefix = md.stem, str(md.with_suffix(""))
settings = snakemake.params.settings  # the config keys this job reads (captions.SETTINGS)
inputs = {"findings": R.findings_inputs, "seeds": R.seeds_inputs, "scaling": S.scaling_inputs}[
    name
](settings)
paths = R.evaluation_paths(inputs)
if name == "findings":
    run_logged(
        snakemake.log[0],
        R.write_findings,
        paths,
        settings,
        prefix,
        snakemake.input.shares,
        snakemake.output.headline,
    )
elif name == "seeds":
    run_logged(snakemake.log[0], R.write_seeds, paths, settings, prefix)
else:
    run_logged(
        snakemake.log[0],
        S.write_scaling,
        paths,
        settings,
        snakemake.input.data,
        prefix,
        snakemake.output.png,
        snakemake.output.pdf,
    )
