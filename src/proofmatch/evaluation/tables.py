"""Tables 3-7 and the baselines table from evaluation JSONs (paper §9, Appendix B); Tables 1 and 2,
from the dataset's statistics, are :mod:`proofmatch.evaluation.dataset_tables`'.

What each of Tables 3-7 holds (its rows, and per column group the
evaluation that fills a cell), its title and its caption are registered once in
:mod:`proofmatch.result_tables`; this module only renders it: :func:`render_table` writes
``{out_prefix}.md/.tex/.csv`` with :func:`proofmatch.render.write_table` and returns the
DataFrame. Scores are percentages with two decimals as in the paper's Tables 3-6; MRR of global
decoding is "–" (global decoding assigns, it does not rank). A row whose runs were not made shows
"–" cells and a note saying why (``not_run``, keyed as the row's
:attr:`~proofmatch.result_tables.Row.keys`: an encoder, a split, a training level, a method or a
pair of them); a result that is simply missing, with no reason given, is an error. Every caption
states the table's pool: the number of proofs each statement is ranked against, and the MRR of
ranking them at random (:func:`chance_mrr`).

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

import pandas as pd

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.artifacts import read_json
from proofmatch.evaluation import intervals as I
from proofmatch.evaluation.captions import (
    _schema_defaults,
    chance_mrr,
    hubness_caption,
    pool_caption,
    pool_sizes,
    scores_caption,
)
from proofmatch.experiments import HUBNESS_BINS, Evaluation, Run
from proofmatch.logs import setup_logging
from proofmatch.render import write_tables
from proofmatch.result_tables import Table

log = logging.getLogger(__name__)

Source = str | os.PathLike | Mapping[str, Any]
NotRun = Mapping[Hashable, str]

HUBNESS_LABELS = {">=20": "≥20", ">=10": "≥10", ">=5": "≥5", ">=2": "≥2", "=1": "=1", "<1": "<1"}
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


def write_frame(
    df: pd.DataFrame, out_prefix: str | os.PathLike, caption: str, shown: pd.DataFrame | None = None
) -> pd.DataFrame:
    write_tables(df, out_prefix, caption, shown)
    log.info("wrote %s.{md,tex,csv} (%d rows)", out_prefix, len(df))
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
    _raise_missing(RT.TABLES[table.name].title, missing)
    metric_columns = [f"{group} {m}" for group in table.groups for m in ("MRR", "Acc")]
    df = pd.DataFrame(rows, columns=[*table.label_columns, *metric_columns, "Note"])
    cfg = config or _schema_defaults()
    resamples = cfg["report"]["resamples"]  # intervals: proofmatch.evaluation.intervals
    csv, shown = I.with_intervals(df, table, I.load_frames(results, loaded), resamples, cfg["seed"])
    pools = pool_sizes(loaded)
    caption = (
        scores_caption(table, cfg)
        + pool_caption(table, pools)
        + (I.caption(resamples) if shown is not None else "")
        + (AT_CHANCE if at_chance(table, csv, pools) else "")
        + fusion_weights(table, loaded)
    )
    return write_frame(csv, out_prefix, caption, shown)


AT_CHANCE = (
    " The whole table sits at chance: every MRR's 95 % interval holds its pool's chance MRR, so no"
    " row is told apart from ranking the proofs at random."
)


def at_chance(table: Table, df: pd.DataFrame, pools: Mapping[Any, int]) -> bool:
    """True when every MRR of ``df`` (a rendered table of scores with its interval columns,
    ``<group> MRR lo/hi``) has an interval that holds the chance MRR of its pool (``pools``:
    split -> proofs, :func:`pool_sizes`); False when any is clear of it, or when there is no
    MRR with an interval to judge."""
    judged = 0
    for r, row in enumerate(table.rows):
        if row.decoding != "local":
            continue
        for group, ev in zip(table.groups, row.cells):
            lo, hi = f"{group} MRR lo", f"{group} MRR hi"
            if lo not in df.columns or hi not in df.columns or ev.split not in pools:
                continue
            low, high = df.at[r, lo], df.at[r, hi]
            if pd.isna(low) or pd.isna(high):
                continue
            if not low <= 100 * chance_mrr(pools[ev.split]) <= high:
                return False
            judged += 1
    return judged > 0


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
    return write_frame(df, out_prefix, hubness_caption(metrics["part"], metrics["n"]))


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
    every = RT.tables(fusion=tuple(fusion))
    if name not in every:
        raise ValueError(f"unknown table {name!r}; expected one of {', '.join(every)}")
    table = every[name]
    evaluations = I.with_references(table.evaluations(not_run))  # and BM25 on their statements
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
    hubness_run: Run = RT.TABLE7_RUN,
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
    for table in RT.tables(part, hubness_run, tuple(fusion)).values():
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
    parser.add_argument("--eval-root", default=X.EVAL_ROOT, help="the evaluation tree to read")
    parser.add_argument("--out-dir", default="results/tables", help="where the tables are written")
    parser.add_argument("--part", default="test", choices=X.PARTS, help="the evaluated part")
    run = RT.TABLE7_RUN
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
    parser.add_argument("--log", default=None, help="also log to this file")


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
