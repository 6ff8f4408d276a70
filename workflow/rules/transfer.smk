# Cross-corpus transfer (config `transfer`): each further corpus goes through the same extraction,
# linearization and filters (the rules of corpus.smk and data.smk, reused with the same config); all
# its pairs form one test pool for the chosen trained runs and the baselines; results/tables/transfer.md
# sets them beside the in-corpus test numbers. (`transfer` is imported in common.smk.)
TRANSFER = transfer.transfer_settings(config)
TRANSFER_TARGETS = ["results/tables/transfer.md"] if TRANSFER["corpora"] else []


wildcard_constraints:
    tname=r"[A-Za-z][A-Za-z0-9_]*",


use rule manifest as transfer_manifest with:
    input:
        unpack(lambda w: C.transfer_corpus(config, w.tname).inputs()),
    output:
        manifest="results/transfer/{tname}/corpus/manifest.parquet",
        articles="results/transfer/{tname}/corpus/articles.parquet",
    log:
        "results/logs/transfer/{tname}/manifest.log",
    benchmark:
        "results/benchmarks/transfer/{tname}/manifest.tsv"
    params:
        n_shards=lambda w: C.transfer_corpus(config, w.tname).n_shards,
        tables=lambda w: C.transfer_corpus(config, w.tname).tables(),


use rule extract as transfer_extract with:
    input:
        manifest="results/transfer/{tname}/corpus/manifest.parquet",
    output:
        pairs="results/transfer/{tname}/extract/shard-{shard}.parquet",
        report="results/transfer/{tname}/extract/shard-{shard}.report.json",
    log:
        "results/logs/transfer/{tname}/extract/shard-{shard}.log",
    benchmark:
        "results/benchmarks/transfer/{tname}/extract/shard-{shard}.tsv"


use rule linearize as transfer_linearize with:
    input:
        pairs="results/transfer/{tname}/extract/shard-{shard}.parquet",
    output:
        pairs="results/transfer/{tname}/linearize/shard-{shard}.parquet",
    log:
        "results/logs/transfer/{tname}/linearize/shard-{shard}.log",
    benchmark:
        "results/benchmarks/transfer/{tname}/linearize/shard-{shard}.tsv"


use rule filter_pairs as transfer_filter_pairs with:
    input:
        shards=lambda w: C.transfer_corpus(config, w.tname).shard_files(
            "linearize", ".parquet"
        ),
        reports=lambda w: C.transfer_corpus(config, w.tname).shard_files(
            "extract", ".report.json"
        ),
    output:
        pairs="results/transfer/{tname}/data/pairs.parquet",
        audit="results/transfer/{tname}/data/filter_audit.parquet",
        report="results/transfer/{tname}/data/filter_report.json",
    log:
        "results/logs/transfer/{tname}/filter_pairs.log",
    benchmark:
        "results/benchmarks/transfer/{tname}/filter_pairs.tsv"


rule transfer_pool:
    input:
        pairs="results/transfer/{tname}/data/pairs.parquet",
        train=f"results/replaced/{{split}}/{transfer.LEVEL}.parquet",
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
        model="results/runs/{split}/{encoder}-{mode}/{level}-{view}/model",
        data="results/transfer/{tname}/pool/{split}/{test_level}.parquet",
    output:
        ranks="results/transfer/{tname}/eval/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.parquet",
        summary="results/transfer/{tname}/eval/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.json",
    log:
        "results/logs/transfer/{tname}/evaluate_run/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.log",
    benchmark:
        "results/benchmarks/transfer/{tname}/evaluate_run/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.tsv"
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


use rule baseline as transfer_baseline with:
    input:
        data="results/transfer/{tname}/pool/{split}/{level}.parquet",
    output:
        ranks="results/transfer/{tname}/eval/{split}/{method}-none/{level}-both/{part}-{level}.parquet",
        summary="results/transfer/{tname}/eval/{split}/{method}-none/{level}-both/{part}-{level}.json",
    log:
        "results/logs/transfer/{tname}/baseline/{split}/{method}/{part}-{level}.log",
    benchmark:
        "results/benchmarks/transfer/{tname}/baseline/{split}/{method}/{part}-{level}.tsv"


# A run fused with BM25 on a pool, at the λ chosen on the training corpus's dev part (fusion.json).
rule transfer_fusion_evaluate:
    input:
        model="results/runs/{split}/{encoder}-{mode}/{level}-{view}/model",
        weight="results/runs/{split}/{encoder}-{mode}/{level}-{view}/fusion.json",
        data="results/transfer/{tname}/pool/{split}/{test_level}.parquet",
    output:
        ranks="results/transfer/{tname}/eval/{split}/{encoder}+bm25-{mode}/{level}-{view}/{part}-{test_level}.parquet",
        summary="results/transfer/{tname}/eval/{split}/{encoder}+bm25-{mode}/{level}-{view}/{part}-{test_level}.json",
    log:
        "results/logs/transfer/{tname}/fusion_evaluate/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.log",
    benchmark:
        "results/benchmarks/transfer/{tname}/fusion_evaluate/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.tsv"
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
        md=report(
            "results/tables/transfer.md",
            caption="../report/table.rst",
            category="Tables",
        ),
        tex="results/tables/transfer.tex",
        csv="results/tables/transfer.csv",
    log:
        "results/logs/transfer_table.log",
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
