"""The experiments: every wildcard value of the workflow, and the runs and evaluations they name.

One definition, read by the workflow (workflow/rules/common.smk), the result tables
(:mod:`proofmatch.result_tables`: which :class:`Evaluation` fills each cell), the table renderer
(:mod:`proofmatch.evaluation.tables`) and the transfer table. Pure Python, no torch or pandas:
the Snakefile imports it before any job runs.

Paths (docs/architecture.md): a run in ``results/runs/{split}/{encoder}-{mode}/{level}-{view}/``, its
evaluations in ``results/eval/`` under the same names (a baseline: mode ``none``, view ``both``; a run
fused with BM25, this project's addition: model ``{encoder}+bm25``, its weight in the run's fusion.json).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proofmatch.registry.checks import one_of
from proofmatch.registry.encoders import ENCODERS as ENCODER_SPECS
from proofmatch.registry.encoders import checkpoint_label, split_run_name

# ----------------------------------------------------------------------------- wildcard values

# The encoders and how each trains: the registry's (proofmatch.registry.encoders), in table order.
ENCODERS = tuple(ENCODER_SPECS)
ENCODER_MODES: dict[str, tuple[str, ...]] = {s.name: s.modes for s in ENCODER_SPECS.values()}
MODES = tuple(dict.fromkeys(m for modes in ENCODER_MODES.values() for m in modes))
# Symbol replacement levels (§5): LEVELS are the four of Tables 3-5; the *_p levels keep the
# protected symbols (§9.4, Table 6); ALL_LEVELS is every level a pair can be replaced at.
LEVELS = ("conservation", "partial", "full", "trans")
PROTECTED_LEVELS = ("partial_p", "full_p")
ALL_LEVELS = LEVELS + PROTECTED_LEVELS
VIEWS = ("text", "math", "both")  # the model's input: text tokens, math tokens or both (Table 5)
SPLITS = ("mixed", "unmixed", "pr")
FAMILIES = SPLITS[:2]  # tokenizer and ScratchBERT are trained per family; pr belongs to unmixed
PARTS = ("dev", "test")  # the evaluated parts (train is only trained on)
METHODS = ("tfidf", "tfidf_paper", "bm25")  # baselines
BASELINE_MODE = "none"  # a baseline's mode in its evaluation path
DECODINGS = ("local", "global")  # local: rank every proof (MRR, Acc); global: assignment (Acc)
# Fusion (this project's addition): a trained run's scores + λ · BM25's, evaluated under the model
# name "{encoder}+bm25"; λ is chosen on the run's dev part and stored in the run's fusion.json.
FUSION_LEXICAL = "bm25"
FUSION_JOIN = "+"
FUSION_FILE = "fusion.json"
FUSION_RUNS = (("npt", "local"), ("scratchbert", "local"))  # config fusion.runs' default
PRETRAINED_ENCODERS = tuple(s.name for s in ENCODER_SPECS.values() if s.from_scratchbert)

EVAL_ROOT = "results/eval"
RUNS_ROOT = "results/runs"
TOKENIZER_ROOT = "results/models/tokenizer"  # one folder per family
SCRATCHBERT_ROOT = "results/models/scratchbert"

LEVEL_NAMES = {
    "conservation": "Conservation",
    "partial": "Partial",
    "full": "Full",
    "trans": "Transposition",
    "partial_p": "Partial+P",
    "full_p": "Full+P",
}
ENCODER_NAMES = {s.name: s.label for s in ENCODER_SPECS.values()}
MODE_NAMES = {
    "local": "Local",
    "hybrid": "Global",
    "zeroshot": "ZeroShot",  # a pretrained checkpoint untrained, and a head on its frozen vectors
    "frozen": "Frozen",
    "triplet": "Triplet",
}
DECODING_NAMES = {"local": "Local", "global": "Global"}
VIEW_NAMES = {"text": "Text", "math": "Math", "both": "Both"}
SPLIT_NAMES = {"mixed": "Mixed", "unmixed": "Unmixed", "pr": "Probability (Unmixed)"}
METHOD_NAMES = {"tfidf": "TF-IDF", "tfidf_paper": "TF-IDF (reference code)", "bm25": "BM25"}


def replaced_data(split: str, level: str) -> str:
    """A split's pairs at a replacement level (the data a run trains on and is evaluated on)."""
    return f"results/replaced/{split}/{level}.parquet"


