# Variants of the headline runs (proofmatch.variants): the same run trained with another seed
# (report.seeds) or on a share of its train part (report.fractions), each in a folder beside the
# run, {level}-{view}-{variant}. They reuse the run's rules; only the data, the seed and the paths
# change.


rule subsample_train:
    input:
        data="results/replaced/{split}/{level}.parquet",
    output:
        "results/scaling/{split}/{level}-{variant}.parquet",
    log:
        "results/logs/subsample_train/{split}/{level}-{variant}.log",
    conda:
        CONDA
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        fraction=lambda w: V.variant_fraction(w.variant),
        seed=SEED,
    script:
        "../scripts/subsample_train.py"


use rule train_matcher as train_variant with:
    input:
        unpack(variant_train_inputs),
    output:
        "results/runs/{split}/{encoder}-{mode}/{level}-{view}-{variant}/metrics.json",
        model=directory(
            "results/runs/{split}/{encoder}-{mode}/{level}-{view}-{variant}/model"
        ),
        history="results/runs/{split}/{encoder}-{mode}/{level}-{view}-{variant}/metrics.csv",
        curve=report(
            "results/runs/{split}/{encoder}-{mode}/{level}-{view}-{variant}/curve.png",
            caption="../report/curve.rst",
            category="Training curves",
            subcategory="{split}",
            labels={
                "run": "{encoder}-{mode}",
                "level": "{level}",
                "view": "{view}-{variant}",
            },
        ),
    log:
        "results/logs/train_matcher/{split}/{encoder}-{mode}/{level}-{view}-{variant}.log",
    benchmark:
        "results/benchmarks/train_matcher/{split}/{encoder}-{mode}/{level}-{view}-{variant}.tsv"
    resources:
        mem_mb=16000,
        runtime=2880,
        gpu=1,
    params:
        matching=matching_params,
        seed=lambda w: V.variant_seed(w.variant, SEED),


use rule evaluate_run as evaluate_variant with:
    input:
        unpack(variant_eval_inputs),
    output:
        directory("results/eval/{split}/{encoder}-{mode}/{level}-{view}-{variant}"),
    log:
        "results/logs/evaluate_run/{split}/{encoder}-{mode}/{level}-{view}-{variant}.log",
    benchmark:
        "results/benchmarks/evaluate_run/{split}/{encoder}-{mode}/{level}-{view}-{variant}.tsv"
    resources:
        mem_mb=16000,
        runtime=240,
        gpu=1,
    params:
        evaluations=lambda w: [["test", w.level]],
        topk=config["decode"]["topk"],
        exact_max_n=config["decode"]["exact_max_n"],
        seed=SEED,


use rule fuse_run as fuse_variant with:
    input:
        unpack(variant_eval_inputs),
    output:
        weight="results/runs/{split}/{encoder}-{mode}/{level}-{view}-{variant}/fusion.json",
        evaluations=directory(
            "results/eval/{split}/{encoder}+bm25-{mode}/{level}-{view}-{variant}"
        ),
    log:
        "results/logs/fuse_run/{split}/{encoder}-{mode}/{level}-{view}-{variant}.log",
    benchmark:
        "results/benchmarks/fuse_run/{split}/{encoder}-{mode}/{level}-{view}-{variant}.tsv"
    resources:
        mem_mb=16000,
        runtime=240,
        gpu=1,
    params:
        evaluations=lambda w: [["test", w.level]],
        weights=config["fusion"]["weights"],
        normalize=config["fusion"]["normalize"],
        topk=config["decode"]["topk"],
        exact_max_n=config["decode"]["exact_max_n"],
        seed=SEED,


use rule baseline as baseline_variant with:
    input:
        data=lambda w: V.train_data(w.split, w.level, w.variant),
    output:
        ranks="results/eval/{split}/{method}-none/{level}-both-{variant}/{part}-{level}.parquet",
        summary="results/eval/{split}/{method}-none/{level}-both-{variant}/{part}-{level}.json",
    log:
        "results/logs/baseline/{split}/{method}/{part}-{level}-{variant}.log",
    benchmark:
        "results/benchmarks/baseline/{split}/{method}/{part}-{level}-{variant}.tsv"
