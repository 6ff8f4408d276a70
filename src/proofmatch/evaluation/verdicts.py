"""The verdicts on the paper's findings: per-cell bootstrap intervals, Holm's correction, the
equivalence tests, collapse checks and global decoding re-solved on resampled pools.

Split from :mod:`proofmatch.evaluation.findings`, which keeps what the paper claims (quotes and
contrasts); this module decides each claim on a run's evidence (the rule is in that module's
docstring and docs/evaluation.md, "Findings").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from proofmatch import config
from proofmatch import experiments as X
from proofmatch.artifacts import read_json
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation.captions import chance_mrr
from proofmatch.evaluation.findings import (
    ALPHA,
    COLLAPSE_SHARE,
    CONTRADICTED,
    HOLDS,
    MIN_STATEMENTS,
    NOT_RUN,
    NOT_SUPPORTABLE,
    UNDECIDED,
    Contrast,
    Finding,
    _name,
    findings,
)
from proofmatch.experiments import Evaluation

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------- draws


def lime_frame(shares_json: str | os.PathLike) -> pd.DataFrame:
    """Figure 2's math shares as a per-pair frame with one column per model (figure2.json)."""
    panels = pd.DataFrame(read_json(shares_json)["panels"])
    return panels.pivot(index="pair_id", columns="model", values="math_share").sort_index()


def seed_variant_of(ev: Any) -> Any:
    """The tables' own evaluation behind a seed variant (``seed14``); anything else unchanged."""
    if isinstance(ev, Evaluation) and ev.variant.startswith("seed"):
        return replace(ev, variant="")
    return ev


