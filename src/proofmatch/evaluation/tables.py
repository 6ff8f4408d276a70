"""Tables 1 and 2 from the dataset's statistics, Tables 3-7 and the baselines table from evaluation
JSONs (paper §4, §9, Appendix B).

Tables 1 and 2 lay out the numbers of :mod:`proofmatch.data.stats` (:func:`write_table1`,
:func:`write_table2`). What each of Tables 3-7 holds (its rows, and per column group the
evaluation that fills a cell) is defined once in :mod:`proofmatch.experiments`; this module only
renders it: :func:`render_table` writes ``{out_prefix}.md/.tex/.csv`` with
:func:`proofmatch.render.write_table` and returns the DataFrame. Scores are percentages with two decimals as in the paper's Tables 3-6; MRR of global decoding is
"–" (global decoding assigns, it does not rank). A row whose runs were not made shows "–" cells
and a note saying why (``not_run``, keyed as the row's :attr:`~proofmatch.experiments.Row.keys`:
an encoder, a split, a training level, a method or a pair of them); a result that is simply
missing, with no reason given, is an error.

The workflow renders each of Tables 3-7 from its inputs (:func:`table_from_inputs`),
``proofmatch tables`` from an evaluation tree (:func:`tables_from_eval_root`). Torch-free: it
loads no model.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from proofmatch import experiments as X
from proofmatch.artifacts import read_json, read_parquet
from proofmatch.config import validate_config
from proofmatch.data.categories import category_label
from proofmatch.data.stats import (
    TOKEN_STATS_COLUMNS,
    CorpusStats,
    corpus_stats,
    token_stats,
    token_stats_file,
)
from proofmatch.evaluation import intervals as I
from proofmatch.experiments import HUBNESS_BINS, Evaluation, Run, Table
from proofmatch.logs import setup_logging
from proofmatch.render import write_table

log = logging.getLogger(__name__)

Source = str | os.PathLike | Mapping[str, Any]
NotRun = Mapping[Hashable, str]

HUBNESS_LABELS = {">=20": "≥20", ">=10": "≥10", ">=5": "≥5", ">=2": "≥2", "=1": "=1", "<1": "<1"}
TITLES = {
    "table3": "Table 3",
    "table4": "Table 4",
    "table5": "Table 5",
    "table6": "Table 6",
    "table7": "Table 7",
    "baselines": "Baselines table",
}
# What each table's caption says, once: its .md and .tex files and the HTML report (rule params
# ``caption``, workflow/report/table.rst) show it as :func:`table_caption` fills it from the config.
CAPTIONS = {
    "table3": "Table 3: MRR and accuracy (%) by encoder, training/decoding and symbol replacement level (trained "
    "and tested on the same level). No MRR for global decoding. The SPECTER-style rows are this project's "
    "addition, not in the paper: the same ScratchBERT trained with SPECTER's triplet margin loss (L2 "
    "distance, margin {margin:g}), one negative proof per statement, from the statement's own article with "
    "probability {hard_fraction:g} (SPECTER: 2 of 5 negatives, citations of citations), {pooling}.",
    "table4": "Table 4: cross-replacement MRR and accuracy (%) of ScratchBERT-Local-Local (rows: training level; "
    "columns: test level), Mixed and Unmixed splits.",
    "table5": "Table 5: MRR and accuracy (%) of NPT- and ScratchBERT-Local-Local by input type; Both is the "
    "original, complete input.",
    "table6": "Table 6: controlled cross-replacement levels of ScratchBERT-Local-Local on the probability-theory "
    "domain (the pr split: articles whose primary category is splits.pr_category, split by article as in "
    "Unmixed), MRR and accuracy (%). Rows: training level; columns: test level (both keep the protected "
    "symbols). +P: the protected symbols {protected} are not replaced.",
    "baselines": "Baselines: MRR and accuracy (%) of TF-IDF cosine and BM25 with local and global decoding (no MRR "
    "for global decoding). The paper reports only TF-IDF cosine's MRR range (11.4-29.8, §8); TF-IDF on "
    "the linearized tokens and BM25 are this project's, TF-IDF (reference code) is the paper's public "
    "code's vectorizer (scikit-learn defaults: lowercased, one-character tokens dropped).",
}
# How Table 3's caption names the SPECTER-style text vector (matching.specter.pooling)
SPECTER_POOLING = {
    "cls": "the [CLS] vector (SPECTER's)",
    "mean": "mean-pooled (not SPECTER's [CLS], which an MLM-only ScratchBERT leaves nearly the same "
    "for every input; docs/models.md)",
}
# Added to a table's caption when it has fusion rows (the baselines table, config fusion.runs).
FUSION_CAPTION = (
    " The rows 'X + BM25 (fusion, this project)' are this project's addition, not in the paper: "
    "per statement, the trained run's scores and BM25's over the candidate proofs are each "
    "normalised (zscore: mean 0, SD 1; rank: 1 / (60 + rank)) and added as run + λ · BM25, with λ "
    "chosen per trained run on its own dev part by local MRR over the grid fusion.weights (the "
    "run's fusion.json), never on the test part; BM25 is fitted on the evaluated part's proofs, as "
    "in the BM25 rows."
)


def table_caption(name: str, config: Mapping[str, Any], n: int | None = None) -> str:
    """The caption of table ``name`` (``table1`` ... ``table7``, ``baselines``) filled from the
    validated ``config``: Table 6 names ``replace.protected``. Table 7 counts its proofs (``n``)
    only once it is rendered; without ``n`` (the report's caption, planned before any job) it says
    "the proofs"."""
    if name == "table1":
        return TABLE1_CAPTION
    if name == "table2":
        return TABLE2_CAPTION
    if name == "table7":
        return hubness_caption(X.table7().rows[0].cells[0].part, n)
    if name not in CAPTIONS:
        raise ValueError(
            f"no caption for table {name!r}; expected one of table1, table2, table7, {', '.join(CAPTIONS)}"
        )
    return scores_caption(X.tables(fusion=X.fusion_runs(config))[name], config) + I.caption(
        config["report"]["resamples"]
    )  # the workflow's tables always carry intervals


def scores_caption(table: Table, config: Mapping[str, Any]) -> str:
    """The caption of a table of scores (Tables 3-6, baselines): its text, filled from ``config``,
    and how its fusion rows were made when it has any (their λ: :func:`fusion_weights`)."""
    fused = any(ev.fused for row in table.rows for ev in row.cells)
    specter = config["matching"]["specter"]
    return CAPTIONS[table.name].format(
        protected=", ".join(config["replace"]["protected"]),
        margin=specter["margin"],
        hard_fraction=specter["hard_fraction"],
        pooling=SPECTER_POOLING[specter["pooling"]],
    ) + (FUSION_CAPTION if fused else "")


def hubness_caption(part: str, n: int | None = None) -> str:
    proofs = "the proofs" if n is None else f"the {n} proofs"
    return (
        f"Table 7: cumulative distribution of {proofs} of the {part} set by the number of statements to "
        "which local decoding assigns them."
    )


def _schema_defaults() -> dict[str, Any]:
    """The config every key of which is the schema's default (what a caption says without a config)."""
    return validate_config({})


# ----------------------------------------------------------------------------- helpers


def load_metrics(source: Source) -> dict[str, Any]:
    """An evaluation JSON's content, from a path or an already loaded dict."""
    if isinstance(source, Mapping):
        return dict(source)
    data = read_json(source)
    for key in ("mrr", "acc", "global_acc"):
        if key not in data:
            raise ValueError(f"{source}: not an evaluation JSON (no {key!r})")
    return data


def _pct(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def cells(metrics: Mapping[str, Any] | None, decoding: str) -> list[float | None]:
    """[MRR, Acc] of one result; global decoding has no MRR."""
    if metrics is None:
        return [None, None]
    if decoding == "local":
        return [_pct(metrics["mrr"]), _pct(metrics["acc"])]
    if decoding == "global":
        return [None, _pct(metrics["global_acc"])]
    raise ValueError(f"unknown decoding {decoding!r}")


def _raise_missing(table: str, missing: list[Evaluation]) -> None:
    if missing:
        missing = list(dict.fromkeys(missing))
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        raise KeyError(
            f"{table}: {len(missing)} result(s) missing and not marked as not run: {shown}"
        )


def _write(
    df: pd.DataFrame, out_prefix: str | os.PathLike, caption: str, shown: pd.DataFrame | None = None
) -> pd.DataFrame:
    out = str(out_prefix)
    write_table(
        df,
        f"{out}.md",
        f"{out}.tex",
        f"{out}.csv",
        caption=caption,
        label=Path(out).name,
        shown=shown,
    )
    log.info("wrote %s.{md,tex,csv} (%d rows)", out, len(df))
    return df


# ----------------------------------------------------------------------------- tables


def render_table(
    table: Table,
    results: Mapping[Evaluation, Source],
    out_prefix: str | os.PathLike,
    not_run: NotRun | None = None,
    config: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """One table from its evaluations' results (a JSON path or a loaded dict per evaluation).

    A row marked in ``not_run`` shows its reason (and whatever results exist); a missing
    result of any other row is an error. The caption is :func:`table_caption` of ``config``
    (default: the schema's defaults)."""
    if table.kind == "hubness":
        (row,) = table.rows
        return hubness_table(results[row.cells[0]], out_prefix)
    not_run = not_run or {}
    rows, missing = [], []
    loaded = {ev: load_metrics(source) for ev, source in results.items()}
    for row in table.rows:
        reason = table.reason(row, not_run)
        values: list[float | None] = []
        for ev in row.cells:
            if ev in loaded:
                values += cells(loaded[ev], row.decoding)
            else:
                values += cells(None, row.decoding)
                if reason is None:
                    missing.append(ev)
        rows.append([*row.labels, *values, reason or ""])
    _raise_missing(TITLES[table.name], missing)
    metric_columns = [f"{group} {m}" for group in table.groups for m in ("MRR", "Acc")]
    df = pd.DataFrame(rows, columns=[*table.label_columns, *metric_columns, "Note"])
    cfg = config or _schema_defaults()
    resamples = cfg["report"]["resamples"]  # intervals: proofmatch.evaluation.intervals
    csv, shown = I.with_intervals(df, table, I.load_frames(results), resamples, cfg["seed"])
    caption = (
        scores_caption(table, cfg)
        + (I.caption(resamples) if shown is not None else "")
        + fusion_weights(table, loaded)
    )
    return _write(csv, out_prefix, caption, shown)


def fusion_weights(table: Table, loaded: Mapping[Evaluation, Mapping[str, Any]]) -> str:
    """What the run adds to the caption of a table with fusion rows: each fused run's
    normalization and λ per level as its evaluations record them ("" without fusion rows)."""
    fused = [row for row in table.rows if any(ev.fused for ev in row.cells)]
    weights = []
    for row in fused:
        if row.decoding != "local":  # the global row reads the same evaluations
            continue
        found = [(group, loaded[ev]) for group, ev in zip(table.groups, row.cells) if ev in loaded]
        for (_, m), ev in zip(found, (ev for ev in row.cells if ev in loaded)):
            if "weight" not in m or "normalize" not in m:
                raise ValueError(
                    f"{ev.path()}: a fusion evaluation without its weight and normalization "
                    "(proofmatch.evaluation.fused.evaluate_fusion writes them)"
                )
        if found:
            run = row.labels[0].split(" + ", 1)[0]
            norms = sorted({str(m.get("normalize")) for _, m in found})
            weights.append(
                f"{run} ({'/'.join(norms)}): "
                + ", ".join(f"{g} {float(m['weight']):g}" for g, m in found)
            )
    return " λ chosen: " + "; ".join(weights) + "." if weights else ""


def hubness_table(result: Source, out_prefix: str | os.PathLike) -> pd.DataFrame:
    """Table 7, hubness of local decoding: proofs by the number of statements whose top-1 they are."""
    metrics = load_metrics(result)
    hub = metrics.get("hubness")
    if not hub or any(b not in hub for b in HUBNESS_BINS):
        raise ValueError("Table 7: the evaluation JSON has no complete 'hubness' entry")
    rows = [
        [HUBNESS_LABELS[b], int(hub[b]["proofs"]), float(hub[b]["percent"])] for b in HUBNESS_BINS
    ]
    df = pd.DataFrame(rows, columns=["Statements", "Proofs", "%"])
    return _write(df, out_prefix, hubness_caption(metrics["part"], metrics["n"]))


# ----------------------------------------------------------------------------- Tables 1 and 2 (the dataset)

TABLE1_CAPTION = "Statistics about the dataset and categories of mathematical articles."
TABLE2_CAPTION = (
    "Number of tokens in statements and proofs: minimum, maximum and mean ± SD of text+math, text only, "
    "math only and the math proportion. Tokens are counted as the length filter counts them (the paper's "
    'reference code): whitespace-separated words of the text, titles such as "Lemma 3.2." included and '
    "punctuation attached to its word, plus one token per symbol of the linearized formulas; lone full "
    "stops at the ends of a statement are not counted."
)


def table1(s: CorpusStats) -> pd.DataFrame:
    """Table 1 as a three-column frame (statistic, value, pairs), laid out like the paper."""
    rows: list[tuple[str, object, object]] = [
        ("Number of articles in the corpus", s.articles, None),
        ("Articles with statement-proof pairs", s.articles_with_pairs, None),
        ("Total number of statement-proof pairs", s.pairs, None),
        ("Number of (primary) categories", f"({s.primary_categories}) {s.categories}", None),
        ("Average number of categories per article", round(s.categories_per_article, 2), None),
        ("Most represented primary categories", "# articles", "# pairs"),
    ]
    rows += [
        (category_label(r.category), int(r.articles), int(r.pairs))
        for r in s.top_categories.itertuples()
    ]
    return pd.DataFrame(rows, columns=["statistic", "value", "pairs"])


def _fmt_num(x: float, pct: bool) -> str:
    if np.isnan(x):
        return "–"
    s = f"{x:.1f}" if pct or not float(x).is_integer() else f"{int(x)}"
    return s + ("%" if pct else "")


def table2(num: pd.DataFrame) -> pd.DataFrame:
    """Table 2 formatted as in the paper from :func:`proofmatch.data.stats.token_stats`: min, max
    and mean ± SD per measure."""
    out = []
    for r in num.itertuples(index=False):
        pct = r.measure == "Math proportion"
        mean_sd = "–" if np.isnan(r.mean) else f"{r.mean:.1f}{'%' if pct else ''} ± {r.sd:.1f}"
        out.append((r.part, r.measure, _fmt_num(r.min, pct), _fmt_num(r.max, pct), mean_sd))
    return pd.DataFrame(out, columns=["part", "tokens", "min", "max", "mean ± SD"])


def _frame(obj: str | os.PathLike | pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``obj`` itself, or only ``columns`` of the Parquet file ``obj``; missing columns raise."""
    names = obj.columns if isinstance(obj, pd.DataFrame) else pq.read_schema(obj).names
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(
            f"{obj if not isinstance(obj, pd.DataFrame) else 'frame'} lacks columns {missing}"
        )
    return obj if isinstance(obj, pd.DataFrame) else read_parquet(obj, columns=columns)


def write_table1(
    manifest: str | os.PathLike | pd.DataFrame,
    articles: str | os.PathLike | pd.DataFrame,
    pairs: str | os.PathLike | pd.DataFrame,
    out_prefix: str | os.PathLike,
    top: int = 13,
) -> pd.DataFrame:
    """Write Table 1 to ``{out_prefix}.md/.tex/.csv``; accepts frames or Parquet paths."""
    s = corpus_stats(
        _frame(manifest, ["article_id"]),
        _frame(articles, ["article_id", "categories", "primary_category"]),
        _frame(pairs, ["article_id"]),
        top=top,
    )
    return _write(table1(s), out_prefix, TABLE1_CAPTION)


def write_table2(
    pairs: str | os.PathLike | pd.DataFrame, out_prefix: str | os.PathLike
) -> pd.DataFrame:
    """Write Table 2 to ``{out_prefix}.md/.tex/.csv``; accepts a frame or a Parquet path (read in
    batches: :func:`proofmatch.data.stats.token_stats_file`)."""
    if isinstance(pairs, pd.DataFrame):
        num = token_stats(_frame(pairs, TOKEN_STATS_COLUMNS))
    else:
        num = token_stats_file(pairs)
    return _write(table2(num), out_prefix, TABLE2_CAPTION)


# ----------------------------------------------------------------------------- workflow and CLI


def table_from_inputs(
    name: str,
    inputs: Iterable[str | os.PathLike],
    out_prefix: str | os.PathLike,
    not_run: NotRun | None = None,
    eval_root: str | os.PathLike = X.EVAL_ROOT,
    fusion: Iterable[tuple[str, str]] = X.FUSION_RUNS,
    config: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Render table ``name`` from the workflow's inputs: exactly what common.smk names for its
    rows not marked in ``not_run`` (:func:`proofmatch.experiments.workflow_inputs` under ``eval_root``);
    ``fusion``: the runs fused with BM25 (config fusion.runs); captioned from the run's ``config``."""
    every = X.tables(fusion=tuple(fusion))
    if name not in every:
        raise ValueError(f"unknown table {name!r}; expected one of {', '.join(every)}")
    table = every[name]
    evaluations = table.evaluations(not_run)
    evaluations += I.references(evaluations)  # BM25 on each learned cell's statements
    paths = {str(ev.path(eval_root)): ev for ev in evaluations}
    expected = X.workflow_inputs(evaluations, eval_root)
    given = [str(p) for p in inputs]
    unexpected, absent = sorted(set(given) - set(expected)), sorted(set(expected) - set(given))
    if unexpected or absent:
        raise ValueError(
            f"{name}: the inputs are not the table's evaluations: {len(unexpected)} unexpected "
            f"{unexpected[:3]}, {len(absent)} absent {absent[:3]}"
        )
    return render_table(
        table, {ev: path for path, ev in paths.items()}, out_prefix, not_run, config
    )


def tables_from_eval_root(
    eval_root: str | os.PathLike,
    out_dir: str | os.PathLike,
    part: str = "test",
    hubness_run: Run = X.TABLE7_RUN,
    not_run: NotRun | None = None,
    allow_missing: bool = False,
    fusion: Iterable[tuple[str, str]] = X.FUSION_RUNS,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Render every table from the evaluation tree (path layout of docs/architecture.md).

    With ``allow_missing``, a result file that does not exist makes its cell "–" and its row's
    note "not run: no result"; otherwise it is an error.
    """
    out = Path(out_dir)
    for table in X.tables(part, hubness_run, tuple(fusion)).values():
        if table.kind == "hubness":
            path = table.rows[0].cells[0].path(eval_root)
            if path.exists():
                render_table(table, {table.rows[0].cells[0]: path}, out / table.name)
            elif not allow_missing:
                raise FileNotFoundError(f"Table 7 input {path} is missing")
            else:
                log.warning("Table 7 not written: %s is missing", path)
            continue
        nr = dict(not_run or {})
        found: dict[Evaluation, Path] = {}
        absent: list[Path] = []
        for row in table.rows:
            for ev in row.cells:
                path = ev.path(eval_root)
                if path.exists():
                    found[ev] = path
                elif table.reason(row, nr) is None:
                    absent.append(path)
                    nr[row.keys[0]] = X.no_result(path)
        found.update(
            {ev: ev.path(eval_root) for ev in I.references(found) if ev.path(eval_root).exists()}
        )
        if absent and not allow_missing:
            raise FileNotFoundError(
                f"{len(absent)} evaluation JSON(s) missing, e.g. {absent[0]}; "
                "run the workflow first or pass --allow-missing"
            )
        render_table(table, found, out / table.name, nr, config)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--eval-root", default=X.EVAL_ROOT)
    parser.add_argument("--out-dir", default="results/tables")
    parser.add_argument("--part", default="test", choices=X.PARTS)
    run = X.TABLE7_RUN
    parser.add_argument(
        "--table7-run",
        default=f"{run.split}/{run.encoder}/{run.mode}/{run.level}",
        help="split/encoder/mode/level of the dev evaluation used for Table 7",
    )
    parser.add_argument(
        "--config",
        default=None,
        help="config YAML: what it leaves out (matching.mathbert null, "
        "splits.pr_category null) is marked not run; its fusion.runs are the fusion rows; the "
        "captions name its settings",
    )
    parser.add_argument(
        "--allow-missing", action="store_true", help="render missing results as 'not run'"
    )
    parser.add_argument("--log", default=None)


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    not_run: dict[Hashable, str] = {}
    fusion = X.FUSION_RUNS
    config = None
    if args.config:
        from proofmatch.config import load_config

        config = load_config(args.config)
        not_run, fusion = X.not_run(config), X.fusion_runs(config)
    parts = args.table7_run.split("/")
    if len(parts) != 4:
        raise SystemExit("--table7-run must be split/encoder/mode/level")
    tables_from_eval_root(
        args.eval_root,
        args.out_dir,
        args.part,
        Run(*parts),
        not_run,
        args.allow_missing,
        fusion,
        config,
    )
    return 0
