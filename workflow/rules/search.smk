# Search index of a trained run (`proofmatch index --fusion`): every proof of every part encoded
# once, with the proofs' BM25 weights and the run's fusion weight λ (chosen on its dev part,
# rule fuse_run), for `proofmatch search` and `proofmatch serve`; the index folder is the
# declared output, the run's model/ folder and fusion.json its inputs. `rule all` (and `snakemake -c2
# search_demo`) builds the index of each of fusion.search_runs (proofmatch.corpora.search_indexes;
# the demo: its NPT run).


rule search_index:
    input:
        model=f"{RUN}/model",
        run=f"{RUN}/metrics.json",
        fusion=f"{RUN}/{X.FUSION_FILE}",
        data=X.replaced_data("{split}", "{level}"),
        pairs="results/data/pairs.parquet",
        articles="results/corpus/articles.parquet",
    output:
        directory(run_pattern(C.INDEX_ROOT)),
    log:
        run_pattern("results/logs/search_index", suffix=".log"),
    benchmark:
        run_pattern("results/benchmarks/search_index", suffix=".tsv")
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=16000,
        runtime=240,
    params:
        seed=SEED,
    script:
        "../scripts/build_index.py"


rule search_demo:
    input:
        SEARCH_INDEXES,
