# Filtering (Appendix A), splits (Mixed / Unmixed / probability domain), symbol replacement (§5).


rule filter_pairs:
    input:
        shards=expand("results/linearize/shard-{shard}.parquet", shard=SHARDS),
        reports=expand("results/extract/shard-{shard}.report.json", shard=SHARDS),
    output:
        pairs="results/data/pairs.parquet",
        audit="results/data/filter_audit.parquet",
        report="results/data/filter_report.json",
    log:
        "results/logs/filter_pairs.log",
    benchmark:
        "results/benchmarks/filter_pairs.tsv"
    conda:
        CONDA
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        language=config["filter"].get("language", "en"),
        min_tokens=config["filter"].get("min_tokens", 20),
        max_tokens=config["filter"].get("max_tokens", 500),
    script:
        "../scripts/filter_pairs.py"


rule make_splits:
    input:
        pairs="results/data/pairs.parquet",
        articles="results/corpus/articles.parquet",
    output:
        **{split: f"results/splits/{split}.parquet" for split in SPLITS},
    log:
        "results/logs/make_splits.log",
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        fractions=config["splits"].get("fractions", [0.8, 0.1, 0.1]),
        pr_category=config["splits"].get("pr_category", "math.PR"),
        seed=SEED,
    script:
        "../scripts/make_splits.py"


rule replace_symbols:
    input:
        pairs="results/data/pairs.parquet",
        split="results/splits/{split}.parquet",
    output:
        data="results/replaced/{split}/{level}.parquet",
    log:
        "results/logs/replace_symbols/{split}-{level}.log",
    benchmark:
        "results/benchmarks/replace_symbols/{split}-{level}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=8000,
        runtime=120,
    params:
        alpha=config["replace"].get("partial_alpha", 0.5),
        protected=config["replace"].get("protected", ["P", "E", "V", "σ", "ρ"]),
        seed=SEED,
    script:
        "../scripts/replace_symbols.py"
