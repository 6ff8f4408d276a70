# Encoding, scoring and decoding (local ranks, global assignment) of dev/test sets, and the baselines.


rule evaluate_run:
    input:
        model="results/runs/{split}/{encoder}-{mode}/{level}-{view}/model",
        data="results/replaced/{split}/{test_level}.parquet",
    output:
        ranks="results/eval/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.parquet",
        summary="results/eval/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.json",
    log:
        "results/logs/evaluate_run/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.log",
    benchmark:
        "results/benchmarks/evaluate_run/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.tsv"
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
        "../scripts/evaluate_run.py"


rule baseline:
    input:
        data="results/replaced/{split}/{level}.parquet",
    output:
        ranks="results/eval/{split}/{method}-none/{level}-both/{part}-{level}.parquet",
        summary="results/eval/{split}/{method}-none/{level}-both/{part}-{level}.json",
    log:
        "results/logs/baseline/{split}/{method}/{part}-{level}.log",
    benchmark:
        "results/benchmarks/baseline/{split}/{method}/{part}-{level}.tsv"
    conda:
        CONDA
    resources:
        mem_mb=16000,
        runtime=240,
    params:
        topk=config["decode"]["topk"],
        exact_max_n=config["decode"]["exact_max_n"],
        seed=SEED,
    script:
        "../scripts/baseline.py"


# A trained run fused with BM25 (this project's addition, proofmatch.evaluation.fused): the weight λ
# is chosen on the run's dev part and written with the run (fusion.json, which the search index
# reads too); an evaluation scores a part with that λ, decoded like a model.
rule fusion_weight:
    input:
        model="results/runs/{split}/{encoder}-{mode}/{level}-{view}/model",
        data="results/replaced/{split}/{level}.parquet",
    output:
        "results/runs/{split}/{encoder}-{mode}/{level}-{view}/fusion.json",
    log:
        "results/logs/fusion_weight/{split}/{encoder}-{mode}/{level}-{view}.log",
    benchmark:
        "results/benchmarks/fusion_weight/{split}/{encoder}-{mode}/{level}-{view}.tsv"
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=16000,
        runtime=240,
        gpu=1,
    params:
        weights=config["fusion"]["weights"],
        normalize=config["fusion"]["normalize"],
    script:
        "../scripts/fusion_weight.py"


rule fusion_evaluate:
    input:
        model="results/runs/{split}/{encoder}-{mode}/{level}-{view}/model",
        weight="results/runs/{split}/{encoder}-{mode}/{level}-{view}/fusion.json",
        data="results/replaced/{split}/{test_level}.parquet",
    output:
        ranks="results/eval/{split}/{encoder}+bm25-{mode}/{level}-{view}/{part}-{test_level}.parquet",
        summary="results/eval/{split}/{encoder}+bm25-{mode}/{level}-{view}/{part}-{test_level}.json",
    log:
        "results/logs/fusion_evaluate/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.log",
    benchmark:
        "results/benchmarks/fusion_evaluate/{split}/{encoder}-{mode}/{level}-{view}/{part}-{test_level}.tsv"
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
        "../scripts/fusion_evaluate.py"
