# proofmatch: the MATcH pipeline (arXiv XHTML+MathML -> statement-proof pairs -> models -> Tables 1-7, Figure 2).
# Run `snakemake -c2 all` (demo corpus, tiny models) or `snakemake --profile slurm all` on a cluster.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/stats.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/search.smk"
include: "workflow/rules/latex.smk"
include: "workflow/rules/transfer.smk"


rule all:
    default_target: True
    input:
        expand("results/tables/table{n}.md", n=range(1, 8)),
        "results/tables/baselines.md",
        "results/figures/figure2.png",
        LATEX_TARGETS,  # the conversion table, when a corpus comes from LaTeX sources
        TRANSFER_TARGETS,  # the transfer table, when transfer.corpora names a corpus
