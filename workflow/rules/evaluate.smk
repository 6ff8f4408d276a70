# Encoding, scoring and decoding (local ranks, global assignment) of dev/test sets, and the baselines.
#
# One job per trained run writes the run's evaluation folder whole: every (part, test level) that a
# table reads (EVAL_PLAN, common.smk), the model loaded once. A demo evaluation is a fraction of a
# second of work after a Python and torch start of a second or more, and a run is evaluated at up
# to five parts and levels (docs/benchmarks.md, "Demo wall clock").


rule evaluate_run:
    input:
        unpack(evaluation_inputs),
    output:
        directory(run_pattern(X.EVAL_ROOT)),
    log:
        run_pattern("results/logs/evaluate_run", suffix=".log"),
    benchmark:
        run_pattern("results/benchmarks/evaluate_run", suffix=".tsv")
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=16000,
        runtime=240,
        gpu=1,
    params:
        evaluations=lambda w: evaluation_pairs(w, fused=False),
        topk=config["decode"]["topk"],
        exact_max_n=config["decode"]["exact_max_n"],
        seed=SEED,
    script:
        "../scripts/evaluate_run.py"


# On every corpus (the {corpus} wildcard, common.smk): fitted on the split's train part, scored on
# its test part or, for a transfer corpus, on the corpus's pool (proofmatch.corpora.Corpus.test_data).
rule baseline:
    input:
        data=lambda w: CORPORA[w.corpus].test_data(w.split, w.level),
    output:
        ranks=run_pattern(
            "results/{corpus}eval", **BASELINE, file="{part}-{level}.parquet"
        ),
        summary=run_pattern(
            "results/{corpus}eval", **BASELINE, file="{part}-{level}.json"
        ),
    log:
        "results/logs/{corpus}baseline/{split}/{method}/{part}-{level}.log",
    benchmark:
        "results/benchmarks/{corpus}baseline/{split}/{method}/{part}-{level}.tsv"
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


# A trained run fused with BM25 (this project's addition, proofmatch.evaluation.fused), one job per
# run: the weight λ is chosen on the run's dev part and written with the run (fusion.json, which the
# search index and the transfer pools read too); then each (part, test level) a table reads is
# scored with that λ and decoded like a model, into the fusion's evaluation folder.
rule fuse_run:
    input:
        unpack(lambda w: evaluation_inputs(w, fused=True)),
    output:
        weight=f"{RUN}/{X.FUSION_FILE}",
        evaluations=directory(run_pattern(X.EVAL_ROOT, model=FUSED)),
    log:
        run_pattern("results/logs/fuse_run", suffix=".log"),
    benchmark:
        run_pattern("results/benchmarks/fuse_run", suffix=".tsv")
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=16000,
        runtime=240,
        gpu=1,
    params:
        evaluations=lambda w: evaluation_pairs(w, fused=True),
        weights=config["fusion"]["weights"],
        normalize=config["fusion"]["normalize"],
        topk=config["decode"]["topk"],
        exact_max_n=config["decode"]["exact_max_n"],
        seed=SEED,
    script:
        "../scripts/fuse_run.py"
