"""The report's tables beyond the paper's: findings and seed spread (the data-scaling curve is in
:mod:`proofmatch.evaluation.scaling`).

* ``findings``: :mod:`proofmatch.evaluation.findings`, one row per finding of the paper, then the
  headline gap (each learned Local run and its fusion against BM25 and TF-IDF, Mixed Conservation);
* ``seeds``: each headline run (config ``report.seed_runs``) trained with every seed of
  ``report.seeds``: test MRR per seed, mean ± SD, and the interval of the config seed's run.

All read the per-statement block of each evaluation JSON and write Markdown, LaTeX and
CSV through :func:`proofmatch.render.write_table`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from proofmatch import experiments as X
from proofmatch import variants as V
from proofmatch.artifacts import read_table, write_csv
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation import findings as F
from proofmatch.evaluation import paper as P
from proofmatch.evaluation import verdicts as VD
from proofmatch.evaluation.captions import chance, pool_sizes, pools_sentence
from proofmatch.evaluation.comparison import corpus_label
from proofmatch.evaluation.intervals import load_frames, signed
from proofmatch.experiments import Evaluation
from proofmatch.render import write_tables

log = logging.getLogger(__name__)

HEADLINE_LEXICAL = ("bm25", "tfidf_paper", "tfidf")


def finding_inputs(not_run: Mapping[Any, str]) -> list[Evaluation]:
    """The evaluations the findings read, leaving out what the config does not run (MathBERT without a
    checkpoint, the pr split without a category): their contrasts show as not run."""
    skip = set(not_run)
    return [
        ev
        for f in F.findings()
        for ev in f.evaluations()
        if ev.split not in skip
        and (X.learned_encoder(ev.model) or ev.model) not in skip
        and (X.learned_encoder(ev.model), ev.mode) not in skip
    ]


def _pct(iv: B.Interval) -> str:
    return f"{100 * iv.value:.2f} [{100 * iv.low:.1f}, {100 * iv.high:.1f}]"


def pools_caption(frames: Mapping[Any, pd.DataFrame]) -> str:
    """What a report table's caption says of its pools: for each split and part its evaluations
    read, the number of proofs each statement is ranked against and their chance MRR (H_n / n,
    :func:`proofmatch.evaluation.captions.chance_mrr`)."""
    evaluated = {ev: {"n": len(f)} for ev, f in frames.items() if isinstance(ev, Evaluation)}
    sizes = pool_sizes(evaluated, key=lambda ev: (ev.split, ev.part))
    return " " + pools_sentence(
        f"{X.SPLIT_NAMES[s]} {p} {chance(n)}" for (s, p), n in sizes.items()
    )


def _label(ev: Evaluation) -> str:
    return X.model_label(ev.model, ev.mode, "local")


# ----------------------------------------------------------------------------- findings


def headline_evaluations(config: Mapping[str, Any]) -> list[Evaluation]:
    """Each learned Local run of Table 3 at Conservation (not run ones left out), its fusion when
    configured, and the lexical baselines it is set against."""
    skip = X.not_run(config)
    runs = [
        X.Run("mixed", enc, "local", V.HEADLINE_LEVEL)
        for enc in ("npt", "scratchbert", "mathbert")
        if enc not in skip
    ]
    learned = [ev for r in runs for ev in V.test_evaluations(r, config)]
    return learned + [X.baseline("mixed", m, V.HEADLINE_LEVEL, "test") for m in HEADLINE_LEXICAL]


def headline_table(
    frames: Mapping[Any, pd.DataFrame], config: Mapping[str, Any], resamples: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The paper's headline gap here: every learned row minus each lexical baseline (MRR, paired).
    (numeric frame: MRR and each difference with lo/hi, in points; shown frame)."""
    evs = [
        ev for ev in headline_evaluations(config) if ev in frames
    ]  # a partial tree: what was made
    lexical = [ev for ev in evs if ev.run() is None]
    rows, shown = [], []
    for ev in (e for e in evs if e.run() is not None):
        iv = B.interval(frames[ev]["mrr"].to_numpy(), resamples, seed)
        row: dict[str, Any] = {
            "Model": _label(ev),
            "n": len(frames[ev]),
            "MRR": 100 * iv.value,
            "MRR lo": 100 * iv.low,
            "MRR hi": 100 * iv.high,
        }
        text: dict[str, Any] = {"Model": row["Model"], "MRR": _pct(iv)}
        for lex in lexical:
            d = B.contrast([(1.0, frames[ev]), (-1.0, frames[lex])], "mrr", resamples, seed)
            name = f"− {X.METHOD_NAMES[lex.model]}"
            row.update({name: 100 * d.value, f"{name} lo": 100 * d.low, f"{name} hi": 100 * d.high})
            text[name] = signed(d)
        rows.append(row)
        shown.append(text)
    return pd.DataFrame(rows), pd.DataFrame(shown)


