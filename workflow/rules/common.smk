# Shared definitions: config validation (before any job runs), wildcard constraints, and the
# input functions that decide which runs the tables need.
from proofmatch.config import run_matching, schema_path, validate_config
from proofmatch.tables import TABLE6_TEST, TABLE6_TRAIN, eval_json
from snakemake.utils import validate

validate_config(config)
validate(config, schema=str(schema_path()))

SEED = config["seed"]
SHARDS = [f"{i:03d}" for i in range(config["corpus"]["n_shards"])]
LEVELS = ["conservation", "partial", "full", "trans"]
ENCODERS = ["npt", "scratchbert", "mathbert", "specter"]
MATHBERT = config["matching"].get("mathbert")
PR_CATEGORY = config["splits"].get("pr_category", "math.PR")
# The probability-domain split exists only when a category is configured (Table 6).
SPLITS = ["mixed", "unmixed"] + (["pr"] if PR_CATEGORY else [])
CONDA = "../../envs/proofmatch.yaml"


wildcard_constraints:
    shard=r"\d{3}",
    split="mixed|unmixed|pr",
    family="mixed|unmixed",
    level="conservation|partial|full|trans|partial_p|full_p",
    test_level="conservation|partial|full|trans|partial_p|full_p",
    encoder="npt|scratchbert|mathbert|specter",
    mode="local|hybrid|triplet",
    view="text|math|both",
    part="dev|test",
    method="tfidf|tfidf_paper|bm25",
    n=r"\d",


def corpus_inputs(wildcards):
    """The corpus folder and metadata table: the generated demo corpus, the corpus converted from
    LaTeX sources (latex.smk) or the configured folder."""
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
    inputs = {"corpus": config["corpus"]["dir"]}
    if config["corpus"].get("metadata"):
        inputs["metadata"] = config["corpus"]["metadata"]
    return inputs


def family(split):
    """Tokenizer and ScratchBERT come from the split family: pr reuses unmixed (its train part is a subset)."""
    return "mixed" if split == "mixed" else "unmixed"


def run_dir(split, encoder, mode, level, view):
    return f"results/runs/{split}/{encoder}-{mode}/{level}-{view}"


def modes(encoder):
    """Training modes per encoder: the bilinear models train locally and hybrid; SPECTER with triplets."""
    return ["triplet"] if encoder == "specter" else ["local", "hybrid"]


def enabled(encoder):
    return encoder != "mathbert" or bool(MATHBERT)


def train_inputs(wildcards):
    """ScratchBERT and SPECTER start from the family's ScratchBERT (tokenizer included); NPT builds
    its own vocabulary and MathBERT comes from matching.mathbert."""
    inputs = {"data": f"results/replaced/{wildcards.split}/{wildcards.level}.parquet"}
    if wildcards.encoder in ("scratchbert", "specter"):
        fam = family(wildcards.split)
        inputs["pretrained"] = f"results/models/scratchbert/{fam}/config.json"
    return inputs


def matching_params(wildcards):
    """The part of `matching` one run depends on (proofmatch.config.run_matching)."""
    return run_matching(config["matching"], wildcards.encoder)


# Each table input key names one evaluation as
# "<split>__<encoder>__<mode>__<train level>__<view>__<part>__<test level>"; proofmatch.tables parses it.
def key(split, encoder, mode, level, view, part, test_level):
    return "__".join([split, encoder, mode, level, view, part, test_level])


def evals(specs):
    """{key: eval JSON path} for (split, encoder, mode, level, view, part, test_level) specs."""
    return {key(*s): str(eval_json("results/eval", *s)) for s in specs}


def table3_inputs(wildcards):
    return evals(
        ("mixed", enc, mode, lvl, "both", "test", lvl)
        for enc in ENCODERS
        if enabled(enc)
        for mode in modes(enc)
        for lvl in LEVELS
    )


def table4_inputs(wildcards):
    return evals(
        (split, "scratchbert", "local", train, "both", "test", test)
        for split in ("mixed", "unmixed")
        for train in LEVELS
        for test in LEVELS
    )


def table5_inputs(wildcards):
    return evals(
        ("mixed", enc, "local", lvl, view, "test", lvl)
        for enc in ("npt", "scratchbert")
        for view in ("text", "math", "both")
        for lvl in ("conservation", "full")
    )


def table6_inputs(wildcards):
    """Paper §9.4: the five pr ScratchBERT-Local-Local models (one per training level), each
    tested on the two levels that keep the protected symbols (Conservation, Partial+P).
    """
    if not PR_CATEGORY:
        return {}
    return evals(
        ("pr", "scratchbert", "local", train, "both", "test", test)
        for train in TABLE6_TRAIN
        for test in TABLE6_TEST
    )


def table7_inputs(wildcards):
    return evals(
        [
            (
                "mixed",
                "scratchbert",
                "local",
                "conservation",
                "both",
                "dev",
                "conservation",
            )
        ]
    )


def baselines_inputs(wildcards):
    return evals(
        ("mixed", method, "none", lvl, "both", "test", lvl)
        for method in ("tfidf", "tfidf_paper", "bm25")
        for lvl in LEVELS
    )


# Why a table part was not run (rendered in the table instead of numbers).
NOT_RUN = {}
if not MATHBERT:
    NOT_RUN["mathbert"] = (
        "not run: no MathBERT checkpoint configured "
        "(set matching.mathbert to a local path or hub id)"
    )
if not PR_CATEGORY:
    NOT_RUN["pr"] = "not run: splits.pr_category is null (no probability-domain split)"