def run_leaf(level: str, view: str, variant: str = "") -> str:
    """The last folder of a run's (and its evaluations') path: ``{level}-{view}[-{variant}]``."""
    return f"{level}-{view}-{variant}" if variant else f"{level}-{view}"


def run_name(model: str, mode: str) -> str:
    """A run's middle folder, ``{model}-{mode}``: also how the config names a run (``npt-local``)."""
    return f"{model}-{mode}"


def run_path(
    split: str,
    model: str,
    mode: str,
    level: str,
    view: str,
    variant: str = "",
    root: str | Path = RUNS_ROOT,
) -> str:
    """``{root}/{split}/{model}-{mode}/{level}-{view}[-{variant}]``: the one spelling of the run
    layout, for a run's folder (``root`` results/runs), its evaluations' (results/eval; ``model``
    may be a fusion or a baseline method, mode ``none``), its search index, logs and benchmarks.
    Called with wildcard names (``"{split}"``, ``"{encoder}"``, ...) it is the pattern a rule
    declares (workflow/rules/common.smk, ``run_pattern``), so the rules and :class:`Run` agree."""
    return f"{root}/{split}/{run_name(model, mode)}/{run_leaf(level, view, variant)}"


def pattern(values: Iterable[str]) -> str:
    """A wildcard constraint matching exactly ``values``."""
    return "|".join(map(re.escape, values))


def family(split: str) -> str:
    """The family whose tokenizer and ScratchBERT a split's runs use: pr reuses unmixed (its
    train part is a subset of Unmixed train)."""
    return "mixed" if split == "mixed" else "unmixed"


