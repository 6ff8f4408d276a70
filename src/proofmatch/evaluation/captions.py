"""The captions of Tables 3-7 and the baselines table, and the settings a table job reads: each
caption filled from the config (fusion rows, a pretrained checkpoint, Table 7's proofs) and the pool
it states, with the MRR of ranking that pool at random (:func:`chance_mrr`).

Split from :mod:`proofmatch.evaluation.tables` (which renders the tables and re-exports these
names) so that what a caption says is read apart from how a table is laid out. Torch-free.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

import numpy as np

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.config import settings, validate_config
from proofmatch.evaluation import intervals as I
from proofmatch.experiments import Evaluation
from proofmatch.registry.tables import TableSpec
from proofmatch.result_tables import Table

# How Table 3's caption names the SPECTER-style text vector (matching.specter.pooling)
SPECTER_POOLING = {
    "cls": "the [CLS] vector (SPECTER's)",
    "mean": "mean-pooled (not SPECTER's [CLS], which an MLM-only ScratchBERT leaves nearly the same "
    "for every input; docs/models.md)",
}
# The config keys a table job reads (which rows run, captions, intervals): its rule passes exactly
# these as params.settings (proofmatch.config.settings), so a change of any of them reruns it.
SETTINGS = (
    "seed",
    "report",
    "corpus.source",
    "corpus.dir",
    "splits.pr_category",
    "splits.families",
    "fusion.runs",
    "replace.protected",
    "matching.specter",
    *(f"matching.{spec.checkpoint}" for spec in X.ENCODER_SPECS.values() if spec.checkpoint),
)
# Added to a table's caption when it has fusion rows (the baselines table, config fusion.runs).
FUSION_CAPTION = (
    " The rows 'X + BM25 (fusion, this project)' are this project's addition, not in the paper: "
    "per statement, the trained run's scores and BM25's over the candidate proofs are each "
    "normalised (zscore: mean 0, SD 1; rank: 1 / (60 + rank)) and added as run + λ · BM25, with λ "
    "chosen per trained run on its own dev part by local MRR over the grid fusion.weights (the "
    "run's fusion.json), never on the test part; BM25 is fitted on the evaluated part's proofs, as "
    "in the BM25 rows."
)


def table_caption(
    name: str,
    config: Mapping[str, Any],
    pools: Mapping[str, int] | None = None,
    n: int | None = None,
) -> str:
    """The caption of the registered table ``name`` (:data:`proofmatch.result_tables.TABLES`)
    filled from the validated ``config`` (:func:`caption_fields`: Table 6 names
    ``replace.protected``). A table of scores states its pool (:func:`pool_caption`): counted
    once it is rendered (``pools``, :func:`pool_sizes` of its results), named only without them
    (the report's caption, planned before any job); so does Table 7, which counts its proofs
    (``n``) once rendered and says "the proofs" before."""
    spec = RT.TABLES.get(name)
    if spec is None:
        raise ValueError(f"no caption for table {name!r}; expected one of {', '.join(RT.TABLES)}")
    if spec.rows is None:
        return fill_caption(spec, config)
    table = spec.rows(RT.Setting(fusion=X.fusion_runs(config)))
    if table.kind == "hubness":
        return hubness_caption(table.rows[0].cells[0].part, n)
    return (
        scores_caption(table, config)
        + pool_caption(table, pools)
        + I.caption(config["report"]["resamples"])  # the workflow's tables always carry intervals
    )


def job_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a table job (the workflow's tables, findings, seeds, scaling) reads of ``config``."""
    return settings(config, SETTINGS)


def caption_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a caption template may name: ``{protected}`` (replace.protected), and the
    SPECTER-style run's ``{margin}``, ``{hard_fraction}`` and ``{pooling}`` (matching.specter)."""
    specter = config["matching"]["specter"]
    return {
        "protected": ", ".join(config["replace"]["protected"]),
        "margin": specter["margin"],
        "hard_fraction": specter["hard_fraction"],
        "pooling": SPECTER_POOLING[specter["pooling"]],
    }


def fill_caption(spec: TableSpec, config: Mapping[str, Any], **fields: Any) -> str:
    """``spec``'s caption template filled from ``config`` and ``fields`` (what its rule knows)."""
    given = {**caption_fields(config), **fields}
    wanted = {f for _, f, _, _ in string.Formatter().parse(spec.caption) if f}
    if wanted - set(given):
        raise ValueError(
            f"the caption of table {spec.name!r} names {sorted(wanted - set(given))}, which the "
            f"config does not give: its rule {spec.rule!r} fills them"
        )
    return spec.caption.format(**given)


def scores_caption(table: Table, config: Mapping[str, Any]) -> str:
    """The caption of a table of scores (Tables 3-6, baselines): its text, filled from ``config``,
    and how its fusion rows were made when it has any (their λ: :func:`fusion_weights`)."""
    fused = any(ev.fused for row in table.rows for ev in row.cells)
    return (
        fill_caption(RT.TABLES[table.name], config)
        + (FUSION_CAPTION if fused else "")
        + checkpoint_caption(table, config)
    )


def checkpoint_caption(table: Table, config: Mapping[str, Any]) -> str:
    """What a table with rows of a pretrained checkpoint's encoder (MathBERT) loaded, named from
    its config and the SHA-256 of its weights (:func:`proofmatch.models.pretrained.identify`):
    " MathBERT column: all-MiniLM-L6-v2 (general English; not MathBERT), BertModel 6×384, ...".
    Empty when the table has no such row or the encoder is not configured (its rows say so)."""
    from proofmatch.models.identity import identify
    from proofmatch.registry.encoders import ENCODERS, checkpoint_label

    models = {X.learned_encoder(ev.model) for row in table.rows for ev in row.cells}
    out = []
    for key in dict.fromkeys(s.checkpoint for s in ENCODERS.values() if s.checkpoint):
        source = config["matching"].get(key)
        # one sentence per checkpoint, however many of the table's encoders start from it
        starts = [s for s in ENCODERS.values() if s.checkpoint == key and s.name in models]
        modes = {m for s in starts for m in s.modes}
        if not modes or not source:
            continue
        label = checkpoint_label(key)
        try:
            column = identify(source).column(label)
        except (OSError, ValueError) as e:  # a folder the caption cannot read: say so
            column = f"{label} column: {source} (unreadable: {e})"
        extra = (
            " (ZeroShot: the cosine of its pooled vectors, untrained; Frozen: a bilinear head"
            " trained on them, the encoder frozen)"
            if {"zeroshot", "frozen"} <= modes
            else ""
        )
        out.append(f" {column}{extra}.")
    return "".join(out)


def chance_mrr(n: int) -> float:
    """The MRR of ranking a pool of ``n`` proofs at random: the mean of 1/rank over the ranks
    1 ... n, H_n / n (the harmonic number over n). What a table's MRR is read against: a small
    pool makes a high MRR cheap."""
    if n < 1:
        raise ValueError(f"a pool has at least one proof, not {n}")
    return float(np.sum(1.0 / np.arange(1, n + 1))) / n


def chance(n: int, size: bool = True) -> str:
    """A pool of ``n`` proofs as a caption says it: its size (unless ``size`` is false) and its
    chance MRR (%)."""
    text = f"chance MRR {100 * chance_mrr(n):.2f}"
    return f"n = {n:,}, {text}" if size else text


def pools_sentence(notes: Iterable[str]) -> str:
    """The report and transfer captions' sentence on their pools, one note per pool (each made
    with :func:`chance`)."""
    return "Pools (chance MRR = H_n / n, %): " + "; ".join(notes) + "."


def pool_sizes(
    metrics: Mapping[Evaluation, Mapping[str, Any]],
    key: Callable[[Evaluation], Hashable] = lambda ev: ev.split,
) -> dict[Any, int]:
    """Test pairs per split (the candidate pool of local and global decoding), or per ``key`` of
    an evaluation (the report's tables: split and part); the evaluations of one pool must agree,
    since every level holds the same pairs."""
    sizes: dict[Any, set[int]] = {}
    for ev, m in metrics.items():
        if "n" not in m:
            raise ValueError(f"{ev.path()}: no 'n' (number of evaluated pairs)")
        sizes.setdefault(key(ev), set()).add(int(m["n"]))
    bad = {s: sorted(n) for s, n in sizes.items() if len(n) != 1}
    if bad:
        raise ValueError(
            f"the evaluations of one split count different numbers of test pairs: {bad}"
        )
    return {s: n.pop() for s, n in sizes.items()}


def pool_caption(table: Table, pools: Mapping[str, int] | None) -> str:
    """What a table of scores says of its pool: each statement's proof is ranked among every
    proof of the evaluated part of its split. With ``pools`` (split -> number of proofs) each
    split's size and chance MRR (:func:`chance_mrr`), a split without results "not run"; without
    them (planned before any job) the splits only."""
    splits = list(dict.fromkeys(ev.split for row in table.rows for ev in row.cells))
    part = table.rows[0].cells[0].part
    text = f" Pool: each statement's proof is ranked among all {part} proofs of its split"
    if pools is None:
        names = ", ".join(X.SPLIT_NAMES[s] for s in splits)
        return f"{text} ({names}); its size n and chance MRR (H_n / n, %) are counted in the file."
    counted = "; ".join(
        f"{X.SPLIT_NAMES[s]} {chance(pools[s]) if s in pools else 'not run'}" for s in splits
    )
    return f"{text}, chance MRR = H_n / n (%): {counted}."


def hubness_caption(part: str, n: int | None = None) -> str:
    """Table 7's caption: the registry's, with its pool (``n`` proofs) once it is counted."""
    proofs = "the proofs" if n is None else f"the {n} proofs"
    text = RT.TABLES["table7"].caption.format(proofs=proofs, part=part)
    return text if n is None else f"{text} Pool: {chance(n)} (H_n / n, %)."


def _schema_defaults() -> dict[str, Any]:
    """The config every key of which is the schema's default (what a caption says without a config)."""
    return validate_config({})
