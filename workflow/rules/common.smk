# Shared definitions: config validation (once, before any job runs; it fills in every default),
# wildcard constraints, and the input functions that decide which runs the tables need. The
# wildcard values and the tables' cells are defined in proofmatch.experiments.
from proofmatch import experiments as X
from proofmatch.config import run_matching, validate_config
from proofmatch.data.corpus import corpus_folder_inputs, corpus_tables

validate_config(config)

SEED = config["seed"]
SHARDS = [f"{i:03d}" for i in range(config["corpus"]["n_shards"])]
SPLITS = X.configured_splits(config)
# Why a table part was not run (rendered in the table instead of numbers).
NOT_RUN = X.not_run(config)
# The runs fused with BM25 in the baselines table (config fusion.runs).
FUSION_RUNS = X.fusion_runs(config)
CONDA = "../../envs/proofmatch.yaml"


wildcard_constraints:
    shard=r"\d{3}",
    split=X.pattern(X.SPLITS),
    family=X.pattern(X.FAMILIES),
    level=X.pattern(X.ALL_LEVELS),
    test_level=X.pattern(X.ALL_LEVELS),
    encoder=X.pattern(X.ENCODERS),
    mode=X.pattern(X.MODES),
    view=X.pattern(X.VIEWS),
    part=X.pattern(X.PARTS),
    method=X.pattern(X.METHODS),
    n=r"\d",


def corpus_inputs(wildcards):
    """The corpus folder(s) and metadata table(s): the generated demo corpus, the corpus converted
    from LaTeX sources (latex.smk) or the configured folder(s)."""
    if config["corpus"]["source"] == "demo":
        return {
            "corpus": "results/demo_corpus/xhtml",
            "metadata": "results/demo_corpus/metadata.csv",
        }
    if config["corpus"]["source"] == "latex":
        return {
            "corpus": "results/latex/main/xhtml",
            "metadata": "results/latex/main/metadata.csv",
        }
    return corpus_folder_inputs(config["corpus"])


def manifest_tables(wildcards):
    """The metadata table of each configured corpus folder (proofmatch.data.corpus.corpus_tables)."""
    return corpus_tables(config["corpus"])


def train_inputs(wildcards):
    """ScratchBERT and SPECTER start from the family's ScratchBERT (tokenizer included); NPT builds
    its own vocabulary and MathBERT comes from matching.mathbert."""
    inputs = {"data": f"results/replaced/{wildcards.split}/{wildcards.level}.parquet"}
    if wildcards.encoder in X.PRETRAINED_ENCODERS:
        fam = X.family(wildcards.split)
        inputs["pretrained"] = f"results/models/scratchbert/{fam}"
    return inputs


def matching_params(wildcards):
    """The part of `matching` one run depends on (proofmatch.config.run_matching)."""
    return run_matching(config["matching"], wildcards.encoder)


def table_inputs(name):
    """The evaluation JSONs of table `name` (proofmatch.experiments): its rows not marked not run."""
    return [
        str(ev.path()) for ev in X.tables(fusion=FUSION_RUNS)[name].evaluations(NOT_RUN)
    ]
