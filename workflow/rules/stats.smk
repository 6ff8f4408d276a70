# Dataset statistics: Table 1 (articles and categories) and Table 2 (token counts).


rule table1:
    input:
        manifest="results/corpus/manifest.parquet",
        articles="results/corpus/articles.parquet",
        pairs="results/data/pairs.parquet",
    output:
        md=report(
            "results/tables/table1.md",
            caption="../report/table1.rst",
            category="Tables",
        ),
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
    script:
        "../scripts/table1.py"


rule table2:
    input:
        pairs="results/data/pairs.parquet",
    output:
        md=report(
            "results/tables/table2.md",
            caption="../report/table2.rst",
            category="Tables",
        ),
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
    script:
        "../scripts/table2.py"
