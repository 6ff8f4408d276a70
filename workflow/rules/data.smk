# Filtering (Appendix A), splits (Mixed / Unmixed / probability domain), symbol replacement (§5).


# Every corpus's (the {corpus} wildcard, as in corpus.smk); a transfer corpus's pairs are then its
# test pool (transfer.smk), the training corpus's are split and replaced.
rule filter_pairs:
    input:
        shards=lambda w: CORPORA[w.corpus].shard_files("linearize", ".parquet"),
        reports=lambda w: CORPORA[w.corpus].shard_files("extract", ".report.json"),
    output:
        pairs="results/{corpus}data/pairs.parquet",
        audit="results/{corpus}data/filter_audit.parquet",
        report=report(
            "results/{corpus}data/filter_report.json",
            caption="../report/filter_report.rst",
            category="Data",
        ),
    log:
        "results/logs/{corpus}filter_pairs.log",
    benchmark:
        "results/benchmarks/{corpus}filter_pairs.tsv"
    wildcard_constraints:
        corpus=XHTML_CORPUS,
    conda:
        CONDA
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        language=config["filter"]["language"],
        min_tokens=config["filter"]["min_tokens"],
        max_tokens=config["filter"]["max_tokens"],
    script:
        "../scripts/filter_pairs.py"


# ScratchBERT's MLM text under pretrain.text: corpus (proofmatch.data.article_text): every
# paragraph of every article with a pair in the dataset, dev and test articles included; one job
# per manifest shard (as extract), then one table.
rule article_text_shard:
    input:
        manifest="results/corpus/manifest.parquet",
        pairs="results/data/pairs.parquet",
    output:
        text="results/article_text/shard-{shard}.parquet",
    log:
        "results/logs/article_text/shard-{shard}.log",
    benchmark:
        "results/benchmarks/article_text/shard-{shard}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        max_file_mb=config["extract"]["max_file_mb"],
        max_depth=config["extract"]["max_depth"],
    script:
        "../scripts/article_text_shard.py"


rule article_text:
    input:
        shards=MAIN_CORPUS.shard_files("article_text", ".parquet"),
    output:
        text="results/data/article_text.parquet",
    log:
        "results/logs/article_text.log",
    benchmark:
        "results/benchmarks/article_text.tsv"
    conda:
        CONDA
    resources:
        mem_mb=8000,
        runtime=30,
    script:
        "../scripts/article_text.py"


rule make_splits:
    input:
        pairs="results/data/pairs.parquet",
        articles="results/corpus/articles.parquet",
    output:
        **{split: f"results/splits/{split}.parquet" for split in SPLITS},
    log:
        "results/logs/make_splits.log",
    benchmark:
        "results/benchmarks/make_splits.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        fractions=config["splits"]["fractions"],
        pr_category=config["splits"]["pr_category"],
        seed=SEED,
    script:
        "../scripts/make_splits.py"


# Symbol replacement (§5): the XML work once per pair, then one file per level for every pair,
# from which each split selects its rows (a pair's mapping is seeded by its id, not its split).
rule symbol_slots:
    input:
        pairs="results/data/pairs.parquet",
    output:
        symbols="results/replaced/symbols.parquet",
    log:
        "results/logs/symbol_slots.log",
    benchmark:
        "results/benchmarks/symbol_slots.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=240,
    script:
        "../scripts/symbol_slots.py"


rule replace_symbols:
    input:
        symbols="results/replaced/symbols.parquet",
    output:
        data="results/replaced/{level}.parquet",
        summary="results/replaced/{level}.summary.json",
    log:
        "results/logs/replace_symbols/{level}.log",
    benchmark:
        "results/benchmarks/replace_symbols/{level}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        # alpha and its rounding matter to the partial levels only, the protected symbols to
        # the *_p levels only: changing one reruns just those levels.
        alpha=lambda w: (
            config["replace"]["partial_alpha"]
            if w.level.startswith("partial")
            else None
        ),
        rounding=lambda w: (
            config["replace"]["partial_rounding"]
            if w.level.startswith("partial")
            else None
        ),
        protected=lambda w: (
            config["replace"]["protected"] if w.level.endswith("_p") else []
        ),
        seed=SEED,
    script:
        "../scripts/replace_symbols.py"


rule replaced_split:
    input:
        data="results/replaced/{level}.parquet",
        split="results/splits/{split}.parquet",
    output:
        data=X.replaced_data("{split}", "{level}"),
    log:
        "results/logs/replaced_split/{split}-{level}.log",
    benchmark:
        "results/benchmarks/replaced_split/{split}-{level}.tsv"
    wildcard_constraints:
        split=MADE_SPLITS,
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=30,
    script:
        "../scripts/replaced_split.py"
