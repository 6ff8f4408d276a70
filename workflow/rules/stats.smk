# Dataset statistics: Table 1 (articles and categories) and Table 2 (token counts).


rule table1:
    input:
        manifest="results/corpus/manifest.parquet",
        articles="results/corpus/articles.parquet",
        pairs="results/data/pairs.parquet",
    output:
        multiext("results/tables/table1", ".md", ".tex", ".csv"),
    log:
        "results/logs/table1.log",
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=15,
    script:
        "../scripts/table1.py"


rule table2:
    input:
        pairs="results/data/pairs.parquet",
    output:
        multiext("results/tables/table2", ".md", ".tex", ".csv"),
    log:
        "results/logs/table2.log",
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=15,
    script:
        "../scripts/table2.py"