def configured_splits(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The splits made: the families of ``splits.families``, and the probability-domain split
    (part of Unmixed) only when a category is configured and Unmixed is made."""
    families = config["splits"]["families"]
    pr = bool(config["splits"]["pr_category"]) and "unmixed" in families
    return tuple(s for s in SPLITS if s in families or (s == "pr" and pr))


def fusion_model(encoder: str) -> str:
    """The model name of ``encoder``'s runs fused with BM25 (``npt+bm25``)."""
    return f"{one_of('encoder', encoder, ENCODERS)}{FUSION_JOIN}{FUSION_LEXICAL}"


def learned_encoder(model: str) -> str | None:
    """The encoder of an evaluation's model name: itself, the learned half of a fusion, or None
    for a baseline."""
    encoder = model.removesuffix(FUSION_JOIN + FUSION_LEXICAL)
    return encoder if encoder in ENCODERS else None


def is_fusion(model: str) -> bool:
    return model.endswith(FUSION_JOIN + FUSION_LEXICAL) and learned_encoder(model) is not None


def model_label(model: str, mode: str, decoding: str) -> str:
    """A table row's model: ``NPT-Local-Global`` (encoder, training, decoding), ``BM25-Local``, or
    a fusion, marked as this project's: ``NPT-Local + BM25-Local (fusion, this project)``."""
    if mode == BASELINE_MODE:
        return f"{METHOD_NAMES[model]}-{DECODING_NAMES[decoding]}"
    if is_fusion(model):
        encoder = learned_encoder(model)
        return (
            f"{ENCODER_NAMES[encoder]}-{MODE_NAMES[mode]} + {METHOD_NAMES[FUSION_LEXICAL]}-"
            f"{DECODING_NAMES[decoding]} (fusion, this project)"
        )
    return f"{ENCODER_NAMES[model]}-{MODE_NAMES[mode]}-{DECODING_NAMES[decoding]}"


def fusion_runs(config: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The validated config's ``fusion.runs`` as (encoder, mode) pairs (the schema's
    "encoder-mode" names): the learned halves of the baselines table's fusion rows."""
    return tuple(split_run_name(r) for r in config["fusion"]["runs"])


# ----------------------------------------------------------------------------- not run


def not_run_checkpoint(encoder: str) -> str:
    """Why the runs of ``encoder``, which starts from a configured checkpoint, are not run."""
    key = ENCODER_SPECS[encoder].checkpoint
    return (
        f"not run: no {checkpoint_label(key)} checkpoint configured "
        f"(set matching.{key} to a local path or hub id)"
    )


NOT_RUN_MATHBERT = not_run_checkpoint("mathbert")
NOT_RUN_PR = "not run: splits.pr_category is null (no probability-domain split)"
NOT_RUN_UNMIXED = (
    "not run: splits.families leaves out the Unmixed split (a corpus too small to cut by article)"
)
NOT_RUN_PR_UNMIXED = "not run: splits.families leaves out the Unmixed split, of which pr is part"


def not_run(config: Mapping[str, Any]) -> dict[str, str]:
    """Why parts of the tables are not run under ``config``, keyed by the encoder, the
    (encoder, mode) run (``report.leave_out``) or the split left
    out (a row whose :attr:`proofmatch.result_tables.Row.keys` hold one of them shows the reason instead of numbers)."""
    reasons = {}
    for spec in ENCODER_SPECS.values():
        if spec.checkpoint and not config["matching"][spec.checkpoint]:
            reasons[spec.name] = not_run_checkpoint(spec.name)
    for name in config["report"]["leave_out"]:
        reasons[split_run_name(name)] = f"not run: report.leave_out names {name}"
    if "unmixed" not in config["splits"]["families"]:
        reasons["unmixed"] = NOT_RUN_UNMIXED
        reasons["pr"] = NOT_RUN_PR_UNMIXED
    if not config["splits"]["pr_category"]:
        reasons["pr"] = NOT_RUN_PR
    return reasons


def note(reason: str) -> str:
    """A reason as a table note: always ``not run: ...``."""
    return reason if reason.startswith("not run") else f"not run: {reason}"


def no_result(path: str | Path) -> str:
    """The note of a row whose result file does not exist (``proofmatch tables --allow-missing``)."""
    return note(f"no result ({Path(path).name} missing)")


# ----------------------------------------------------------------------------- runs and evaluations


@dataclass(frozen=True)
class Run:
    """One trained model: ``encoder`` trained in ``mode`` on ``split`` at ``level`` with input ``view``
    (its spec and paths; the live state of a run in training is :class:`proofmatch.models.train.Training`)."""

    split: str
    encoder: str
    mode: str
    level: str
    view: str = "both"
    variant: str = (
        ""  # "" (the tables' run), seed14 (another seed), frac0.25 (a train share): variants.py
    )

    def dir(self, root: str | Path = RUNS_ROOT) -> Path:
        w = self
        return Path(run_path(w.split, w.encoder, w.mode, w.level, w.view, w.variant, root))

    def model(self, root: str | Path = RUNS_ROOT) -> Path:
        """The run's best model, the folder every rule that uses the trained model names as input."""
        return self.dir(root) / "model"

    def data(self) -> str:
        """The symbol-replaced split it is trained on."""
        return replaced_data(self.split, self.level)

    def evaluation(self, part: str, test_level: str | None = None) -> Evaluation:
        return Evaluation(
            self.split,
            self.encoder,
            self.mode,
            self.level,
            self.view,
            part,
            test_level or self.level,
            self.variant,
        )

    def fusion_json(self, root: str | Path = RUNS_ROOT) -> Path:
        """The fusion weight chosen on the run's dev part (``fusion.json``, beside ``model/``)."""
        return self.dir(root) / FUSION_FILE

    def fusion(self, part: str, test_level: str | None = None) -> Evaluation:
        """The run fused with BM25 (its stored weight), scored on ``part`` at ``test_level``."""
        return Evaluation(
            self.split,
            fusion_model(self.encoder),
            self.mode,
            self.level,
            self.view,
            part,
            test_level or self.level,
            self.variant,
        )


@dataclass(frozen=True)
class Evaluation:
    """One evaluation JSON: ``model`` (an encoder, or a baseline method with mode ``none``) trained
    on ``split`` at ``level`` with input ``view``, scored on ``part`` at ``test_level``."""

    split: str
    model: str
    mode: str
    level: str
    view: str
    part: str
    test_level: str
    variant: str = ""

    def path(self, root: str | Path = EVAL_ROOT) -> Path:
        return self.folder(root) / f"{self.part}-{self.test_level}.json"

    def folder(self, root: str | Path = EVAL_ROOT) -> Path:
        """The folder of every evaluation of the same model (a run, its fusion, or a baseline)."""
        w = self
        return Path(run_path(w.split, w.model, w.mode, w.level, w.view, w.variant, root))

    @property
    def fused(self) -> bool:
        """A trained run fused with BM25 (model ``{encoder}+bm25``)."""
        return is_fusion(self.model)

    def run(self) -> Run | None:
        """The trained run behind the evaluation (a fusion's learned half); None for a baseline."""
        encoder = learned_encoder(self.model)
        if self.mode == BASELINE_MODE or encoder is None:
            return None
        return Run(self.split, encoder, self.mode, self.level, self.view, self.variant)


def pretrained_folder(config: Mapping[str, Any], split: str) -> str:
    """The BERT checkpoint ``split``'s ScratchBERT and SPECTER-style runs start from: the
    configured ``pretrain.checkpoint`` (the released ScratchBERT), else the family's ScratchBERT
    pretrained by the workflow."""
    given = (config.get("pretrain") or {}).get("checkpoint")
    return str(given) if given else f"{SCRATCHBERT_ROOT}/{family(split)}"


def model_folders(
    evaluations: Iterable[Evaluation], runs: Iterable[Run] = (), pretrains: bool = True
) -> list[str]:
    """The model folders behind ``evaluations`` (a baseline has none) and ``runs``: each run's
    ``model/``, then the tokenizer and ScratchBERT folders of the families its ScratchBERT and
    SPECTER runs start from (``pretrains``: the workflow pretrains them; False under
    ``pretrain.checkpoint``). The workflow's ``rule all`` names them: Snakemake plans a missing
    file again only when a target needs it, not when what was made from it is up to date."""
    found = {run for run in (e.run() for e in evaluations) if run is not None}
    ordered = sorted(found.union(runs), key=lambda r: str(r.dir()))
    families = sorted(
        {family(r.split) for r in ordered if r.encoder in PRETRAINED_ENCODERS and pretrains}
    )
    return [
        *(str(r.model()) for r in ordered),
        *(f"{TOKENIZER_ROOT}/{f}" for f in families),
        *(f"{SCRATCHBERT_ROOT}/{f}" for f in families),
    ]


def workflow_input(ev: Evaluation, root: str | Path = EVAL_ROOT) -> str:
    """What a rule names to have ``ev``'s JSON made: a trained run's (or fusion's) evaluation
    folder, which one job writes whole (``evaluate_run``, ``fuse_run``: the model loaded once for
    every part and level, not a Python and torch start per file); a baseline's JSON (``baseline``)."""
    return str(ev.path(root) if ev.run() is None else ev.folder(root))


def workflow_inputs(evaluations: Iterable[Evaluation], root: str | Path = EVAL_ROOT) -> list[str]:
    """:func:`workflow_input` of each evaluation, each once, in order."""
    return list(dict.fromkeys(workflow_input(ev, root) for ev in evaluations))


Plan = dict[str, tuple[tuple[str, str], ...]]  # evaluation folder -> its (part, test_level) pairs


def evaluation_plan(evaluations: Iterable[Evaluation], root: str | Path = EVAL_ROOT) -> Plan:
    """The sorted ``(part, test_level)`` pairs of each trained run's (or fusion's) folder among
    ``evaluations``: what the folder's one job writes (baselines are left out)."""
    plan: dict[str, set[tuple[str, str]]] = {}
    for ev in filter(lambda ev: ev.run() is not None, evaluations):
        plan.setdefault(str(ev.folder(root)), set()).add((ev.part, ev.test_level))
    return {folder: tuple(sorted(pairs)) for folder, pairs in sorted(plan.items())}


def folder_plan(plan: Plan, folder: str | Path, level: str) -> tuple[tuple[str, str], ...]:
    """What ``folder`` holds: its entry of ``plan``, or for a folder no table reads (asked for
    by hand) the test part at the run's own level."""
    return plan.get(str(folder), (("test", level),))


def baseline(split: str, method: str, level: str, part: str) -> Evaluation:
    """A baseline's evaluation: fitted on the split's train part, scored at its own level."""
    return Evaluation(split, method, BASELINE_MODE, level, "both", part, level)


# ----------------------------------------------------------------------------- runs beyond the tables

# Table 7's rows (Appendix B): proofs that are the local top-1 of >=20, >=10, >=5, >=2 (cumulative),
# exactly one and no statement (proofmatch.decoding.local.hubness counts them).
HUBNESS_BINS = (">=20", ">=10", ">=5", ">=2", "=1", "<1")
# Figure 2 (§9.5): LIME on the symbol-conservation and the full-replacement model.
FIGURE2_RUNS = {
    "conservation": Run("mixed", "scratchbert", "local", "conservation"),
    "full": Run("mixed", "scratchbert", "local", "full"),
}


def search_runs(config: Mapping[str, Any]) -> tuple[Run, ...]:
    """The runs whose search index ``rule all`` builds (``fusion.search_runs``, Mixed
    Conservation, both inputs): what ``proofmatch serve`` shows after the run."""
    return tuple(
        Run("mixed", *split_run_name(name), "conservation")
        for name in config["fusion"]["search_runs"]
    )
