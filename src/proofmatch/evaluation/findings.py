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

The verdict rule (:func:`proofmatch.evaluation.verdicts.verdict`; docs/evaluation.md, "Findings"):

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
draws are hierarchical: seeds resampled first, then statements (:meth:`proofmatch.evaluation.verdicts.Evidence.term`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from proofmatch import experiments as X
from proofmatch import result_tables as RT
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
