# Corpus input and extraction: demo corpus (optional), manifest + sharding, extraction, linearization.
# One rule each for every corpus, over the {corpus} wildcard (common.smk, CORPORA): "" for the
# training corpus (results/corpus/, results/extract/, ...), transfer/NAME/ for a transfer corpus.
# Where a source kind's rule writes xhtml/ + metadata.csv: proofmatch.registry.sources.
# The demo source's folder: one, whichever corpus names the demo.
DEMO_CORPUS = SOURCES["demo"].root(C.MAIN)


rule demo_corpus:
    output:
        xhtml=directory(f"{DEMO_CORPUS}/xhtml"),
        metadata=f"{DEMO_CORPUS}/metadata.csv",
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
        unpack(lambda w: CORPORA[w.corpus].inputs()),
    output:
        manifest="results/{corpus}corpus/manifest.parquet",
        articles="results/{corpus}corpus/articles.parquet",
    log:
        "results/logs/{corpus}manifest.log",
    benchmark:
        "results/benchmarks/{corpus}manifest.tsv"
    wildcard_constraints:
        corpus=XHTML_CORPUS,
    conda:
        CONDA
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        n_shards=lambda w: CORPORA[w.corpus].n_shards,
        tables=lambda w: CORPORA[w.corpus].tables(),
    script:
        "../scripts/manifest.py"


rule extract:
    input:
        manifest="results/{corpus}corpus/manifest.parquet",
    output:
        pairs="results/{corpus}extract/shard-{shard}.parquet",
        report="results/{corpus}extract/shard-{shard}.report.json",
    log:
        "results/logs/{corpus}extract/shard-{shard}.log",
    benchmark:
        "results/benchmarks/{corpus}extract/shard-{shard}.tsv"
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
        pairs="results/{corpus}extract/shard-{shard}.parquet",
    output:
        pairs="results/{corpus}linearize/shard-{shard}.parquet",
    log:
        "results/logs/{corpus}linearize/shard-{shard}.log",
    benchmark:
        "results/benchmarks/{corpus}linearize/shard-{shard}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/linearize.py"


# The released MATcH dataset (corpus.source: match, proofmatch.data.match): it enters after
# extraction, so this one job writes the artifacts of the stages it skips (Corpus.entry_outputs).
if MAIN_CORPUS.spec.after_extraction:

    rule match_corpus:
        input:
            MAIN_CORPUS.entry["dir"],
        output:
            **MAIN_CORPUS.entry_outputs(SPLITS),
        log:
            "results/logs/match_corpus.log",
        benchmark:
            "results/benchmarks/match_corpus.tsv"
        conda:
            CONDA
        resources:
            mem_mb=8000,
            runtime=120,
        params:
            splits=SPLITS,
            levels=X.ALL_LEVELS,
        script:
            "../scripts/match_corpus.py"
