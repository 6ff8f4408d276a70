"""The paper's findings, each checked against this run's tables with a bootstrap interval.

The paper argues through sentences (§9, Appendix B): "ScratchBERT ... is outperforming both
consistently", "In all settings, global decoding substantially improves accuracy", and so on. Each
is a :class:`Finding` here: the sentence (quoted, with its section), the claim as contrasts over this
run's evaluations, and a verdict. A :class:`Contrast` is a signed sum of per-statement vectors
(``mrr``, ``acc``, ``global_acc``: :mod:`proofmatch.evaluation.bootstrap`) whose mean the paper says
is above 0 (``sign`` +1) or not above 0 (``sign`` -1); its 95 % interval decides it:

* *holds*: every contrast's interval lies on the claimed side of 0;
* *contradicted*: some contrast's interval lies wholly on the other side;
* *undecided at this size*: otherwise (an interval covers 0, or a pool has fewer than
  :data:`MIN_STATEMENTS` statements);
* *not run*: no contrast could be computed (MathBERT without a checkpoint, no probability split).

Contrasts of a finding whose evaluations were not run are left out and named in its note. Terms on
the same statements are resampled paired; terms on different pools (Mixed against Unmixed)
independently. The findings are data: :func:`findings` builds them from :mod:`proofmatch.experiments`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.artifacts import read_json
from proofmatch.evaluation import bootstrap as B
from proofmatch.experiments import Evaluation, Run

log = logging.getLogger(__name__)

MIN_STATEMENTS = 10
HOLDS, CONTRADICTED, UNDECIDED, NOT_RUN = (
    "holds",
    "contradicted",
    "undecided at this size",
    "not run",
)
LIME = "lime"  # the pseudo-evaluation of Figure 2's math shares (figure2.json)

Term = tuple[float, Any, str]  # (coefficient, Evaluation or LIME key, metric)


@dataclass(frozen=True)
class Contrast:
    label: str
    terms: tuple[Term, ...]
    sign: int = 1


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


def findings() -> list[Finding]:
    """Every finding of the paper's §9 and Appendix B this project checks, in the paper's order.
    It is the list itself, one entry a finding, read top to bottom: why this is long."""
    L, E = X.LEVELS, X.ENCODER_NAMES
    out = [
        Finding(
            "scratchbert_over_npt",
            "§9.1",
            "ScratchBERT, which shares MathBERT architecture and NPT customized "
            "vocabulary, is outperforming both consistently.",
            "ScratchBERT-Local MRR > NPT-Local MRR at every level",
            tuple(_diff(_name(lv), _local("scratchbert", lv), _local("npt", lv)) for lv in L),
        ),
        Finding(
            "scratchbert_over_mathbert",
            "§9.1",
            "ScratchBERT, which shares MathBERT architecture and NPT "
            "customized vocabulary, is outperforming both consistently.",
            "ScratchBERT-Local MRR > MathBERT-Local MRR at every level",
            tuple(_diff(_name(lv), _local("scratchbert", lv), _local("mathbert", lv)) for lv in L),
        ),
        Finding(
            "npt_over_mathbert",
            "§9.1",
            "it performs worse than the less complex NPT encoder, which is trained "
            "solely on the downstream task across all symbol replacement levels and decoders.",
            "NPT-Local MRR > MathBERT-Local MRR at every level",
            tuple(_diff(_name(lv), _local("npt", lv), _local("mathbert", lv)) for lv in L),
        ),
        Finding(
            "conservation_best",
            "§9.1",
            "Best performance is achieved when no symbol is replaced (Conservation)",
            "Conservation MRR > Partial and > Full MRR, NPT-Local and ScratchBERT-Local",
            tuple(
                _diff(f"{E[enc]} C−{_name(lv)[0]}", _local(enc, "conservation"), _local(enc, lv))
                for enc in ("npt", "scratchbert")
                for lv in ("partial", "full")
            ),
        ),
        Finding(
            "global_decoding",
            "§9.1",
            "In all settings, global decoding substantially improves accuracy.",
            "global accuracy > local accuracy of every Local run, every level",
            tuple(
                _diff(
                    f"{E[enc]} {_name(lv)}",
                    _local(enc, lv),
                    _local(enc, lv),
                    "global_acc",
                    metric_b="acc",
                )
                for enc in ("npt", "scratchbert", "mathbert")
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
            "Hybrid global accuracy not above Local global accuracy, ScratchBERT and MathBERT (claimed side: ≤ 0)",
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
            "NPT-Local and ScratchBERT-Local MRR > TF-IDF (reference code) at every level",
            tuple(
                _diff(
                    f"{E[enc]} {_name(lv)}",
                    _local(enc, lv),
                    X.baseline("mixed", "tfidf_paper", lv, "test"),
                )
                for enc in ("npt", "scratchbert")
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
            "Conservation-trained MRR on Conservation > on Partial and > on Full (Mixed)",
            tuple(
                _diff(
                    f"test {_name(t)}",
                    _cross("mixed", "conservation", "conservation"),
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
            "the shift C↔T costs less than the shift to Partial: C→T > C→P and T→C > T→P in MRR (Mixed)",
            (
                _diff(
                    "trained C",
                    _cross("mixed", "conservation", "trans"),
                    _cross("mixed", "conservation", "partial"),
                ),
                _diff(
                    "trained T",
                    _cross("mixed", "trans", "conservation"),
                    _cross("mixed", "trans", "partial"),
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
            "Mixed MRR > Unmixed MRR of the in-domain model at every level (unpaired)",
            tuple(_diff(_name(lv), _cross("mixed", lv, lv), _cross("unmixed", lv, lv)) for lv in L),
        ),
        Finding(
            "protected_partial",
            "§9.4",
            "Table 6 shows that training the ScratchBERT-Local-Local model using the "
            "Partial+P replacement method results in slightly better results.",
            "Partial+P-trained MRR > Partial-trained MRR on both test levels (pr split)",
            tuple(
                _diff(f"test {_name(t)}", _cross("pr", "partial_p", t), _cross("pr", "partial", t))
                for t in RT.TABLE6_TEST
            ),
        ),
        Finding(
            "protected_full",
            "§9.4",
            "the pattern re-occurs with all symbol replacement methods.",
            "Full+P-trained MRR > Full-trained MRR on both test levels (pr split)",
            tuple(
                _diff(f"test {_name(t)}", _cross("pr", "full_p", t), _cross("pr", "full", t))
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
            "App. B",
            "Cumulative distribution of proofs in the development set, by number of statements "
            "to which they are assigned with the local decoding method.",
            "local decoding gives hubs: a share > 0 of statements have a local top-1 proof that is also another's",
            (Contrast("Table 7 run, dev", ((1.0, RT.table7().rows[0].cells[0], "shared_top1"),)),),
        ),
    ]
    return out


# ----------------------------------------------------------------------------- verdicts


def lime_frame(shares_json: str | os.PathLike) -> pd.DataFrame:
    """Figure 2's math shares as a per-pair frame with one column per model (figure2.json)."""
    panels = pd.DataFrame(read_json(shares_json)["panels"])
    return panels.pivot(index="pair_id", columns="model", values="math_share").sort_index()