def paper_values() -> dict[tuple[Evaluation, str], float]:
    """The paper's value (a fraction) of each (test evaluation, metric) its Tables 3-6 report; a
    global decoding row's accuracy is ``global_acc``."""
    out: dict[tuple[Evaluation, str], float] = {}
    for cell in P.read_paper_cells():
        metric = cell.metric if cell.decoding == "local" else "global_acc"
        out.setdefault((cell.evaluation("test"), metric), cell.value / 100)
    return out


def read_kbest(path: str | os.PathLike, index: pd.Index) -> tuple[np.ndarray, np.ndarray] | None:
    """An evaluation's k-best lists (``topk_ids`` as positions in ``index``, the per-statement
    frame's order, and ``topk_scores``), rows in that order; None without its Parquet file."""
    path = Path(path)
    if not path.exists():
        return None
    table = read_table(path, columns=["pair_id", "topk_ids", "topk_scores"])
    rows = index.get_indexer(table.column("pair_id").to_numpy(zero_copy_only=False))
    n = len(index)
    ids = table.column("topk_ids").combine_chunks()
    k = len(ids[0]) if len(ids) else 0
    flat = index.get_indexer(ids.flatten().to_numpy(zero_copy_only=False))
    if (rows < 0).any() or (flat < 0).any() or len(rows) != n or flat.size != n * k:
        raise ValueError(f"{path}: its k-best lists do not match its statements block")
    scores = table.column("topk_scores").combine_chunks().flatten().to_numpy()
    order = np.argsort(rows)
    return flat.reshape(n, k)[order], scores.astype(np.float64).reshape(n, k)[order]


def evidence(
    frames: Mapping[Any, pd.DataFrame],
    config: Mapping[str, Any],
    paths: Mapping[Any, str | os.PathLike] | None = None,
) -> VD.Evidence:
    """The findings' :class:`~proofmatch.evaluation.verdicts.Evidence`: the frames, the config's
    bootstrap, margin and re-solving settings, the k-best lists of every evaluation whose global
    accuracy a finding reads (from the Parquet file beside its JSON in ``paths``) and the paper's
    values."""
    rep = config["report"]
    resolve_max_n = rep["resolve_max_n"]
    global_evs = {
        t[1] for f in F.findings() for c in f.contrasts for t in c.terms if t[2] == "global_acc"
    }
    kbest = {}
    for ev, path in (paths or {}).items():
        if (
            VD.seed_variant_of(ev) in global_evs
            and ev in frames
            and len(frames[ev]) <= resolve_max_n
        ):
            found = read_kbest(Path(path).with_suffix(".parquet"), frames[ev].index)
            if found is not None:
                kbest[ev] = found
    return VD.Evidence(
        frames,
        rep["resamples"],
        config["seed"],
        rep["equivalence_margin"] / 100,
        resolve_max_n,
        kbest,
        paper_values(),
        VD.caveats(config),
    )


def seeds_sentence(frames: Mapping[Any, pd.DataFrame], config: Mapping[str, Any]) -> str:
    """What the findings' caption says of seeds: the config seed, and which runs add the seeds of
    ``report.seeds`` (a hierarchical bootstrap)."""
    seed = config["seed"]
    varied = sorted(
        {
            _label(VD.seed_variant_of(ev))
            for ev in frames
            if isinstance(ev, Evaluation) and ev.variant.startswith("seed")
        }
    )
    text = f"every run trained with seed {seed}"
    if varied:
        seeds = ", ".join(str(s) for s in config["report"]["seeds"])
        text += (
            f"; cells of {', '.join(varied)} (Mixed Conservation, test) combine seeds {seeds} "
            "(a hierarchical bootstrap: seeds, then statements)"
        )
    return text


def write_findings(
    paths: Mapping[Any, str | os.PathLike],
    config: Mapping[str, Any],
    out_prefix: str | os.PathLike,
    shares_json: str | os.PathLike | None = None,
    headline_csv: str | os.PathLike | None = None,
) -> pd.DataFrame:
    """``findings.{md,tex}`` (one row per finding), ``findings.csv`` (one row per cell, numeric),
    and the headline gap (Markdown below the table, and its own CSV, ``headline_csv``, by default
    ``<out_prefix>_headline.csv``)."""
    frames: dict[Any, pd.DataFrame] = dict(load_frames(paths))  # type: ignore[arg-type]
    if shares_json is not None:
        frames[F.LIME] = VD.lime_frame(shares_json)
    resamples, seed = config["report"]["resamples"], config["seed"]
    ev = evidence(frames, config, paths)
    t0 = time.perf_counter()
    df, cells = VD.findings_tables(ev)
    log.info(
        "judged %d findings (%d cells, %d evaluations re-solved) in %.1f s",
        len(df),
        len(cells),
        len(ev.kbest),
        time.perf_counter() - t0,
    )
    head, head_shown = headline_table(frames, config, resamples, seed)
    counts = df["Verdict"].value_counts().to_dict()
    corpus = corpus_label(config["corpus"]["source"], config["corpus"].get("dir"))
    after = (
        "\nVerdicts: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        + ".\n\n"
        + f"Headline gap ({corpus}, test part, Mixed Conservation, MRR in points, 95 % paired interval, "
        f"seed {seed}; the paper: the learned models far above token matching):\n\n"
        + head_shown.to_markdown(index=False, tablefmt="github")
        + "\n"
    )
    caption = VD.CAPTION.format(
        corpus=corpus,
        resamples=resamples,
        margin=config["report"]["equivalence_margin"],
        resolve_max_n=config["report"]["resolve_max_n"],
        seeds=seeds_sentence(frames, config),
    ) + pools_caption(frames)
    write_tables(cells, out_prefix, caption, shown=df, md_after=after)
    write_csv(head, headline_csv or f"{out_prefix}_headline.csv")
    log.info("wrote %s.{md,tex,csv} (%d findings, %d cells)", out_prefix, len(df), len(cells))
    return df


