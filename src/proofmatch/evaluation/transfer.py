"""Cross-corpus transfer: trained runs and baselines tested on every pair of another corpus.

Beyond the paper, which trains and tests on MREC only: a model is useful on a new corpus only if
it holds there. The config names further corpora (``transfer.corpora``: a name, a source form
``demo``/``dir``/``latex``, a folder and metadata). Their articles go through the same extraction,
linearization and filters as the training corpus (the workflow reuses those rules with the same
config), and all their kept pairs form one test pool, as the test part of the training corpus
does. Only the test side changes: the chosen runs (``transfer.runs``, default NPT-Local and
ScratchBERT-Local, trained on Conservation of ``transfer.split``, default Mixed) are evaluated
unchanged, and the baselines (``transfer.baselines``, default TF-IDF and BM25) are fitted as for
the in-corpus numbers: TF-IDF on the training corpus's train part, BM25 on the evaluated proofs.

A pool file (:func:`build_pool`) therefore holds two parts in the layout of
``results/replaced/<split>/conservation.parquet``: ``train`` = the training corpus's train part
(what TF-IDF is fitted on) and ``test`` = every kept pair of the transfer corpus, with its tokens as
linearized (Conservation: no symbol is replaced). :func:`proofmatch.evaluation.evaluate.evaluate_run` and
:func:`proofmatch.evaluation.baselines.run_baseline` then read it like any split. Pairs of the pool that also
occur in the training corpus (same article id, or the same statement and proof tokens) are
counted in the pool's JSON and shown in the table note: such a pool is no clean transfer.

Each run is also fused with BM25 (this project's addition, :mod:`proofmatch.evaluation.fused`):
in-corpus and on every pool with the one λ chosen on the training corpus's dev part (the run's
``fusion.json``), never tuned on a pool. A run the config does not make (MathBERT without a
checkpoint) and its fusion are rows that say "not run" and why, as in the other tables.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from proofmatch.artifacts import read_json, read_parquet, write_json, write_parquet
from proofmatch.corpora import transfer_corpora, transfer_root
from proofmatch.data.replace import OUTPUT_SCHEMA
from proofmatch.data.splits import read_part
from proofmatch.evaluation import intervals as I
from proofmatch.evaluation.captions import chance, pools_sentence
from proofmatch.evaluation.tables import cells, load_metrics
from proofmatch.experiments import (
    EVAL_ROOT,
    LEVEL_NAMES,
    SPLIT_NAMES,
    Evaluation,
    Run,
    baseline,
    learned_encoder,
    model_label,
    workflow_input,
)
from proofmatch.experiments import not_run as config_not_run
from proofmatch.experiments import note as not_run_note
from proofmatch.registry.encoders import split_run_name
from proofmatch.render import write_tables

log = logging.getLogger(__name__)

LEVEL = "conservation"  # runs trained on Conservation, pools not replaced


def transfer_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The validated config's ``transfer`` block (:func:`proofmatch.config.validate_config`):
    split, level, runs as (encoder, mode), baselines, corpora by name (each with its
    ``n_shards``, :func:`proofmatch.corpora.transfer_corpora`; empty when none is configured) and
    why parts of the config are not run (:func:`proofmatch.experiments.not_run`)."""
    block = config["transfer"]
    corpora = {
        name: {**c.entry, "n_shards": c.n_shards} for name, c in transfer_corpora(config).items()
    }
    runs = [split_run_name(r) for r in block["runs"]]
    return {
        "split": block["split"],
        "level": LEVEL,
        "runs": runs,
        "baselines": list(block["baselines"]),
        "corpora": corpora,
        "not_run": config_not_run(config),
        "resamples": config["report"]["resamples"],
        "seed": config["seed"],
    }


def evaluations(settings: Mapping[str, Any]) -> list[Evaluation]:
    """The table's rows: each run, each baseline, then each run fused with BM25, trained (fitted)
    on the split's train part at the transfer level and tested on the test part at the same level."""
    split, level = settings["split"], settings["level"]
    runs = [Run(split, encoder, mode, level) for encoder, mode in settings["runs"]]
    return (
        [run.evaluation("test") for run in runs]
        + [baseline(split, method, level, "test") for method in settings["baselines"]]
        + [run.fusion("test") for run in runs]
    )


