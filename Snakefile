# proofmatch: the MATcH pipeline (arXiv XHTML+MathML -> statement-proof pairs -> models -> Tables 1-7, Figure 2).
# Run `snakemake -c2 all` (demo corpus, tiny models) or `snakemake --profile slurm all` on a cluster.
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

min_version("9.0")

# A checkout runs its own package, whichever proofmatch is installed: its src/ goes first on the
# path of this process and, through PYTHONPATH, of every job it starts (scripts, cluster jobs).
SRC = Path(workflow.basedir) / "src"
sys.path.insert(0, str(SRC))
os.environ.update(
    PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
)
import proofmatch

if not Path(proofmatch.__file__).resolve().is_relative_to(SRC.resolve()):
    raise WorkflowError(
        f"this workflow lives in {workflow.basedir} but Python imported proofmatch from "
        f"{Path(proofmatch.__file__).parent}; run Snakemake in a fresh process from this checkout"
    )


# Every config file is read once strictly first (duplicate keys refused, a YAML error names the
# file and line): Snakemake's own reader keeps the last of two keys and names neither.
from proofmatch.config import ConfigError, load_yaml

try:
    for _file in ["config/config.yaml", *(workflow.overwrite_configfiles or [])]:
        load_yaml(_file)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None


configfile: "config/config.yaml"


# A failed job's outputs are deleted by Snakemake, their digests (NAME.sha256) are not.
onerror:
    from proofmatch.artifacts import remove_orphan_digests

    remove_orphan_digests("results")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/stats.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/variants.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/search.smk"
include: "workflow/rules/latex.smk"
include: "workflow/rules/transfer.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        # every registered table (proofmatch.result_tables.TABLES): Tables 1-7, the baselines
        # table, the comparison with the paper, the findings, seed spread and data scaling
        [spec.target for spec in RT.TABLES.values()],
        "results/figures/figure2.png",
        SEARCH_INDEXES,  # the indexes proofmatch serve/search show (fusion.search_runs)
        MODEL_TARGETS,  # every model folder they read: a missing one is trained again
        LATEX_TARGETS,  # the conversion table, when a corpus comes from LaTeX sources
        REPORT_TARGETS,  # the data-scaling figure and the models the report's tables read
        TRANSFER_TARGETS,  # the transfer table, when transfer.corpora names a corpus
        TABLE_PAGES,  # each table's HTML page, the one the HTML report shows
