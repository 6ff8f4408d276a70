# LaTeX sources -> XHTML+MathML corpus with LaTeXML (corpus.source: latex, or a transfer corpus with
# source: latex): inventory (ids, content hashes, shards), conversion per shard with a per-article
# cache, the assembled corpus folder + metadata + report, and the conversion table.
# Which corpora are LaTeX corpora, their inputs and folders: proofmatch.corpora.
from proofmatch.data import latex, latex_inventory

LATEX_CORPORA = C.source_corpora(config, "latex")
# The latex source's folder of each corpus (results/latex/{lcorpus}), from its registry entry.
LATEX = SOURCES["latex"].root("{lcorpus}")
LATEX_TARGETS = ["results/tables/conversion.md"] if LATEX_CORPORA else []


wildcard_constraints:
    lcorpus=r"[A-Za-z][A-Za-z0-9_]*",


rule latex_inventory:
    input:
        unpack(
            lambda w: C.source_corpus(config, "latex", w.lcorpus).latex_inputs(
                "inventory"
            )
        ),
    output:
        f"{LATEX}/inventory.parquet",
    log:
        "results/logs/latex/{lcorpus}/inventory.log",
    conda:
        CONDA
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        # Any added, edited or removed source file reruns the inventory; the conversion cache then
        # converts only the new or changed articles.
        fingerprint=lambda w: latex_inventory.source_fingerprint(
            C.source_corpus(config, "latex", w.lcorpus).entry["dir"]
        ),
        n_shards=lambda w: C.source_corpus(config, "latex", w.lcorpus).latex_shards,
    script:
        "../scripts/convert_latex.py"


rule convert_latex:
    input:
        inventory=f"{LATEX}/inventory.parquet",
    output:
        f"{LATEX}/shards/shard-{{shard}}.json",
    log:
        "results/logs/latex/{lcorpus}/shard-{shard}.log",
    benchmark:
        "results/benchmarks/latex/{lcorpus}/shard-{shard}.tsv"
    conda:
        CONDA
    threads: 1
    resources:
        mem_mb=4000,
        runtime=2880,
    params:
        limits=lambda w: C.source_corpus(config, "latex", w.lcorpus).entry["latex"],
    script:
        "../scripts/convert_latex.py"


rule latex_corpus:
    input:
        unpack(
            lambda w: C.source_corpus(config, "latex", w.lcorpus).latex_inputs(
                "corpus"
            )
        ),
    output:
        xhtml=directory(f"{LATEX}/xhtml"),
        metadata=f"{LATEX}/metadata.csv",
        report=f"{LATEX}/report.json",
    log:
        "results/logs/latex/{lcorpus}/corpus.log",
    conda:
        CONDA
    resources:
        mem_mb=2000,
        runtime=30,
    script:
        "../scripts/convert_latex.py"


rule conversion_table:
    input:
        unpack(lambda w: C.conversion_reports(config)),
    output:
        md="results/tables/conversion.md",
        tex="results/tables/conversion.tex",
        csv="results/tables/conversion.csv",
    log:
        "results/logs/conversion_table.log",
    conda:
        CONDA
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        # the report's caption, the .md's too (a function: no {wildcard} expansion of its text)
        caption=lambda w: latex.CONVERSION_CAPTION,
    script:
        "../scripts/convert_latex.py"
