# Tokenizer, ScratchBERT MLM pretraining, and the matching models (§6-§8).


rule train_tokenizer:
    input:
        data="results/replaced/{family}/conservation.parquet",
    output:
        "results/models/tokenizer/{family}/tokenizer.json",
    log:
        "results/logs/train_tokenizer/{family}.log",
    benchmark:
        "results/benchmarks/train_tokenizer/{family}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        vocab_size=config["tokenizer"]["vocab_size"],
        min_frequency=config["tokenizer"]["min_frequency"],
    script:
        "../scripts/train_tokenizer.py"


rule pretrain_scratchbert:
    input:
        data="results/replaced/{family}/conservation.parquet",
        tokenizer="results/models/tokenizer/{family}/tokenizer.json",
    output:
        "results/models/scratchbert/{family}/config.json",
    log:
        "results/logs/pretrain_scratchbert/{family}.log",
    benchmark:
        "results/benchmarks/pretrain_scratchbert/{family}.tsv"
    conda:
        CONDA
    threads: 2
    resources:
        mem_mb=16000,
        runtime=4320,
        gpu=1,
    params:
        pretrain=config["pretrain"],
        seed=SEED,
    script:
        "../scripts/pretrain_scratchbert.py"


rule train_matcher:
    input:
        unpack(train_inputs),
    output:
        "results/runs/{split}/{encoder}-{mode}/{level}-{view}/metrics.json",
        curve=report(
            "results/runs/{split}/{encoder}-{mode}/{level}-{view}/curve.png",
            caption="../report/curve.rst",
            category="Training curves",
            subcategory="{split}",
            labels={
                "run": "{encoder}-{mode}",
                "level": "{level}",
                "view": "{view}",
            },
        ),
    log:
        "results/logs/train_matcher/{split}/{encoder}-{mode}/{level}-{view}.log",
    benchmark:
        "results/benchmarks/train_matcher/{split}/{encoder}-{mode}/{level}-{view}.tsv"
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=16000,
        runtime=2880,
        gpu=1,
    params:
        matching=matching_params,
        seed=SEED,
    script:
        "../scripts/train_matcher.py"
