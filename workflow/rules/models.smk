# Tokenizer, ScratchBERT MLM pretraining, and the matching models (§6-§8). Each model is a
# declared output folder (directory()), and every rule that uses one names that folder as input.
# Resume state is never an output: a training run keeps it in its run folder's checkpoint/,
# pretraining in results/models/scratchbert/{family}.checkpoint/, and a finished job removes it.
# `rule all` names every model folder the results read (MODEL_TARGETS): Snakemake replans a
# missing file only when a target needs it, so a deleted model is retrained, with all it feeds.
MODEL_TARGETS = X.model_folders(
    (
        ev
        for table in RT.tables(fusion=FUSION_RUNS).values()
        for ev in table.evaluations(NOT_RUN)
    ),
    [*X.FIGURE2_RUNS.values(), *X.search_runs(config)],
    pretrains=not config["pretrain"]["checkpoint"],
)


rule train_tokenizer:
    input:
        data=X.replaced_data("{family}", "conservation"),
    output:
        directory(f"{X.TOKENIZER_ROOT}/{{family}}"),
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
        unpack(pretrain_inputs),
    output:
        directory(f"{X.SCRATCHBERT_ROOT}/{{family}}"),
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
        pretrain=PRETRAIN_PARAMS,
        seed=SEED,
    script:
        "../scripts/pretrain_scratchbert.py"


rule train_matcher:
    input:
        unpack(train_inputs),
    output:
        f"{RUN}/metrics.json",
        model=directory(f"{RUN}/model"),
        history=f"{RUN}/metrics.csv",
        curve=report(
            f"{RUN}/curve.png",
            caption="../report/curve.rst",
            category="Training curves",
            subcategory="{split}",
            labels={
                "run": X.run_name("{encoder}", "{mode}"),
                "level": "{level}",
                "view": "{view}",
            },
        ),
    log:
        run_pattern("results/logs/train_matcher", suffix=".log"),
    benchmark:
        run_pattern("results/benchmarks/train_matcher", suffix=".tsv")
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
