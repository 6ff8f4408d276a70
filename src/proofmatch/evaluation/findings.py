"""The paper's findings, each checked against this run's tables with bootstrap intervals.

The paper argues through sentences (§6, §8, §9): "ScratchBERT ... is outperforming both
consistently", "In all settings, global decoding substantially improves accuracy", and so on. Each
is a :class:`Finding` here: the sentence (quoted, with its section), the claim as *cells* (one
:class:`Contrast` each) over this run's evaluations, and a verdict. A contrast is a signed sum of
per-statement vectors (``mrr``, ``acc``, ``global_acc``, ...: :mod:`proofmatch.evaluation.bootstrap`)
minus a constant (``offset``, a number the paper states), and its claim is one of:

* ``sign`` +1: the mean is above 0; -1: it is below 0 (the paper's "not ...");
* ``sign`` 0: the mean lies within ``± margin`` (config ``report.equivalence_margin``, points):
  what the paper calls "minor", "similar" or "slight".

The verdict rule (:func:`verdict`; docs/evaluation.md, "Findings"):

* *not run*: no cell could be computed (MathBERT without a checkpoint, no probability split);
* *not supportable*: a model the finding compares is collapsed (one proof the local top-1 of more
  than half the pool, or an MRR interval that covers chance, H_n / n), or every cell's pool has
  fewer than :data:`MIN_STATEMENTS` statements (such a cell prints no interval);
* *contradicted*: after Holm's step-down correction over the finding's cells, some cell's adjusted
  interval lies wholly on the wrong side (below 0 for +1, above 0 for -1, beyond ± margin for an
  equivalence);
* *holds*: every cell's 95 % interval lies on the claimed side (an equivalence: its 90 % interval
  within ± margin, two one-sided tests at 5 %);
* *undecided at this size*: otherwise.

Each cell's interval is a percentile bootstrap over the pool's statements; terms on one pool are
resampled paired, pools apart independently. Global accuracy is re-solved on every resampled pool
(:func:`proofmatch.decoding.assign.resampled_global_acc`) where the evaluation's k-best lists are
given and the pool is at most ``resolve_max_n``; otherwise it is resampled under the fixed
assignment and the cell says so. Where ``report.seeds`` trained a cell's run several times, its
draws are hierarchical: seeds resampled first, then statements (:meth:`Evidence.term`).
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
from proofmatch import result_tables as RT
from proofmatch.artifacts import read_json
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation.tables import chance_mrr
from proofmatch.experiments import Evaluation, Run

log = logging.getLogger(__name__)

MIN_STATEMENTS = 10
ALPHA = 0.05  # the family-wise error of a finding's "contradicted"
COLLAPSE_SHARE = 0.5  # a model whose one proof is the local top-1 of more than this share collapsed
HOLDS, CONTRADICTED, UNDECIDED, NOT_RUN, NOT_SUPPORTABLE = (
    "holds",
    "contradicted",
    "undecided at this size",
    "not run",
    "not supportable",
)
LIME = "lime"  # the pseudo-evaluation of Figure 2's math shares (figure2.json)
PAPER_HUBS = {"proof_none": 0.40, "proof_multi": 0.23}  # §6: "more than 40 %", "23 %"

Term = tuple[float, Any, str]  # (coefficient, Evaluation or LIME key, metric)


@dataclass(frozen=True)
class Contrast:
    label: str
    terms: tuple[Term, ...]
    sign: int = 1  # +1 above 0, -1 below 0, 0 within ± margin
    offset: float = 0.0  # a constant the paper states, subtracted from the mean (a fraction)


@dataclass(frozen=True)
class Finding:
    key: str
    section: str
    quote: str
    claim: str
    contrasts: tuple[Contrast, ...]

    def evaluations(self) -> list[Evaluation]:
        return list(
            dict.fromkeys(
                t[1] for c in self.contrasts for t in c.terms if isinstance(t[1], Evaluation)
            )
        )

    @property
    def equivalence(self) -> bool:
        return any(c.sign == 0 for c in self.contrasts)


def _local(enc: str, level: str, view: str = "both", mode: str = "local") -> Evaluation:
    return Run("mixed", enc, mode, level, view).evaluation("test")


def _diff(
    label: str,
    a: Evaluation,
    b: Evaluation,
    metric: str = "mrr",
    sign: int = 1,
    metric_b: str | None = None,
) -> Contrast:
    return Contrast(label, ((1.0, a, metric), (-1.0, b, metric_b or metric)), sign)


def _cross(split: str, train: str, test: str) -> Evaluation:
    return Run(split, "scratchbert", "local", train).evaluation("test", test)


def _name(level: str) -> str:
    return X.LEVEL_NAMES[level]


METRIC_NAMES = {"mrr": "MRR", "acc": "Acc", "global_acc": "global Acc"}


def _gain(enc: str, level: str) -> tuple[Term, Term]:
    """Global minus local accuracy of one Local run: what global decoding adds."""
    ev = _local(enc, level)
    return (1.0, ev, "global_acc"), (-1.0, ev, "acc")


def _above_everywhere(a: str, b: str) -> tuple[Contrast, ...]:
    """``a``-Local above ``b``-Local at every level, by MRR, local accuracy and global accuracy."""
    return tuple(
        _diff(f"{_name(lv)} {METRIC_NAMES[m]}", _local(a, lv), _local(b, lv), m)
        for lv in X.LEVELS
        for m in ("mrr", "acc", "global_acc")
    )


def findings() -> list[Finding]:
    """Every finding of the paper's §6, §8 and §9 this project checks, in the paper's order.
    It is the list itself, one entry a finding, read top to bottom: why this is long."""
    L, E = X.LEVELS, X.ENCODER_NAMES
    protected = (("partial_p", "partial"), ("full_p", "full"))
    out = [
        Finding(
            "scratchbert_over_npt",
            "§9.1",
            "ScratchBERT, which shares MathBERT architecture and NPT customized "
            "vocabulary, is outperforming both consistently.",
            "ScratchBERT-Local > NPT-Local at every level, by MRR, Acc and global Acc",
            _above_everywhere("scratchbert", "npt"),
        ),
        Finding(
            "scratchbert_over_mathbert",
            "§9.1",
            "ScratchBERT, which shares MathBERT architecture and NPT "
            "customized vocabulary, is outperforming both consistently.",
            "ScratchBERT-Local > MathBERT-Local at every level, by MRR, Acc and global Acc",
            _above_everywhere("scratchbert", "mathbert"),
        ),
        Finding(
            "npt_over_mathbert",
            "§9.1",
            "it performs worse than the less complex NPT encoder, which is trained "
            "solely on the downstream task across all symbol replacement levels and decoders.",
            "NPT-Local > MathBERT-Local at every level, by MRR, Acc (local decoding) and global Acc",
            _above_everywhere("npt", "mathbert"),
        ),
        Finding(
            "conservation_best",
            "§9.1",
            "Best performance is achieved when no symbol is replaced (Conservation)",
            "Conservation MRR > Partial and > Full MRR, every Local encoder",
            tuple(
                _diff(f"{E[enc]} C−{_name(lv)[0]}", _local(enc, "conservation"), _local(enc, lv))
                for enc in ("npt", "scratchbert", "mathbert")
                for lv in ("partial", "full")
            ),
        ),
        Finding(
            "transposition_similar",
            "§9.1",
            "The models achieve similar performance with Transposition replacement.",
            "Transposition MRR − Conservation MRR within ± the margin, every Local encoder",
            tuple(
                _diff(E[enc], _local(enc, "trans"), _local(enc, "conservation"), sign=0)
                for enc in ("npt", "scratchbert", "mathbert")
            ),
        ),
        Finding(
            "global_decoding",
            "§9.1",
            "In all settings, global decoding substantially improves accuracy.",
            "global accuracy > local accuracy of every Local run, every level",
            tuple(
                Contrast(f"{E[enc]} {_name(lv)}", _gain(enc, lv))
                for enc in ("npt", "scratchbert", "mathbert")
                for lv in L
            ),
        ),
        Finding(
            "global_gain_larger",
            "§9.1",
            "These improvements are more noticeable for the NPT and ScratchBERT encoders.",
            "(global − local Acc) of NPT and of ScratchBERT > that of MathBERT, every level",
            tuple(
                Contrast(
                    f"{E[enc]} {_name(lv)}",
                    _gain(enc, lv) + tuple((-c, ev, m) for c, ev, m in _gain("mathbert", lv)),
                )
                for enc in ("npt", "scratchbert")
                for lv in L
            ),
        ),
        Finding(
            "global_training_npt",
            "§9.1",
            "For NPT, we observe better performance when using global training",
            "NPT-Hybrid global accuracy > NPT-Local global accuracy at every level",
            tuple(
                _diff(_name(lv), _local("npt", lv, mode="hybrid"), _local("npt", lv), "global_acc")
                for lv in L
            ),
        ),
        Finding(
            "global_training_bert",
            "§9.1",
            "but not for ScratchBERT and MathBERT.",
            "Hybrid global accuracy not above Local global accuracy, ScratchBERT and MathBERT (claimed side: < 0)",
            tuple(
                _diff(
                    f"{E[enc]} {_name(lv)}",
                    _local(enc, lv, mode="hybrid"),
                    _local(enc, lv),
                    "global_acc",
                    -1,
                )
                for enc in ("scratchbert", "mathbert")
                for lv in L
            ),
        ),
        Finding(
            "tfidf_below",
            "§8",
            "We discovered that their performance was very low, ranging from 11.4 to "
            "29.8 (MRR), so we did not experiment with them further.",
            "every Local encoder's MRR > TF-IDF (reference code) at every level",
            tuple(
                _diff(
                    f"{E[enc]} {_name(lv)}",
                    _local(enc, lv),
                    X.baseline("mixed", "tfidf_paper", lv, "test"),
                )
                for enc in ("npt", "scratchbert", "mathbert")
                for lv in L
            ),
        ),
        Finding(
            "math_over_text",
            "§9.2",
            "The mathematical formulae input plays a more significant role for both "
            "models than the textual input.",
            "math-only MRR > text-only MRR, NPT and ScratchBERT, Conservation and Full",
            tuple(
                _diff(f"{E[enc]} {_name(lv)}", _local(enc, lv, "math"), _local(enc, lv, "text"))
                for enc in RT.TABLE5_ENCODERS
                for lv in RT.TABLE5_LEVELS
            ),
        ),
        Finding(
            "npt_math_conservation",
            "§9.2",
            "When trained and tested on the Conservation replacement level, "
            "NPT-Local-Local makes better use of the mathematical formulae input than the more expressive, "
            "pre-trained ScratchBERT-Local-Local.",
            "NPT math-only MRR > ScratchBERT math-only MRR at Conservation",
            (
                _diff(
                    "Conservation",
                    _local("npt", "conservation", "math"),
                    _local("scratchbert", "conservation", "math"),
                ),
            ),
        ),
        Finding(
            "npt_sharper_drop",
            "§9.2",
            "NPT-Local-Local suffers from a sharper performance decline than "
            "ScratchBERT-Local-Local when fed with mathematical formulae input.",
            "(NPT math C − F) − (ScratchBERT math C − F) > 0 in MRR",
            (
                Contrast(
                    "math view",
                    (
                        (1.0, _local("npt", "conservation", "math"), "mrr"),
                        (-1.0, _local("npt", "full", "math"), "mrr"),
                        (-1.0, _local("scratchbert", "conservation", "math"), "mrr"),
                        (1.0, _local("scratchbert", "full", "math"), "mrr"),
                    ),
                ),
            ),
        ),
        Finding(
            "scratchbert_text_both",
            "§9.2",
            "ScratchBERT-Local-Local performs better for both replacement levels "
            "when fed with text and complete input.",
            "ScratchBERT MRR > NPT MRR with text and with both inputs, C and F",
            tuple(
                _diff(
                    f"{X.VIEW_NAMES[v]} {_name(lv)}",
                    _local("scratchbert", lv, v),
                    _local("npt", lv, v),
                )
                for v in ("text", "both")
                for lv in RT.TABLE5_LEVELS
            ),
        ),
        Finding(
            "conservation_model_drop",
            "§9.3",
            "We observe a sharp decline in results when ScratchBERT-Local-Local "
            "is trained with Conservation and tested on Partial or Full.",
            "on the Partial and on the Full test, the in-domain model's MRR > the Conservation-trained "
            "model's (Mixed; the mismatch's cost, the test's difficulty held fixed)",
            tuple(
                _diff(
                    f"test {_name(t)}",
                    _cross("mixed", t, t),
                    _cross("mixed", "conservation", t),
                )
                for t in ("partial", "full")
            ),
        ),
        Finding(
            "transposition_minor",
            "§9.3",
            "the replacement shift from Conservation to Transposition and vice "
            "versa resulted in a minor performance drop.",
            "in-domain MRR − shifted MRR within the margin: T on T − C on T, C on C − T on C (Mixed)",
            (
                _diff(
                    "C→T",
                    _cross("mixed", "trans", "trans"),
                    _cross("mixed", "conservation", "trans"),
                    sign=0,
                ),
                _diff(
                    "T→C",
                    _cross("mixed", "conservation", "conservation"),
                    _cross("mixed", "trans", "conservation"),
                    sign=0,
                ),
            ),
        ),
        Finding(
            "partial_resilient",
            "§9.3",
            "It outperforms the rest of the models when applied to out-of-domain "
            "replacement levels and the Conservation replacement level in-domain model.",
            "on each test level t ≠ Partial, the Partial-trained model's MRR > every other model tested off its "
            "level, and > the Conservation model on Conservation (Mixed)",
            tuple(
                _diff(
                    f"test {_name(t)} vs trained {_name(o)}",
                    _cross("mixed", "partial", t),
                    _cross("mixed", o, t),
                )
                for t in ("conservation", "full", "trans")
                for o in L
                if o not in ("partial", t)
            )
            + (
                _diff(
                    "vs Conservation in-domain",
                    _cross("mixed", "partial", "conservation"),
                    _cross("mixed", "conservation", "conservation"),
                ),
            ),
        ),
        Finding(
            "unmixed_lower",
            "§9.3",
            "All models exhibited a reduction in performance when trained and tested "
            "under these conditions.",
            "Mixed MRR > Unmixed MRR, every train level × test level of Table 4 (unpaired)",
            tuple(
                _diff(
                    f"{_name(a)[0]}→{_name(t)[0]}",
                    _cross("mixed", a, t),
                    _cross("unmixed", a, t),
                )
                for a in L
                for t in L
            ),
        ),
        Finding(
            "unmixed_decline_replaced",
            "§9.3",
            "Particularly noteworthy was the decrease in performance observed in models that "
            "were trained using the Conservation and Transposition symbol replacement methods and "
            "evaluated on data using the Partial or Full replacement methods.",
            "Unmixed: on the Partial and Full tests, the in-domain model's MRR > the Conservation- and "
            "the Transposition-trained model's",
            tuple(
                _diff(
                    f"trained {_name(a)} on {_name(t)}",
                    _cross("unmixed", t, t),
                    _cross("unmixed", a, t),
                )
                for a in ("conservation", "trans")
                for t in ("partial", "full")
            ),
        ),
        Finding(
            "protected_partial",
            "§9.4",
            "Table 6 shows that training the ScratchBERT-Local-Local model using the "
            "Partial+P replacement method results in slightly better results.",
            "Partial+P-trained MRR > Partial-trained MRR, and by less than the margin, on both test "
            "levels (pr split)",
            tuple(
                _diff(
                    f"test {_name(t)}{' (within margin)' if s == 0 else ''}",
                    _cross("pr", "partial_p", t),
                    _cross("pr", "partial", t),
                    sign=s,
                )
                for t in RT.TABLE6_TEST
                for s in (1, 0)
            ),
        ),
        Finding(
            "protected_all",
            "§9.4",
            "the pattern re-occurs with all symbol replacement methods.",
            "each +P-trained MRR > the same method's MRR without +P (Partial, Full), on both test "
            "levels (pr split)",
            tuple(
                _diff(
                    f"{_name(p)} on {_name(t)}",
                    _cross("pr", p, t),
                    _cross("pr", plain, t),
                )
                for p, plain in protected
                for t in RT.TABLE6_TEST
            ),
        ),
        Finding(
            "lime_math",
            "§9.5",
            "We observe that the Conservation ScratchBERT-Local-Local model heavily relies on "
            "the mathematical tokens and barely benefits from the text ones. In contrast, the "
            "ScratchBERT-Local-Local model that was trained in the full symbol replacement setup strongly relies "
            "on textual tokens",
            "share of positive LIME weight on math tokens: Conservation model > Full model "
            "(Figure 2's pairs)",
            (Contrast("Figure 2 pairs", ((1.0, LIME, "conservation"), (-1.0, LIME, "full"))),),
        ),
        Finding(
            "hubs",
            "§6",
            "We found that $23\\%$ of the proofs were assigned to at least two different "
            "statements, whereas more than $40\\%$ of proofs were assigned to no statement.",
            "share of proofs that are the local top-1 of no statement > 40 %; share that are the "
            "top-1 of two or more within the margin of 23 % (Table 7's run, dev part)",
            (
                Contrast(
                    "no statement − 40 %",
                    ((1.0, RT.table7().rows[0].cells[0], "proof_none"),),
                    1,
                    PAPER_HUBS["proof_none"],
                ),
                Contrast(
                    "two or more − 23 %",
                    ((1.0, RT.table7().rows[0].cells[0], "proof_multi"),),
                    0,
                    PAPER_HUBS["proof_multi"],
                ),
            ),
        ),
    ]
    return out


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
    records = [
        {
            "Finding": finding.key,
            "Section": finding.section,
            "Verdict": label,
            "Cell": c.label,
            "Claim": {1: "> 0", -1: "< 0", 0: f"within ±{m:g}"}[c.sign],
            "Estimate": 100 * c.value,
            "Lo": np.nan if c.small else 100 * c.low,
            "Hi": np.nan if c.small else 100 * c.high,
            "Adjusted lo": np.nan if c.small else 100 * c.adj_low,
            "Adjusted hi": np.nan if c.small else 100 * c.adj_high,
            "Wrong side (Holm)": c.rejected,
            "On claimed side": c.claimed(ev.margin),
            "n": c.n,
            "Seeds": c.seeds,
            "Global assignment": "fixed" if c.fixed_assignment else "",
            "Paper": np.nan if c.paper is None else 100 * c.paper,
            "Cannot decide": c.undecidable(ev.margin),
        }
        for c in cells
    ]
    return row, records


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
    from proofmatch.spec.encoders import ENCODERS

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
            out[spec.name] = (
                f"{spec.label} column: {found.label()}; the verdict is about that stand-in, "
                f"not the paper's {spec.label}"
            )
    return out


def inputs(not_run: Mapping[Any, str]) -> list[Evaluation]:
    """The evaluations the findings read, leaving out what the config does not run (MathBERT without a
    checkpoint, the pr split without a category): their contrasts show as not run."""
    skip = set(not_run)
    return [
        ev
        for f in findings()
        for ev in f.evaluations()
        if ev.split not in skip and (X.learned_encoder(ev.model) or ev.model) not in skip
    ]


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
