# Dataset statistics: Table 1 (articles and categories) and Table 2 (token counts).
from proofmatch.evaluation import captions as CAP
from proofmatch.evaluation import tables as T


rule table1:
    input:
        manifest="results/corpus/manifest.parquet",
        articles="results/corpus/articles.parquet",
        pairs="results/data/pairs.parquet",
    output:
        md="results/tables/table1.md",
        tex="results/tables/table1.tex",
        csv="results/tables/table1.csv",
    log:
        "results/logs/table1.log",
    benchmark:
        "results/benchmarks/table1.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=15,
    params:
        # the report's caption, the .md's too (a function: no {wildcard} expansion of its text)
        caption=lambda w: CAP.table_caption("table1", config),
    script:
        "../scripts/table1.py"


rule table2:
    input:
        pairs="results/data/pairs.parquet",
    output:
        md="results/tables/table2.md",
        tex="results/tables/table2.tex",
        csv="results/tables/table2.csv",
    log:
        "results/logs/table2.log",
    benchmark:
        "results/benchmarks/table2.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=15,
    params:
        caption=lambda w: CAP.table_caption("table2", config),  # as table1's
    script:
        "../scripts/table2.py"
