# Search index of a trained run (`proofmatch index --fusion`): every proof of every part encoded
# once, with the proofs' BM25 weights and the run's fusion weight λ (chosen on its dev part,
# rule fuse_run), for `proofmatch search` and `proofmatch serve`; the index folder is the
# declared output, the run's model/ folder and fusion.json its inputs. `rule all` (and `snakemake -c2 search_demo`) builds the index of the
# demo corpus from its NPT run (proofmatch.corpora.SEARCH_INDEX).


rule search_index:
    input:
        model="results/runs/{split}/{encoder}-{mode}/{level}-{view}/model",
        run="results/runs/{split}/{encoder}-{mode}/{level}-{view}/metrics.json",
        fusion="results/runs/{split}/{encoder}-{mode}/{level}-{view}/fusion.json",
        data="results/replaced/{split}/{level}.parquet",
        pairs="results/data/pairs.parquet",
        articles="results/corpus/articles.parquet",
    output:
        directory("results/index/{split}/{encoder}-{mode}/{level}-{view}"),
    log:
        "results/logs/search_index/{split}/{encoder}-{mode}/{level}-{view}.log",
    benchmark:
        "results/benchmarks/search_index/{split}/{encoder}-{mode}/{level}-{view}.tsv"
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
        C.SEARCH_INDEX,