def row_reason(settings: Mapping[str, Any], ev: Evaluation) -> str | None:
    """Why a row is not run (its encoder or split left out by the config), or None."""
    reasons = settings.get("not_run", {})
    return next((reasons[k] for k in (learned_encoder(ev.model), ev.split) if k in reasons), None)


def eval_root(corpus: str | None) -> str:
    """Where the evaluations on a corpus live: in-corpus (None) in results/eval, a transfer corpus's
    in results/transfer/<corpus>/eval (same layout)."""
    return EVAL_ROOT if corpus is None else f"{transfer_root(corpus)}/eval"


def pool_json(settings: Mapping[str, Any], corpus: str) -> str:
    return f"{transfer_root(corpus)}/pool/{settings['split']}/{settings['level']}.json"


def table_cells(settings: Mapping[str, Any]) -> dict[tuple[str | None, Evaluation], str]:
    """Every cell's evaluation JSON by (corpus, evaluation): None = the in-corpus test part; the
    rows not run have none."""
    corpora = [None, *settings["corpora"]]
    return {
        (c, ev): str(ev.path(eval_root(c)))
        for c in corpora
        for ev in evaluations(settings)
        if row_reason(settings, ev) is None
    }


def table_inputs(settings: Mapping[str, Any]) -> list[str]:
    """The transfer table's inputs: each transfer corpus's pool JSON and every cell's evaluation
    (in-corpus, a trained run's is its evaluation folder: :func:`proofmatch.experiments.workflow_input`)."""
    if not settings["corpora"]:
        raise ValueError(
            "the transfer table needs at least one transfer.corpora entry in the config"
        )
    cells = [
        path if corpus is not None else workflow_input(ev)
        for (corpus, ev), path in table_cells(settings).items()
    ]
    return [*(pool_json(settings, c) for c in settings["corpora"]), *dict.fromkeys(cells)]


def in_corpus_evaluations(settings: Mapping[str, Any]) -> list[Evaluation]:
    """The in-corpus cells the table reads (the test part of the training corpus), when it is made."""
    return (
        [ev for corpus, ev in table_cells(settings) if corpus is None]
        if settings["corpora"]
        else []
    )


def build_pool(
    pairs_parquet: str | os.PathLike,
    train_data_parquet: str | os.PathLike,
    out_parquet: str | os.PathLike,
    out_json: str | os.PathLike,
) -> dict[str, Any]:
    """Write a transfer pool: the training corpus's train part + every transfer pair as ``test``.

    The pool is at Conservation, the level the transfer runs are trained on: the transfer pairs
    keep their tokens as linearized (what :mod:`proofmatch.data.replace` gives at that level), with
    the same columns as ``results/replaced/<split>/conservation.parquet`` and an empty mapping.
    """
    pairs = read_parquet(
        pairs_parquet, columns=["pair_id", "article_id", "statement_tokens", "proof_tokens"]
    )
    if pairs.empty:
        raise ValueError(
            f"{pairs_parquet}: the transfer corpus has no pairs left after the filters"
        )
    train = read_part(train_data_parquet, "train")
    pool = pairs.assign(part="test", mapping="{}")
    columns = OUTPUT_SCHEMA.names
    both = pd.concat([train[columns], pool[columns]], ignore_index=True)
    write_parquet(
        pa.Table.from_pandas(both, schema=OUTPUT_SCHEMA, preserve_index=False), out_parquet
    )
    shared = sorted(set(pool["article_id"]) & set(train["article_id"]))
    seen = {(tuple(s), tuple(p)) for s, p in zip(train["statement_tokens"], train["proof_tokens"])}
    duplicates = sum(
        (tuple(s), tuple(p)) in seen for s, p in zip(pool["statement_tokens"], pool["proof_tokens"])
    )
    info = {
        "pairs": len(pool),
        "articles": int(pool["article_id"].nunique()),
        "train_pairs": len(train),
        "level": LEVEL,
        "shared_articles": len(shared),
        "shared_article_ids": shared[:20],
        "duplicate_pairs": int(duplicates),
        "pairs_file": str(pairs_parquet),
        "train_file": str(train_data_parquet),
    }
    write_json(info, out_json)
    if shared or duplicates:
        log.warning(
            "transfer pool %s shares %d article ids and %d identical pairs with the training corpus's "
            "train part: not a clean transfer",
            out_parquet,
            len(shared),
            duplicates,
        )
    log.info(
        "transfer pool %s: %d pairs from %d articles (test) + %d training pairs (train)",
        out_parquet,
        len(pool),
        info["articles"],
        len(train),
    )
    return info


