# Shared definitions: config validation (once, before any job runs; it fills in every default),
# wildcard constraints, the run layout's patterns, and the input functions that decide which runs
# the tables need. The wildcard values, the run layout and the tables' cells are defined in
# proofmatch.experiments, which corpus feeds what (training, transfer and LaTeX corpora, their
# inputs and folders) in proofmatch.corpora.
from proofmatch import corpora as C
from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch import variants as V
from proofmatch.config import check_paths, run_matching, validate_config
from proofmatch.evaluation import intervals as INTERVALS
from proofmatch.evaluation import paper as PAPER
from proofmatch.evaluation import transfer
from proofmatch.registry.encoders import ENCODERS as ENCODER_SPECS
from proofmatch.registry.sources import SOURCES

validate_config(config)
# the corpus folders and the MathBERT path it names exist: checked before any job, not in one
check_paths(config)

SEED = config["seed"]
MAIN_CORPUS = C.main_corpus(config)
# Every corpus by its {corpus} wildcard: "" for the training corpus (results/extract/...), then
# transfer/NAME/ for each transfer corpus (results/transfer/NAME/extract/...): the corpus rules
# (manifest, extract, linearize, filter_pairs, baseline) serve them all.
CORPORA = C.all_corpora(config)
SPLITS = X.configured_splits(config)
# A source kind that enters after extraction (proofmatch.registry.sources: enters) brings what the
# stages from the manifest to the replaced splits would write: those rules serve only the corpora
# that enter as XHTML, and replaced_split only the splits the workflow makes itself.
XHTML_CORPUS = C.xhtml_wildcards(config)
MADE_SPLITS = (
    f"(?:{X.pattern(C.made_splits(config))})" if C.made_splits(config) else "(?!)"
)
# Why a table part was not run (rendered in the table instead of numbers).
NOT_RUN = X.not_run(config)
# The runs fused with BM25 in the baselines table (config fusion.runs).
FUSION_RUNS = X.fusion_runs(config)
# The search indexes rule all builds (config fusion.search_runs).
SEARCH_INDEXES = C.search_indexes(config)
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
    variant=V.PATTERN,
    # in a group: with the training corpus alone the pattern is "", which would mean no constraint
    corpus=f"(?:{X.pattern(CORPORA)})",


def run_pattern(
    root,
    model="{encoder}",
    mode="{mode}",
    view="{view}",
    variant="",
    suffix="",
    file="",
):
    """The run layout (proofmatch.experiments.run_path) with the rules' wildcards, under ``root``
    (runs, evaluations, indexes, logs, benchmarks): every rule's run paths. ``suffix`` ends the
    folder's name (a log's ``.log``), ``file`` names a file in the folder."""
    path = X.run_path("{split}", model, mode, "{level}", view, variant, root)
    return f"{path}{suffix}/{file}" if file else f"{path}{suffix}"


# A trained run's folder (model/, metrics.json, fusion.json), and a variant's beside it.
RUN = run_pattern(X.RUNS_ROOT)
VARIANT_RUN = run_pattern(X.RUNS_ROOT, variant="{variant}")
# The model name of a run fused with BM25 in evaluation paths (no encoder or method matches it).
FUSED = X.FUSION_JOIN.join(["{encoder}", X.FUSION_LEXICAL])
# A baseline's names in the run layout: its method as the model, mode none, both inputs.
BASELINE = {"model": "{method}", "mode": X.BASELINE_MODE, "view": "both"}


def train_inputs(wildcards):
    """ScratchBERT and SPECTER start from the family's ScratchBERT (tokenizer included); NPT builds
    its own vocabulary and MathBERT comes from matching.mathbert."""
    inputs = {"data": X.replaced_data(wildcards.split, wildcards.level)}
    if wildcards.encoder in X.PRETRAINED_ENCODERS:
        # pretrain.checkpoint (the released ScratchBERT), else the family's own
        inputs["pretrained"] = X.pretrained_folder(config, wildcards.split)
    key = ENCODER_SPECS[wildcards.encoder].checkpoint
    if key and Path(str(config["matching"][key])).is_dir():
        inputs["pretrained"] = config["matching"][
            key
        ]  # a local checkpoint (not a hub id)
    return inputs