def contrast_interval(
    contrast: Contrast, frames: Mapping[Any, pd.DataFrame], resamples: int, seed: int
) -> tuple[B.Interval, int]:
    """The interval of the contrast's mean and its smallest pool; terms on one pool resampled paired,
    pools apart independently (each its own seed offset)."""
    pools: dict[tuple[str, ...], list[np.ndarray]] = {}
    for coef, ev, metric in contrast.terms:
        frame = frames[ev]
        pools.setdefault(tuple(frame.index), []).append(
            coef * frame[metric].to_numpy(dtype=np.float64)
        )
    value, draws = 0.0, 0.0
    for k, vectors in enumerate(pools.values()):
        v = np.sum(vectors, axis=0)
        value += float(v.mean())
        draws = draws + B.draw_counts(v.size, resamples, seed + 1000 * k) @ v / v.size
    tail = 0.025
    low, high = np.quantile(draws, [tail, 1 - tail])
    return B.Interval(value, float(low), float(high)), min(len(p) for p in pools)


def verdict(signs: Sequence[int]) -> str:
    """The finding's verdict from each contrast's side (+1 claimed side, -1 other side, 0 neither)."""
    if not signs:
        return NOT_RUN
    if any(s < 0 for s in signs):
        return CONTRADICTED
    return HOLDS if all(s > 0 for s in signs) else UNDECIDED


def judge(
    finding: Finding,
    frames: Mapping[Any, pd.DataFrame],
    resamples: int,
    seed: int,
    caveats: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One row of the findings table: the finding, each contrast's numbers and the verdict;
    ``caveats`` (encoder -> text, :func:`caveats`) joins the note of a finding judged on that
    encoder's runs (a stand-in checkpoint: its verdict is about the stand-in)."""
    numbers, signs, left_out = [], [], []
    for c in finding.contrasts:
        if any(t[1] not in frames for t in c.terms):
            left_out.append(c.label)
            continue
        iv, n = contrast_interval(c, frames, resamples, seed)
        side = 0 if n < MIN_STATEMENTS else iv.excludes_zero() * c.sign
        signs.append(side)
        numbers.append(
            f"{c.label}: {100 * iv.value:+.1f} [{100 * iv.low:+.1f}, {100 * iv.high:+.1f}]"
            + (f" (n = {n})" if n < MIN_STATEMENTS else "")
        )
    note = f"not run: {', '.join(left_out)}" if left_out else ""
    stand_ins = [
        text
        for encoder, text in (caveats or {}).items()
        if numbers and any(X.learned_encoder(ev.model) == encoder for ev in finding.evaluations())
    ]
    note = "; ".join(filter(None, [note, *stand_ins]))
    return {
        "Finding": finding.key,
        "Section": finding.section,
        "Paper": f"“{finding.quote}”",
        "Checked as": finding.claim,
        "Numbers (points, 95 % interval)": "; ".join(numbers).replace("-", "−"),
        "Verdict": verdict(signs),
        "Note": note,
    }


def findings_table(
    frames: Mapping[Any, pd.DataFrame],
    resamples: int,
    seed: int,
    found: Iterable[Finding] | None = None,
    caveats: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Every finding's row (:func:`judge`)."""
    return pd.DataFrame([judge(f, frames, resamples, seed, caveats) for f in (found or findings())])


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
    "Findings of the paper checked on this run: each sentence of the paper (§9, Appendix B) as contrasts "
    "over this run's test evaluations (MRR or accuracy, in points), with 95 % bootstrap intervals over the "
    "pool's statements ({resamples} resamples, paired on one pool). holds: every interval on the claimed side "
    "of 0; contradicted: one wholly on the other side; undecided at this size: otherwise, or a pool under "
    f"{MIN_STATEMENTS} statements; not run: nothing to compare. One seed (config seed) per run."
)
