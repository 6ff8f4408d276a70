# Cross-corpus transfer (config `transfer`): each further corpus goes through the same extraction,
# linearization and filters (the rules of corpus.smk and data.smk, whose {corpus} wildcard is
# transfer/NAME/ for it: common.smk, CORPORA); all its pairs form one test pool for the chosen
# trained runs and the baselines (rule baseline, on the pool); results/tables/transfer.md sets them
# beside the in-corpus test numbers. (`transfer` is imported in common.smk.)
TRANSFER = transfer.transfer_settings(config)
TRANSFER_TARGETS = ["results/tables/transfer.md"] if TRANSFER["corpora"] else []


wildcard_constraints:
    tname=r"[A-Za-z][A-Za-z0-9_]*",


rule transfer_pool:
    input:
        pairs="results/transfer/{tname}/data/pairs.parquet",
        train=X.replaced_data("{split}", transfer.LEVEL),
    output:
        data=f"results/transfer/{{tname}}/pool/{{split}}/{transfer.LEVEL}.parquet",
        info=f"results/transfer/{{tname}}/pool/{{split}}/{transfer.LEVEL}.json",
    log:
        "results/logs/transfer/{tname}/pool/{split}.log",
    conda:
        CONDA
    resources:
        mem_mb=8000,
        runtime=120,
    script:
        "../scripts/transfer_pool.py"


# A trained run on a pool: one file a job (a run has one pool per corpus).
rule transfer_evaluate_run:
    input:
        model=f"{RUN}/model",
        data="results/transfer/{tname}/pool/{split}/{test_level}.parquet",
    output:
        ranks=run_pattern(
            "results/transfer/{tname}/eval", file="{part}-{test_level}.parquet"
        ),
        summary=run_pattern(
            "results/transfer/{tname}/eval", file="{part}-{test_level}.json"
        ),
    log:
        run_pattern(
            "results/logs/transfer/{tname}/evaluate_run",
            file="{part}-{test_level}.log",
        ),
    benchmark:
        run_pattern(
            "results/benchmarks/transfer/{tname}/evaluate_run",
            file="{part}-{test_level}.tsv",
        )
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=16000,
        runtime=240,
        gpu=1,
    params:
        topk=config["decode"]["topk"],
        exact_max_n=config["decode"]["exact_max_n"],
        seed=SEED,
    script:
        "../scripts/transfer_evaluate_run.py"


# A run fused with BM25 on a pool, at the λ chosen on the training corpus's dev part (fusion.json).
rule transfer_fusion_evaluate:
    input:
        model=f"{RUN}/model",
        weight=f"{RUN}/{X.FUSION_FILE}",
        data="results/transfer/{tname}/pool/{split}/{test_level}.parquet",
    output:
        ranks=run_pattern(
            "results/transfer/{tname}/eval",
            model=FUSED,
            file="{part}-{test_level}.parquet",
        ),
        summary=run_pattern(
            "results/transfer/{tname}/eval",
            model=FUSED,
            file="{part}-{test_level}.json",
        ),
    log:
        run_pattern(
            "results/logs/transfer/{tname}/fusion_evaluate",
            file="{part}-{test_level}.log",
        ),
    benchmark:
        run_pattern(
            "results/benchmarks/transfer/{tname}/fusion_evaluate",
            file="{part}-{test_level}.tsv",
        )
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=16000,
        runtime=240,
        gpu=1,
    params:
        topk=config["decode"]["topk"],
        exact_max_n=config["decode"]["exact_max_n"],
        seed=SEED,
    script:
        "../scripts/transfer_fusion_evaluate.py"


rule transfer_table:
    input:
        lambda w: transfer.table_inputs(TRANSFER),
    output:
        md="results/tables/transfer.md",
        tex="results/tables/transfer.tex",
        csv="results/tables/transfer.csv",
    log:
        "results/logs/transfer_table.log",
    benchmark:
        "results/benchmarks/transfer_table.tsv"
    conda:
        CONDA
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        settings=TRANSFER,
        # the report's caption (a function: no {wildcard} expansion); the .md adds the pools
        caption=lambda w: transfer.table_caption(TRANSFER["split"]),
    script:
        "../scripts/transfer_table.py"
