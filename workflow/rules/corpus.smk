# Corpus input and extraction: demo corpus (optional), manifest + sharding, extraction, linearization.


rule demo_corpus:
    output:
        xhtml=directory("results/demo_corpus/xhtml"),
        metadata="results/demo_corpus/metadata.csv",
    log:
        "results/logs/demo_corpus.log",
    benchmark:
        "results/benchmarks/demo_corpus.tsv"
    conda:
        CONDA
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        n_articles=config["corpus"]["demo"]["n_articles"],
        seed=config["corpus"]["demo"]["seed"],
    script:
        "../scripts/demo_corpus.py"


rule manifest:
    input:
        unpack(lambda w: MAIN_CORPUS.inputs()),
    output:
        manifest="results/corpus/manifest.parquet",
        articles="results/corpus/articles.parquet",
    log:
        "results/logs/manifest.log",
    benchmark:
        "results/benchmarks/manifest.tsv"
    conda:
        CONDA
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        n_shards=config["corpus"]["n_shards"],
        tables=MAIN_CORPUS.tables(),
    script:
        "../scripts/manifest.py"


rule extract:
    input:
        manifest="results/corpus/manifest.parquet",
    output:
        pairs="results/extract/shard-{shard}.parquet",
        report="results/extract/shard-{shard}.report.json",
    log:
        "results/logs/extract/shard-{shard}.log",
    benchmark:
        "results/benchmarks/extract/shard-{shard}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        max_file_mb=config["extract"]["max_file_mb"],
        max_depth=config["extract"]["max_depth"],
    script:
        "../scripts/extract.py"


rule linearize:
    input:
        pairs="results/extract/shard-{shard}.parquet",
    output:
        pairs="results/linearize/shard-{shard}.parquet",
    log:
        "results/logs/linearize/shard-{shard}.log",
    benchmark:
        "results/benchmarks/linearize/shard-{shard}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/linearize.py"
