# Variants of the headline runs (proofmatch.variants): the same run trained with another seed
# (report.seeds) or on a share of its train part (report.fractions), each in a folder beside the
# run, {level}-{view}-{variant}. They reuse the run's rules; only the data, the seed and the paths
# change.


rule subsample_train:
    input:
        data=X.replaced_data("{split}", "{level}"),
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
        f"{VARIANT_RUN}/metrics.json",
        model=directory(f"{VARIANT_RUN}/model"),
        history=f"{VARIANT_RUN}/metrics.csv",
        curve=report(
            f"{VARIANT_RUN}/curve.png",
            caption="../report/curve.rst",
            category="Training curves",
            subcategory="{split}",
            labels={
                "run": X.run_name("{encoder}", "{mode}"),
                "level": "{level}",
                "view": "{view}-{variant}",
            },
        ),
    log:
        run_pattern("results/logs/train_matcher", variant="{variant}", suffix=".log"),
    benchmark:
        run_pattern(
            "results/benchmarks/train_matcher", variant="{variant}", suffix=".tsv"
        )
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
        directory(run_pattern(X.EVAL_ROOT, variant="{variant}")),
    log:
        run_pattern("results/logs/evaluate_run", variant="{variant}", suffix=".log"),
    benchmark:
        run_pattern(
            "results/benchmarks/evaluate_run", variant="{variant}", suffix=".tsv"
        )
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
        weight=f"{VARIANT_RUN}/{X.FUSION_FILE}",
        evaluations=directory(
            run_pattern(X.EVAL_ROOT, model=FUSED, variant="{variant}")
        ),
    log:
        run_pattern("results/logs/fuse_run", variant="{variant}", suffix=".log"),
    benchmark:
        run_pattern("results/benchmarks/fuse_run", variant="{variant}", suffix=".tsv")
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
        ranks=run_pattern(
            X.EVAL_ROOT,
            **BASELINE,
            variant="{variant}",
            file="{part}-{level}.parquet",
        ),
        summary=run_pattern(
            X.EVAL_ROOT, **BASELINE, variant="{variant}", file="{part}-{level}.json"
        ),
    log:
        "results/logs/baseline/{split}/{method}/{part}-{level}-{variant}.log",
    benchmark:
        "results/benchmarks/baseline/{split}/{method}/{part}-{level}-{variant}.tsv"