@dataclass
class Evidence:
    """What the verdicts read: each evaluation's per-statement frame (seed variants of a run under
    their own :class:`Evaluation`), the bootstrap settings, the margin of an equivalence (a
    fraction), each evaluation's k-best lists (positions in the frame's order, scores) for
    re-solving global decoding, and the paper's value of each (evaluation, metric) it reports."""

    frames: Mapping[Any, pd.DataFrame]
    resamples: int
    seed: int
    margin: float
    resolve_max_n: int
    kbest: Mapping[Any, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    paper: Mapping[tuple[Any, str], float] = field(default_factory=dict)
    caveats: Mapping[str, str] = field(default_factory=dict)
    _draws: dict = field(default_factory=dict, repr=False)
    _seeds: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for ev in self.frames:
            self._seeds.setdefault(seed_variant_of(ev), []).append(ev)
        for key, group in self._seeds.items():
            group.sort(key=lambda e: (e is not key, getattr(e, "variant", "")))

    def seeds(self, ev: Any) -> list[Any]:
        """``ev`` and its seed variants that were evaluated, ``ev`` first."""
        return self._seeds.get(ev, [ev])

    def resolved(self, ev: Any, metric: str) -> bool:
        """Whether ``metric`` of ``ev`` is re-solved per resample (global accuracy with k-best lists
        on a pool of at most ``resolve_max_n``)."""
        return (
            metric == "global_acc"
            and ev in self.kbest
            and len(self.frames[ev]) <= self.resolve_max_n
        )

    def _member(self, ev: Any, metric: str, stream: int) -> tuple[float, np.ndarray]:
        key = (ev, metric, stream)
        if key not in self._draws:
            v = self.frames[ev][metric].to_numpy(dtype=np.float64)
            counts = B.draw_counts(v.size, self.resamples, self.seed + 1000 * stream)
            if self.resolved(ev, metric):
                from proofmatch.decoding.assign import resampled_global_acc

                draws = resampled_global_acc(*self.kbest[ev], counts)
                # a resampled pool holds about 63 % distinct pairs, whose assignment is easier:
                # only the draws' spread is used, centred on the pool's own accuracy
                draws = draws - draws.mean() + v.mean()
            else:
                draws = counts @ v / v.size
            self._draws[key] = (float(v.mean()), draws)
        return self._draws[key]

    def term(self, ev: Any, metric: str, stream: int) -> tuple[float, np.ndarray, int]:
        """(value, draws, seeds) of one term. One seed: its statement draws. Several (the run's
        ``report.seeds`` variants): the mean over seeds, drawn hierarchically, each draw resampling
        the seeds with replacement and then the statements (the same statement draws for every seed:
        one pool). Two terms of one run draw the same seeds (paired), two runs independently."""
        group = self.seeds(ev)
        members = [self._member(e, metric, stream) for e in group]
        if len(members) == 1:
            return members[0][0], members[0][1], 1
        values = np.array([m[0] for m in members])
        draws = np.stack([m[1] for m in members])  # seeds x R
        run = list(self._seeds).index(ev)
        rng = np.random.default_rng([self.seed, 7919, stream, run, len(group)])
        picks = rng.integers(0, len(group), size=(self.resamples, len(group)))
        combined = draws[picks, np.arange(self.resamples)[:, None]].mean(axis=1)
        return float(values.mean()), combined, len(group)


@dataclass
class Cell:
    """One contrast's numbers (fractions) and what they decide."""

    label: str
    sign: int
    value: float
    low: float
    high: float
    draws: np.ndarray | None
    n: int
    seeds: int
    fixed_assignment: bool
    paper: float | None = None
    adj_low: float = float("nan")
    adj_high: float = float("nan")
    rejected: bool = False

    @property
    def small(self) -> bool:
        return self.n < MIN_STATEMENTS

    def wrong(self, low: float, high: float, margin: float) -> bool:
        """Whether an interval lies wholly on the wrong side of the claim."""
        if self.sign > 0:
            return high < 0
        if self.sign < 0:
            return low > 0
        return low > margin or high < -margin

    def claimed(self, margin: float) -> bool:
        """The cell's own test passes: 95 % interval on the claimed side; an equivalence: its 90 %
        interval within ± margin (two one-sided tests at 5 %)."""
        if self.small:
            return False
        if self.sign > 0:
            return self.low > 0
        if self.sign < 0:
            return self.high < 0
        lo, hi = np.quantile(self.draws, [0.05, 0.95])
        return bool(-margin < lo and hi < margin)

    def p_wrong(self, margin: float) -> float:
        """The bootstrap's one-sided p-value of the wrong side (the share of draws not on it)."""
        d = self.draws
        if self.sign > 0:
            return float(np.mean(d >= 0))
        if self.sign < 0:
            return float(np.mean(d <= 0))
        return float(min(np.mean(d <= margin), np.mean(d >= -margin)))

    def undecidable(self, margin: float) -> bool:
        """The paper's own effect is smaller than this run's interval half-width (an equivalence:
        the half-width is at least the margin less the paper's effect): this pool cannot decide."""
        half = (self.high - self.low) / 2
        if self.paper is None or self.small:
            return False
        if self.sign == 0:
            return half >= margin - abs(self.paper)
        return abs(self.paper) < half


def contrast_cell(contrast: Contrast, ev: Evidence) -> Cell:
    """The contrast's value and draws: terms on one pool resampled paired, pools apart independently
    (each its own stream of draws); a term with several seeds drawn hierarchically."""
    pools: dict[tuple[str, ...], int] = {}
    value, draws, seeds, fixed, n = -contrast.offset, 0.0, 1, False, None
    paper: float | None = -contrast.offset
    for coef, e, metric in contrast.terms:
        frame = ev.frames[e]
        stream = pools.setdefault(tuple(frame.index), len(pools))
        v, d, s = ev.term(e, metric, stream)
        value += coef * v
        draws = draws + coef * d
        seeds = max(seeds, s)
        fixed |= metric == "global_acc" and not ev.resolved(e, metric)
        n = len(frame) if n is None else min(n, len(frame))
        known = ev.paper.get((e, metric))
        paper = None if paper is None or known is None else paper + coef * known
    draws = np.asarray(draws, dtype=np.float64) - contrast.offset
    low, high = np.quantile(draws, [ALPHA / 2, 1 - ALPHA / 2])
    return Cell(
        contrast.label,
        contrast.sign,
        value,
        float(low),
        float(high),
        draws,
        int(n or 0),
        seeds,
        fixed,
        paper,
    )


def holm(cells: Sequence[Cell], margin: float) -> None:
    """Holm's step-down over the cells (those with an interval): ordered by the p-value of their
    wrong side, the j-th of m gets the interval at level 1 - ALPHA / (m - j); a cell is rejected when
    that interval lies wholly on the wrong side and every cell before it was rejected. Sets each
    cell's adjusted bounds and ``rejected``."""
    tested = sorted((c for c in cells if not c.small), key=lambda c: c.p_wrong(margin))
    going = True
    for j, c in enumerate(tested):
        a = ALPHA / (len(tested) - j)
        c.adj_low, c.adj_high = map(float, np.quantile(c.draws, [a / 2, 1 - a / 2]))
        going = going and c.wrong(c.adj_low, c.adj_high, margin)
        c.rejected = going


def collapsed(ev: Any, frame: pd.DataFrame, resamples: int, seed: int) -> str | None:
    """Why a model's evaluation is noise, or None: one proof the local top-1 of more than half the
    pool, or an MRR interval that covers chance (H_n / n)."""
    if not isinstance(ev, Evaluation) or "top1_share" not in frame or len(frame) < MIN_STATEMENTS:
        return None
    n, who = len(frame), _who(ev)
    share = float(frame["top1_share"].max())
    if share > COLLAPSE_SHARE:
        return f"{who}: one proof is the top-1 of {round(share * n)} of {n} statements"
    iv = B.interval(frame["mrr"].to_numpy(), resamples, seed)
    chance = chance_mrr(n)
    if iv.low <= chance <= iv.high:
        return (
            f"{who}: MRR {100 * iv.value:.1f} [{100 * iv.low:.1f}, {100 * iv.high:.1f}] covers "
            f"chance {100 * chance:.1f}"
        )
    return None


def _who(ev: Evaluation) -> str:
    model = X.METHOD_NAMES.get(ev.model) or X.model_label(ev.model, ev.mode, "local")
    test = f" on {_name(ev.test_level)}" if ev.test_level != ev.level else ""
    view = f", {X.VIEW_NAMES[ev.view]} input" if ev.view != "both" else ""
    return f"{model} {X.SPLIT_NAMES[ev.split]} {_name(ev.level)}{test} ({ev.part}{view})"


def verdict(signs: Sequence[int]) -> str:
    """The uncorrected rule from each cell's side (+1 claimed side, -1 other side, 0 neither); kept
    for the before/after comparison of docs/measured/findings.md. :func:`judge` uses
    :func:`decide`."""
    if not signs:
        return NOT_RUN
    if any(s < 0 for s in signs):
        return CONTRADICTED
    return HOLDS if all(s > 0 for s in signs) else UNDECIDED


def decide(cells: Sequence[Cell], collapses: Sequence[str], margin: float) -> str:
    """The finding's verdict (module docstring)."""
    if not cells:
        return NOT_RUN
    if collapses or all(c.small for c in cells):
        return NOT_SUPPORTABLE
    if any(c.rejected for c in cells):
        return CONTRADICTED
    return HOLDS if all(c.claimed(margin) for c in cells) else UNDECIDED


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def _cell_text(c: Cell, margin: float) -> str:
    if c.small:
        return f"{c.label}: {_points(c.value)} (n = {c.n} < {MIN_STATEMENTS}: no interval)"
    text = f"{c.label}: {_points(c.value)} [{_points(c.low)}, {_points(c.high)}]"
    if not np.isclose(c.adj_low, c.low) or not np.isclose(c.adj_high, c.high):
        text += f" adj. [{_points(c.adj_low)}, {_points(c.adj_high)}]"
    flags = []
    if c.seeds > 1:
        flags.append(f"{c.seeds} seeds")
    if c.fixed_assignment:
        flags.append("fixed assignment")
    if c.undecidable(margin):
        flags.append(f"cannot decide at n = {c.n}: paper {_points(c.paper or 0.0)}")
    return text + (f" ({'; '.join(flags)})" if flags else "")


def tally(cells: Sequence[Cell]) -> tuple[int, int, int]:
    """(above 0, covering 0, below 0) of the cells' 95 % intervals (cells with an interval)."""
    sides = [1 if c.low > 0 else -1 if c.high < 0 else 0 for c in cells if not c.small]
    return sides.count(1), sides.count(0), sides.count(-1)


def judge_cells(finding: Finding, ev: Evidence) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the finding's row, one record per cell with its numbers in points)."""
    cells, left_out = [], []
    for c in finding.contrasts:
        if any(t[1] not in ev.frames for t in c.terms):
            left_out.append(c.label)
            continue
        cells.append(contrast_cell(c, ev))
    holm(cells, ev.margin)
    evaluations = dict.fromkeys(
        t[1] for c in finding.contrasts for t in c.terms if t[1] in ev.frames
    )
    collapses = [
        why
        for e in evaluations
        if (why := collapsed(e, ev.frames[e], ev.resamples, ev.seed)) is not None
    ]
    label = decide(cells, collapses, ev.margin)
    m = 100 * ev.margin
    if finding.equivalence and label in (HOLDS, CONTRADICTED):
        label += f" ({'equivalent within' if label == HOLDS else 'differs by more than'} {m:g})"
    notes = []
    if collapses:
        notes.append("collapsed: " + "; ".join(collapses))
    if left_out:
        notes.append(f"not run: {', '.join(left_out)}")
    if cells:
        learned = {X.learned_encoder(e.model) for e in finding.evaluations()}
        notes += [text for encoder, text in ev.caveats.items() if encoder in learned]
    small = [c for c in cells if c.small]
    if small and len(small) == len(cells):
        notes.append(f"every pool under {MIN_STATEMENTS} statements")
    above, covering, below = tally(cells)
    row = {
        "Finding": finding.key,
        "Section": finding.section,
        "Paper": f"“{finding.quote}”",
        "Checked as": finding.claim,
        "Cells (sentence / here)": f"{len(finding.contrasts)} / {len(cells)}",
        "Numbers (points, 95 % interval; adj.: Holm)": "; ".join(
            _cell_text(c, ev.margin) for c in cells
        ).replace("-", "−"),
        "Tally (above / covering / below 0)": f"{above} / {covering} / {below}",
        "Verdict": label,
        "Note": "; ".join(notes),
    }
    done = iter(cells)
    records = [
        _record(
            finding, label, c.sign, next(done) if c.label not in left_out else c.label, ev.margin
        )
        for c in finding.contrasts
    ]
    return row, records


def _record(finding: Finding, verdict: str, sign: int, cell: Cell | str, margin: float) -> dict:
    """One row of findings.csv: a cell's numbers in points, or a cell of the paper's sentence
    that this run has no evaluation for (``cell`` its label; numbers empty, ``Run`` false)."""
    m = 100 * margin
    head = {"Finding": finding.key, "Section": finding.section, "Verdict": verdict}
    claim = {1: "> 0", -1: "< 0", 0: f"within ±{m:g}"}[sign]
    if isinstance(cell, str):
        return {**head, "Cell": cell, "Run": False, "Claim": claim, **NOT_RUN_NUMBERS}
    shown = (lambda x: np.nan) if cell.small else (lambda x: 100 * x)
    return {
        **head,
        "Cell": cell.label,
        "Run": True,
        "Claim": claim,
        "Estimate": 100 * cell.value,
        "Lo": shown(cell.low),
        "Hi": shown(cell.high),
        "Adjusted lo": shown(cell.adj_low),
        "Adjusted hi": shown(cell.adj_high),
        "Wrong side (Holm)": cell.rejected,
        "On claimed side": cell.claimed(margin),
        "n": cell.n,
        "Seeds": cell.seeds,
        "Global assignment": "fixed" if cell.fixed_assignment else "",
        "Paper": np.nan if cell.paper is None else 100 * cell.paper,
        "Cannot decide": cell.undecidable(margin),
    }


# findings.csv's numbers for a cell this run has no evaluation for.
NOT_RUN_NUMBERS = {
    **dict.fromkeys(("Estimate", "Lo", "Hi", "Adjusted lo", "Adjusted hi"), np.nan),
    "Wrong side (Holm)": False,
    "On claimed side": False,
    "n": 0,
    "Seeds": 0,
    "Global assignment": "",
    "Paper": np.nan,
    "Cannot decide": False,
}


def _evidence(
    frames: Mapping[Any, pd.DataFrame] | Evidence,
    resamples: int,
    seed: int,
    caveats: Mapping[str, str] | None = None,
) -> Evidence:
    if isinstance(frames, Evidence):
        return replace(frames, caveats=caveats) if caveats is not None else frames
    margin = config.default("report.equivalence_margin") / 100
    resolve_max_n = config.default("report.resolve_max_n")
    return Evidence(frames, resamples, seed, margin, resolve_max_n, caveats=caveats or {})


def judge(
    finding: Finding,
    frames: Mapping[Any, pd.DataFrame] | Evidence,
    resamples: int,
    seed: int,
    caveats: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One row of the findings table: the finding, each cell's numbers and the verdict;
    ``caveats`` (encoder -> text, :func:`caveats`) joins the note of a finding judged on that
    encoder's runs (a stand-in checkpoint: its verdict is about the stand-in)."""
    return judge_cells(finding, _evidence(frames, resamples, seed, caveats))[0]


def findings_tables(
    evidence: Evidence, found: Iterable[Finding] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per finding, one row per cell: the numeric columns of findings.csv)."""
    rows, records = [], []
    for f in found or findings():
        row, cells = judge_cells(f, evidence)
        rows.append(row)
        records += cells
    return pd.DataFrame(rows), pd.DataFrame(records)


def findings_table(
    frames: Mapping[Any, pd.DataFrame] | Evidence,
    resamples: int,
    seed: int,
    found: Iterable[Finding] | None = None,
    caveats: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Every finding's row (:func:`judge`)."""
    return findings_tables(_evidence(frames, resamples, seed), found)[0]


def caveats(config: Mapping[str, Any]) -> dict[str, str]:
    """For each encoder whose configured checkpoint is not what the paper used (a note from
    :func:`proofmatch.models.identity.identify`: "not MathBERT"), what its findings' notes say."""
    from proofmatch.models.identity import identify
    from proofmatch.registry.encoders import ENCODERS, checkpoint_label

    out = {}
    for spec in ENCODERS.values():
        source = spec.checkpoint and config["matching"].get(spec.checkpoint)
        if not source:
            continue
        try:
            found = identify(source)
        except (OSError, ValueError):
            continue
        if found.note:
            column = checkpoint_label(spec.checkpoint)
            out[spec.name] = (
                f"{column} column: {found.label()}; the verdict is about that stand-in, "
                f"not the paper's {column}"
            )
    return out


CAPTION = (
    "Findings of the paper checked on this run ({corpus}): each sentence of the paper (§6, §8, §9) as "
    "cells (contrasts over this run's evaluations, MRR or accuracy, in points), each with its 95 % "
    "bootstrap interval over the pool's statements ({resamples} resamples, paired on one pool) and its "
    "Holm-adjusted interval over the finding's cells. holds: every cell's interval on the claimed side "
    "(an equivalence, for the paper's minor, similar or slight: its 90 % interval within ±{margin:g} "
    "points, two one-sided tests); contradicted: after Holm's correction, a cell wholly on the wrong "
    "side (an equivalence: beyond ±{margin:g}); not supportable: a compared model collapsed (one proof "
    f"the top-1 of more than half the pool, or its MRR interval covers chance), or every pool under "
    f"{MIN_STATEMENTS} statements (no interval printed); undecided at this size: otherwise; not run: "
    "nothing to compare. Global accuracy is re-solved on each resampled pool (sparse k-best decoder) "
    "up to {resolve_max_n:,} pairs; a cell marked fixed assignment is conditional on the pool's one "
    "assignment. cannot decide at n: the paper's own effect is smaller than this interval's half-width. "
    "Seeds: {seeds}."
)