# ----------------------------------------------------------------------------- the table


def transfer_table(
    results: Mapping[tuple[str | None, Evaluation], Any],
    pools: Mapping[str, Any],
    out_prefix: str | os.PathLike,
    split: str = "mixed",
    not_run: Mapping[Evaluation, str] | None = None,
    rows: Sequence[Evaluation] | None = None,
    bootstrap: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """MRR and accuracy (%) of every run, baseline and fusion in-corpus and on each transfer pool.

    ``results`` maps (None for in-corpus or a corpus name, evaluation) to an evaluation JSON or
    its loaded dict; ``pools`` maps a corpus name to its pool JSON (:func:`build_pool`);
    ``not_run`` maps the evaluations of rows not run to the reason, shown instead of numbers.
    Rows: each evaluation (in the order of ``rows``, default: as the results come, then the rows
    not run) with local decoding (MRR, Acc) and global decoding (Acc). With ``bootstrap``
    (resamples, seed) and result paths, each score gets its 95 % interval over the pool's
    statements (CSV ``lo``/``hi`` columns, Markdown brackets: :mod:`proofmatch.evaluation.intervals`).
    """
    corpora = list(pools)
    not_run = dict(not_run or {})
    rows_of = list(
        dict.fromkeys(rows if rows is not None else [*(ev for _, ev in results), *not_run])
    )
    missing = [
        (c, ev)
        for ev in rows_of
        for c in [None, *corpora]
        if ev not in not_run and (c, ev) not in results
    ]
    if missing:
        raise KeyError(f"transfer table: results missing for {missing[:5]}")
    run_rows = [ev for ev in rows_of if ev not in not_run]
    if not run_rows:
        raise ValueError("transfer table: every row is marked not run")
    pool_info = {c: dict(p) if isinstance(p, Mapping) else read_json(p) for c, p in pools.items()}
    loaded = {k: load_metrics(v) for k, v in results.items()}
    in_n = loaded[(None, run_rows[0])]["n"]
    columns = ["Model", f"In-corpus MRR (n={in_n})", "In-corpus Acc"]
    for c in corpora:
        columns += [f"{c} MRR (n={pool_info[c]['pairs']})", f"{c} Acc"]
    df = pd.DataFrame(_body(rows_of, corpora, loaded, not_run), columns=[*columns, "Note"])
    caption = f"{table_caption(split)} {pool_notes(in_n, pool_info)}" + fusion_caption(loaded)
    df, shown = _intervals(df, results, loaded, rows_of, corpora, bootstrap)
    if shown is not None:
        caption += I.caption(bootstrap[0], deltas=False)  # type: ignore[index]
    write_tables(df, out_prefix, caption, shown)
    log.info(
        "wrote %s.{md,tex,csv} (%d rows, %d transfer corpora)", out_prefix, len(df), len(corpora)
    )
    return df


def _body(
    rows_of: Sequence[Evaluation],
    corpora: Sequence[str],
    loaded: Mapping[tuple[str | None, Evaluation], Mapping[str, Any]],
    not_run: Mapping[Evaluation, str],
) -> list[list[Any]]:
    """The table's rows: per evaluation a local (MRR, Acc) and a global (Acc) row, in-corpus and
    on each pool; a row not run shows its reason."""
    body = []
    for ev in rows_of:
        for decoding in ("local", "global"):
            values: list[float | None] = []
            for c in [None, *corpora]:
                values += cells(loaded.get((c, ev)) if ev not in not_run else None, decoding)
            body.append(
                [
                    model_label(ev.model, ev.mode, decoding),
                    *values,
                    not_run_note(not_run[ev]) if ev in not_run else "",
                ]
            )
    return body


def pool_notes(in_n: int, pool_info: Mapping[str, Mapping[str, Any]]) -> str:
    """What the caption says of the pools: the in-corpus test part's size and each transfer
    pool's pairs and articles, each with its chance MRR (H_n / n,
    :func:`proofmatch.evaluation.captions.chance_mrr`), and a pool that shares articles or pairs
    with the training corpus's train part marked as no clean transfer."""
    notes = [f"In-corpus: {chance(in_n)}"]
    for c, info in pool_info.items():
        note = f"{c}: {info['pairs']} pairs from {info['articles']} articles"
        note += f" ({chance(info['pairs'], size=False)})"
        if info.get("shared_articles") or info.get("duplicate_pairs"):
            note += (
                f", NOT a clean transfer: {info['shared_articles']} article ids and "
                f"{info['duplicate_pairs']} identical pairs also in the training corpus's train part"
            )
        notes.append(note)
    return pools_sentence(notes)


def _intervals(
    df: pd.DataFrame,
    results: Mapping[tuple[str | None, Evaluation], Any],
    loaded: Mapping[tuple[str | None, Evaluation], Mapping[str, Any]],
    rows_of: Sequence[Evaluation],
    corpora: Sequence[str],
    bootstrap: tuple[int, int] | None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The table with each score's 95 % interval (:func:`proofmatch.evaluation.intervals.bracketed`),
    or as it is when no bootstrap is asked for or the results are loaded dicts without a
    per-statement block."""
    frames = I.load_frames(results, loaded) if bootstrap is not None else None
    if frames is None or bootstrap is None:
        return df, None
    groups = [(None, "In-corpus"), *((c, c) for c in corpora)]
    scored = []
    for i, (ev, decoding) in enumerate((ev, d) for ev in rows_of for d in ("local", "global")):
        for (corpus, group), (col, metric) in (
            (g, m) for g in groups for m in zip(("MRR", "Acc"), I.metric_pair(decoding))
        ):
            column = next(c for c in df.columns if c.startswith(f"{group} {col}"))
            scored.append((i, column, frames.get((corpus, ev)), metric))
    return I.bracketed(df, scored, *bootstrap)


def table_caption(split: str) -> str:
    """The transfer table's caption as the HTML report shows it (rule params ``caption``); the .md
    and .tex files add each pool's size and the fusion rows' λ, known once the run has them."""
    split_name = SPLIT_NAMES[split]
    return (
        f"Transfer: MRR and accuracy (%) of models trained on the {split_name} train part of the training "
        f"corpus ({LEVEL_NAMES[LEVEL]}; baselines fitted on the same part), tested on its {split_name} test "
        "part (In-corpus) and on every pair of each transfer corpus after the same extraction, filters and "
        "linearization. No MRR for global decoding."
    )


def render_transfer(
    inputs: Iterable[str | os.PathLike], out_prefix: str | os.PathLike, settings: Mapping[str, Any]
) -> pd.DataFrame:
    """The table from the workflow's inputs, which must be exactly :func:`table_inputs` of
    ``settings`` (workflow/rules/transfer.smk)."""
    given, expected = {str(p) for p in inputs}, set(table_inputs(settings))
    if given != expected:
        raise ValueError(
            f"transfer table: the inputs are not the table's files: unexpected "
            f"{sorted(given - expected)[:3]}, absent {sorted(expected - given)[:3]}"
        )
    pools = {c: pool_json(settings, c) for c in settings["corpora"]}
    reasons = {
        ev: reason
        for ev in evaluations(settings)
        if (reason := row_reason(settings, ev)) is not None
    }
    return transfer_table(
        table_cells(settings),
        pools,
        out_prefix,
        settings["split"],
        reasons,
        evaluations(settings),
        (settings["resamples"], settings["seed"]),
    )


def fusion_caption(loaded: Mapping[tuple[str | None, Evaluation], Mapping[str, Any]]) -> str:
    """What the fusion rows add to the caption: how they were made and each run's λ, which is
    the same in-corpus and on every pool (each pool's evaluation records it; checked here)."""
    weights: dict[Evaluation, set[tuple[float, str]]] = {}
    for (_, ev), metrics in loaded.items():
        if ev.fused:
            weights.setdefault(ev, set()).add((float(metrics["weight"]), str(metrics["normalize"])))
    if not weights:
        return ""
    for ev, seen in weights.items():
        if len(seen) != 1:
            raise ValueError(
                f"transfer table: {ev.model}-{ev.mode} was fused with different weights {sorted(seen)}; "
                "one λ, chosen on the training corpus's dev part, must serve every pool"
            )
    chosen = "; ".join(
        f"{model_label(ev.model, ev.mode, 'local').split(' + ', 1)[0]} λ = {w:g} ({norm})"
        for ev, ((w, norm),) in weights.items()
    )
    return (
        " Rows 'X + BM25 (fusion, this project)' are this project's addition: per statement, the run's and "
        "BM25's scores over the candidate proofs, each normalised, added as run + λ · BM25, with λ chosen on "
        "the training corpus's dev part by local MRR and never tuned on a pool: " + chosen + "."
    )