def pretrain_inputs(wildcards):
    """The family's Conservation pairs (the dev part validates; under pretrain.text: pairs the
    train part is the MLM text) and tokenizer; under pretrain.text: corpus also the article text
    (every paragraph of the dataset's articles), which is then the MLM text."""
    inputs = {
        "data": X.replaced_data(wildcards.family, "conservation"),
        "tokenizer": f"{X.TOKENIZER_ROOT}/{wildcards.family}",
    }
    if config["pretrain"]["text"] == "corpus":
        inputs["text"] = "results/data/article_text.parquet"
    return inputs


# The pretrain block as the pretraining job's params; text is left out at its default (pairs), so
# the key changes no params of a run made before it existed (the input set says which text), and
# checkpoint always (with one, no pretraining job is planned).
PRETRAIN_PARAMS = {
    k: v
    for k, v in config["pretrain"].items()
    if not (k == "text" and v == "pairs") and k != "checkpoint"
}


def matching_params(wildcards):
    """The part of `matching` one run depends on (proofmatch.config.run_matching; with the
    decode settings only under hybrid_selection: global)."""
    return run_matching(config["matching"], wildcards.encoder, config["decode"])


def table_inputs(name):
    """What table `name` reads (proofmatch.result_tables), for its rows not marked not run: each
    trained run's evaluation folder, each baseline's JSON (X.workflow_inputs), and BM25 on the
    statements of each learned cell (the intervals of its difference: INTERVALS.with_references).
    """
    evaluations = RT.tables(fusion=FUSION_RUNS)[name].evaluations(NOT_RUN)
    return X.workflow_inputs(INTERVALS.with_references(evaluations))


def read_evaluations():
    """Every evaluation the results read under this config: Tables 3-7 and the baselines table,
    the comparison with the paper, and the transfer table's in-corpus cells (when it is made).
    """
    tables = [
        ev
        for t in RT.tables(fusion=FUSION_RUNS).values()
        for ev in t.evaluations(NOT_RUN)
    ]
    paper = PAPER.evaluations(PAPER.read_paper_cells(PAPER.PAPER_RESULTS), NOT_RUN)
    return [
        *tables,
        *paper,
        *transfer.in_corpus_evaluations(transfer.transfer_settings(config)),
    ]


# (part, test level) pairs of each trained run's (and fusion's) evaluation folder: what its one
# evaluate_run (fuse_run) job writes.
EVAL_PLAN = X.evaluation_plan(read_evaluations())


def evaluation_pairs(wildcards, fused):
    """The (part, test level) pairs of a run's evaluation folder (fused: of its fusion's)."""
    w = wildcards
    run = X.Run(w.split, w.encoder, w.mode, w.level, w.view)
    folder = (run.fusion if fused else run.evaluation)("test").folder()
    return [list(pair) for pair in X.folder_plan(EVAL_PLAN, folder, w.level)]


def evaluation_inputs(wildcards, fused=False):
    """The run's model and the replaced data of each test level its evaluation folder holds
    (fused: also of the run's own level, whose dev part chooses the weight λ)."""
    w = wildcards
    levels = [level for _, level in evaluation_pairs(w, fused)]
    if fused:
        levels.insert(0, w.level)
    run = X.Run(w.split, w.encoder, w.mode, w.level, w.view)
    return {
        "model": str(run.model()),
        "data": [X.replaced_data(w.split, level) for level in dict.fromkeys(levels)],
    }


# Variants of the headline runs (variants.smk, proofmatch.variants).
def variant_run(w):
    return X.Run(w.split, w.encoder, w.mode, w.level, w.view, w.variant)


def variant_train_inputs(w):
    inputs = train_inputs(w)
    inputs["data"] = V.train_data(w.split, w.level, w.variant)
    return inputs


def variant_eval_inputs(w):
    """The variant's model and the replaced data of its own level (its dev and test parts are the
    run's, whatever share of train it saw)."""
    return {
        "model": str(variant_run(w).model()),
        "data": [X.replaced_data(w.split, w.level)],
    }
