# Tables 3-7, the baselines table, Figure 2, the comparison with the paper and the report's tables;
# each table's rows, title and caption are registered in proofmatch.result_tables (the paper's
# cells in proofmatch.evaluation.paper).
import os

from proofmatch.evaluation import comparison as COMPARISON
from proofmatch.evaluation import report as REPORT
from proofmatch.evaluation import scaling as SCALING
from proofmatch.evaluation import captions as CAP
from proofmatch.evaluation import tables as T


# Every table made of rows (proofmatch.result_tables.TABLES: Tables 3-7, the baselines table, and
# any table registered there or in a module named by PROOFMATCH_TABLES): one job per table.
rule table:
    input:
        lambda w: table_inputs(w.table),
    output:
        md="results/tables/{table}.md",
        tex="results/tables/{table}.tex",
        csv="results/tables/{table}.csv",
    log:
        "results/logs/{table}.log",
    benchmark:
        "results/benchmarks/table/{table}.tsv"
    wildcard_constraints:
        table=X.pattern(RT.rendered()),
    conda:
        CONDA
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        not_run=NOT_RUN,
        fusion=FUSION_RUNS,
        # the table's caption, filled from the config (the report's; the script writes the same
        # with its pool counted)
        caption=lambda w: CAP.table_caption(w.table, config),
        settings=CAP.job_settings(config),  # what the job reads of the config, nothing else
    script:
        "../scripts/render_table.py"


# Every cell of Tables 3-6 the paper reports beside this run's (the paper's values:
# src/proofmatch/evaluation/paper_results.csv).
rule paper_comparison:
    input:
        evaluations=PAPER.evaluation_inputs(NOT_RUN),
        paper=os.path.relpath(PAPER.PAPER_RESULTS),
        filter_report="results/data/filter_report.json",
    output:
        md="results/tables/paper_comparison.md",
        csv="results/tables/paper_comparison.csv",
    log:
        "results/logs/paper_comparison.log",
    benchmark:
        "results/benchmarks/paper_comparison.tsv"
    conda:
        CONDA
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        not_run=NOT_RUN,
        corpus_source=config["corpus"]["source"],
        corpus_dir=config["corpus"]["dir"],
        resamples=config["report"]["resamples"],
        seed=SEED,
        caption=lambda w: COMPARISON.caption(
            COMPARISON.corpus_label(
                config["corpus"]["source"], config["corpus"]["dir"]
            )
        ),
    script:
        "../scripts/paper_comparison.py"


rule figure2:
    input:
        conservation=str(X.FIGURE2_RUNS["conservation"].model()),
        full=str(X.FIGURE2_RUNS["full"].model()),
        data=X.FIGURE2_RUNS["conservation"].data(),
    output:
        png=report(
            "results/figures/figure2.png",
            caption="../report/figure2.rst",
            category="Figures",
        ),
        pdf="results/figures/figure2.pdf",
        shares="results/figures/figure2.json",  # each panel's share of positive weight on math
    log:
        "results/logs/figure2.log",
    benchmark:
        "results/benchmarks/figure2.tsv"
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=1,
    params:
        samples=config["figure"]["lime_samples"],
        seed=SEED,
    script:
        "../scripts/figure2.py"


# What the results conclude (proofmatch.evaluation.report): the paper's findings checked with
# intervals, the headline runs' seed spread, and the data-scaling curve.
REPORT_EVALUATIONS = {
    "findings": REPORT.findings_inputs(config),
    "seeds": REPORT.seeds_inputs(config),
    "scaling": SCALING.scaling_inputs(config),
}
# rule all asks for their tables as for every registered one (RT.TABLES)
REPORT_TARGETS = [
    "results/figures/scaling.png",
    *X.model_folders(
        (ev for evs in REPORT_EVALUATIONS.values() for ev in evs),
        pretrains=not config["pretrain"]["checkpoint"],
    ),
]


rule findings:
    input:
        evaluations=X.workflow_inputs(REPORT_EVALUATIONS["findings"]),
        shares="results/figures/figure2.json",
    output:
        md="results/tables/findings.md",
        tex="results/tables/findings.tex",
        csv="results/tables/findings.csv",
        headline="results/tables/findings_headline.csv",
    log:
        "results/logs/findings.log",
    benchmark:
        "results/benchmarks/findings.tsv"
    conda:
        CONDA
    resources:
        mem_mb=2000,
        # re-solving global decoding per resample: about 26 CPU s an evaluation at the Stacks
        # pool (515 pairs), 20 of them (bench/bench_findings.py; docs/measured/findings.md)
        runtime=30,
    params:
        caption=CAP.table_caption("findings", config),
        settings=CAP.job_settings(config),  # what the job reads of the config, nothing else
    script:
        "../scripts/report_table.py"


use rule findings as seeds_table with:
    input:
        evaluations=X.workflow_inputs(REPORT_EVALUATIONS["seeds"]),
    output:
        md="results/tables/seeds.md",
        tex="results/tables/seeds.tex",
        csv="results/tables/seeds.csv",
    log:
        "results/logs/seeds_table.log",
    benchmark:
        "results/benchmarks/seeds_table.tsv"
    params:
        caption=CAP.table_caption("seeds", config),
        settings=CAP.job_settings(config),


use rule findings as scaling_table with:
    input:
        evaluations=X.workflow_inputs(REPORT_EVALUATIONS["scaling"]),
        data=X.replaced_data("mixed", V.HEADLINE_LEVEL),
    output:
        md="results/tables/scaling.md",
        tex="results/tables/scaling.tex",
        csv="results/tables/scaling.csv",
        png=report(
            "results/figures/scaling.png",
            caption="../report/scaling.rst",
            category="Figures",
        ),
        pdf="results/figures/scaling.pdf",
    log:
        "results/logs/scaling_table.log",
    benchmark:
        "results/benchmarks/scaling_table.tsv"
    params:
        caption=CAP.table_caption("scaling", config),
        settings=CAP.job_settings(config),
