# Shared definitions: config validation (once, before any job runs; it fills in every default),
# wildcard constraints, and the input functions that decide which runs the tables need. The
# wildcard values and the tables' cells are defined in proofmatch.experiments, which corpus feeds
# what (training, transfer and LaTeX corpora, their inputs and folders) in proofmatch.corpora.
from proofmatch import corpora as C
from proofmatch import experiments as X
from proofmatch.config import run_matching, validate_config

validate_config(config)

SEED = config["seed"]
MAIN_CORPUS = C.main_corpus(config)
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