def findings_inputs(config: Mapping[str, Any]) -> list[Evaluation]:
    """The evaluations the findings read, the seed variants of those among them that
    ``report.seeds`` trains again, and the headline gap's."""
    base = finding_inputs(X.not_run(config))
    wanted = set(base)
    seeds = [
        ev
        for _, run in V.seed_runs(config)
        if run.variant
        for ev in V.test_evaluations(run, config)
        if VD.seed_variant_of(ev) in wanted
    ]
    return list(dict.fromkeys(base + seeds + headline_evaluations(config)))


# ----------------------------------------------------------------------------- seeds


def seeds_inputs(config: Mapping[str, Any]) -> list[Evaluation]:
    out = []
    for _, run in V.seed_runs(config):
        out += V.test_evaluations(run, config)
    return out


def write_seeds(
    paths: Mapping[Evaluation, str | os.PathLike],
    config: Mapping[str, Any],
    out_prefix: str | os.PathLike,
) -> pd.DataFrame:
    """``seeds.{md,tex,csv}``: per headline run (and fusion), test MRR and Acc per seed, their mean ±
    SD (ddof 1), and the interval over statements of the config seed's run."""
    resamples, seed = config["report"]["resamples"], config["seed"]
    frames = load_frames(paths)
    groups: dict[tuple[str, str, bool], list[tuple[int, Evaluation]]] = {}
    for s, run in V.seed_runs(config):
        for ev in V.test_evaluations(run, config):
            groups.setdefault((run.encoder, run.mode, ev.fused), []).append((s, ev))
    rows, shown = [], []
    for (_enc, _mode, _fused), members in groups.items():
        metrics = [frames[ev] for _, ev in members]
        mrr = np.array([100 * m["mrr"].mean() for m in metrics])
        acc = np.array([100 * m["acc"].mean() for m in metrics])
        own = next(i for i, (s, _) in enumerate(members) if s == seed)
        iv = B.interval(metrics[own]["mrr"].to_numpy(), resamples, seed)
        sd = lambda a: float(np.std(a, ddof=1)) if a.size > 1 else float("nan")  # noqa: E731
        label = _label(members[0][1])
        rows.append(
            {
                "Run": label,
                "Seeds": " ".join(str(s) for s, _ in members),
                "MRR per seed": " ".join(f"{v:.2f}" for v in mrr),
                "MRR mean": mrr.mean(),
                "MRR SD": sd(mrr),
                "Acc mean": acc.mean(),
                "Acc SD": sd(acc),
                f"MRR seed {seed}": 100 * iv.value,
                f"MRR seed {seed} lo": 100 * iv.low,
                f"MRR seed {seed} hi": 100 * iv.high,
            }
        )
        shown.append(
            {
                "Run": label,
                "Seeds": rows[-1]["Seeds"],
                "MRR per seed": rows[-1]["MRR per seed"],
                "MRR mean ± SD": f"{mrr.mean():.2f} ± {sd(mrr):.2f}",
                "Acc mean ± SD": f"{acc.mean():.2f} ± {sd(acc):.2f}",
                f"MRR seed {seed} [95 %]": _pct(iv),
            }
        )
    df = pd.DataFrame(rows)
    caption = (
        f"Seed spread of the headline runs (Mixed, Conservation, test part): trained with each seed of "
        f"report.seeds (ScratchBERT fine-tuning reseeded; its MLM pretraining is the seed-{seed} one), mean ± "
        f"SD over seeds (SD with n − 1) beside the bootstrap interval over statements of the seed-{seed} run, "
        f"the run every other table shows ({resamples} resamples)." + pools_caption(frames)
    )
    write_tables(df, out_prefix, caption, pd.DataFrame(shown))
    log.info("wrote %s.{md,tex,csv} (%d rows)", out_prefix, len(df))
    return df


def evaluation_paths(
    evaluations: Sequence[Evaluation], root: str | os.PathLike = X.EVAL_ROOT
) -> dict[Evaluation, Path]:
    """Each evaluation's JSON path (a folder input holds it under the evaluation's file name)."""
    return {ev: ev.path(root) for ev in evaluations}
