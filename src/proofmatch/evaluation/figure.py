"""Figure 2: LIME explanations of two statement-proof pairs under two models (paper §9.5, App. D).

Paper §9.5: "We examine ScratchBERT-Local-Local trained with the Conservation setup and with Full
replacement. Both are applied to original test examples." Its Figure 2 shows two test pairs, each
under both models: "the model that was trained in the symbol conservation setup (a and c) and
their corresponding LIME visualizations for the model that was trained in the full symbol
replacement setup (b and d)". This module draws the same four panels: (a) pair 1 / Conservation,
(b) pair 1 / Full, (c) pair 2 / Conservation, (d) pair 2 / Full, all on the original
(conservation) pairs.

Explanation. The statement and the proof are joined into one text (tokens separated by spaces,
statement and proof by a newline) and explained with ``lime.lime_text.LimeTextExplainer``:

* ``split_expression=r"\\s+"``: LIME's default ``\\W+`` would treat ``+ = ≤ ∩`` as separators, so
  math symbols could never be features; tokens never contain whitespace here (any inner
  whitespace is shown as ``_``), so LIME's features are exactly our tokens;
* ``bow=False``: one feature per token *position*, so two occurrences of ``$M`` are explained
  separately; a removed token is replaced by ``mask_string`` = the matcher's ``unk_token``
  attribute (``"[UNK]"`` when it has none), i.e. it is masked in place, not deleted;
* ``class_names=["mismatch", "match"]``; the classifier function gets all perturbed texts at
  once, encodes them in batches, and returns ``[1 - p, p]`` where ``p`` is the model's match
  probability: the softmax of the (perturbed) pair's score against the scores of the perturbed
  statement with a fixed set of other proofs of the same part (seeded sample; ``n_others``).
  This matches how the models are trained (softmax over in-batch proofs, paper §7.1).

The paper's two pairs were picked by hand (Lemma 3.2 of arXiv:0810.0041 and Lemma 4.1.9 of
arXiv:0803.3332); here they are chosen deterministically: pairs are ranked by having at most
``max_tokens`` tokens in statement + proof, then by the number of distinct math symbols statement
and proof share (more first), then by length (shorter first), then by pair_id; the best pair is
taken, then the best pair of another article (as the paper's two in Figure 2 come from two articles). Before all of
these, a pair must be *matched*: its own proof ranked first among the part's proofs by every
model explained (:func:`top1_matched`), as the examples of the paper's Figure 2 are, so the figure explains what
a model matches, not a miss; when fewer pairs are, the others are taken and their panel titles
say they are not top 1. If no pair is that short, the shortest pairs win. The same perturbation samples (LIME seed) and the same
other proofs serve both models of one pair, so their panels differ only by the model.

The panels are drawn by :mod:`proofmatch.evaluation.panels`: one per pair and model, each
with a title and the model's P(match) and LIME's local fit R², its tokens coloured by weight.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from proofmatch import config
from proofmatch.artifacts import write_json
from proofmatch.data import views as tok
from proofmatch.data.splits import read_part
from proofmatch.evaluation.evaluate import PairScorer, _load_matcher
from proofmatch.evaluation.panels import Explanation, draw_panels
from proofmatch.logs import setup_logging
from proofmatch.scoring.tokens import display_token, mask_token, token_lists

log = logging.getLogger(__name__)

CLASS_NAMES = ["mismatch", "match"]


# ----------------------------------------------------------------------------- choosing the pair


def shared_math(statement: Sequence[str], proof: Sequence[str]) -> int:
    """Number of distinct math tokens that occur in both the statement and the proof."""
    return len({t for t in statement if tok.is_math(t)} & {t for t in proof if tok.is_math(t)})


def pick_pairs(
    data: pd.DataFrame, n: int = 2, max_tokens: int = 120, matched: np.ndarray | None = None
) -> list[int]:
    """Row positions of the ``n`` pairs to explain, best first, from distinct articles where the
    data has an ``article_id`` column and enough articles (module docstring); ``matched``: per
    row, whether every model ranks the pair's own proof first: those pairs come first."""
    if data.empty:
        raise ValueError("no pairs to choose from")
    st = token_lists(data["statement_tokens"])
    pr = token_lists(data["proof_tokens"])
    length = np.array([len(s) + len(p) for s, p in zip(st, pr)])
    ok = np.array([len(s) > 0 and len(p) > 0 for s, p in zip(st, pr)])
    if ok.sum() < n:
        raise ValueError(
            f"need {n} pairs with a non-empty statement and proof, have {int(ok.sum())}"
        )
    shared = np.array([shared_math(s, p) for s, p in zip(st, pr)])
    fits = length <= max_tokens
    unmatched = np.zeros(len(data), bool) if matched is None else ~np.asarray(matched, bool)
    key = pd.DataFrame(
        {
            "bad": ~ok,
            "unmatched": unmatched,
            "long": ~fits,
            "shared": -shared,
            "length": length,
            "pair_id": data["pair_id"].astype(str).to_numpy(),
        }
    )
    if not fits[ok].any():
        log.warning("no pair has <= %d tokens; explaining the shortest ones", max_tokens)
        key["long"] = False
        key["shared"] = 0
    ranked = (
        key[~key["bad"]]
        .sort_values(["unmatched", "long", "shared", "length", "pair_id"], kind="stable")
        .index
    )
    articles = (
        data["article_id"].astype(str).to_numpy() if "article_id" in data else np.arange(len(data))
    )
    chosen: list[int] = []
    for row in ranked:
        if articles[row] not in {articles[c] for c in chosen}:
            chosen.append(int(row))
            if len(chosen) == n:
                return chosen
    log.warning(
        "only %d article(s) among the candidate pairs; the %d pairs share an article",
        len(chosen),
        n,
    )
    rest = [int(r) for r in ranked if r not in chosen]
    return chosen + rest[: n - len(chosen)]


def top1_matched(matcher: PairScorer, data: pd.DataFrame, batch_size: int) -> np.ndarray:
    """Per pair of ``data``: whether ``matcher`` ranks its own proof first among the part's
    proofs (the score matrix as one product of the model's factors; a tie is not first)."""
    A, B, rb, cb = (
        np.asarray(x, np.float64)
        for x in matcher.factors(
            token_lists(data["statement_tokens"]),
            token_lists(data["proof_tokens"]),
            batch_size=batch_size,
        )
    )
    S = A @ B.T + rb.reshape(-1, 1) + cb.reshape(1, -1)
    own = np.diag(S)
    return (S < own[:, None]).sum(axis=1) == len(own) - 1


# ----------------------------------------------------------------------------- LIME


def match_probability_fn(
    matcher: PairScorer,
    statement: list[str],
    proof: list[str],
    others: list[list[str]],
    unk: str,
    batch_size: int = 64,
    progress: bool = True,
) -> Callable[[list[str]], np.ndarray]:
    """LIME's classifier function: perturbed joint texts -> [[1 - p, p], ...]."""
    n_s = len(statement)
    shown = [display_token(t) for t in statement + proof]
    # others' proof factors once (factors wants statement/proof lists of equal length)
    _, B_o, _, cb_o = matcher.factors([statement] * len(others), others, batch_size=batch_size)
    B_o = np.asarray(B_o, np.float64)
    cb_o = np.asarray(cb_o, np.float64).reshape(-1)

    def to_tokens(text: str) -> tuple[list[str], list[str]]:
        pieces = text.split()
        if len(pieces) != len(shown):
            raise ValueError(f"perturbed text has {len(pieces)} tokens, expected {len(shown)}")
        full = [
            orig if piece == disp else unk
            for orig, disp, piece in zip(statement + proof, shown, pieces)
        ]
        return full[:n_s], full[n_s:]

    def classifier_fn(texts: list[str]) -> np.ndarray:
        probs = np.empty(len(texts), np.float64)
        starts = range(0, len(texts), batch_size)
        for start in tqdm(
            starts, desc="LIME samples", unit="batch", disable=not progress or len(starts) < 2
        ):
            pairs = [to_tokens(t) for t in texts[start : start + batch_size]]
            A, B, rb, cb = (
                np.asarray(x, np.float64)
                for x in matcher.factors(
                    [p[0] for p in pairs], [p[1] for p in pairs], batch_size=batch_size
                )
            )
            rb, cb = rb.reshape(-1), cb.reshape(-1)
            own = np.einsum("ij,ij->i", A, B) + rb + cb
            other = A @ B_o.T + rb[:, None] + cb_o[None, :]
            top = np.maximum(own, other.max(axis=1, initial=-np.inf))
            e_own = np.exp(own - top)
            probs[start : start + len(pairs)] = e_own / (
                e_own + np.exp(other - top[:, None]).sum(axis=1)
            )
        return np.stack([1.0 - probs, probs], axis=1)

    return classifier_fn


def explain_pair(
    matcher: PairScorer,
    statement: list[str],
    proof: list[str],
    others: list[list[str]],
    samples: int,
    seed: int,
    title: str = "",
    batch_size: int = 64,
    pair_id: str = "",
) -> Explanation:
    """Explain the match probability of one statement-proof pair with LIME (module docstring)."""
    from lime.lime_text import LimeTextExplainer

    if not statement or not proof:
        raise ValueError("cannot explain a pair with an empty statement or proof")
    if not others:
        raise ValueError("need at least one other proof to define the match probability")
    unk = mask_token(matcher)
    fn = match_probability_fn(matcher, statement, proof, others, unk, batch_size)
    shown = [display_token(t) for t in statement + proof]
    text = " ".join(shown[: len(statement)]) + "\n" + " ".join(shown[len(statement) :])
    explainer = LimeTextExplainer(
        class_names=CLASS_NAMES,
        split_expression=r"\s+",
        bow=False,
        mask_string=unk,
        random_state=seed,
    )
    exp = explainer.explain_instance(
        text, fn, labels=(1,), num_features=len(shown), num_samples=samples
    )
    weights = np.zeros(len(shown))
    for fid, w in exp.as_map()[1]:
        weights[fid] = w
    p = float(fn([text])[0, 1])
    r2 = float(exp.score[1] if isinstance(exp.score, dict) else exp.score)
    order = np.argsort(-np.abs(weights))[:10]
    log.info(
        "%s: P(match)=%.3f R2=%.2f; strongest: %s",
        title or "explanation",
        p,
        r2,
        ", ".join(f"{shown[i]}({weights[i]:+.3f})" for i in order),
    )
    return Explanation(
        title,
        shown,
        [tok.is_math(t) for t in statement + proof],
        weights,
        len(statement),
        p,
        r2,
        pair_id,
    )


# ----------------------------------------------------------------------------- entry points


def figure_from_matchers(
    matchers: Sequence[tuple[str, PairScorer]],
    data: pd.DataFrame,
    out_png: str | os.PathLike,
    out_pdf: str | os.PathLike,
    samples: int,
    seed: int,
    max_tokens: int = 120,
    n_others: int = 99,
    batch_size: int = 64,
    n_pairs: int = 2,
) -> list[Explanation]:
    """Explain the ``n_pairs`` chosen pairs of ``data`` under each (title, matcher); one panel per
    pair and matcher, pair by pair, lettered (a), (b), ... as in the paper's Figure 2."""
    if len(data) < 2:
        raise ValueError("the part has a single pair; need other proofs for the match probability")
    matched = np.ones(len(data), bool)
    for _, m in matchers:
        matched &= top1_matched(m, data, batch_size)
    log.info(
        "%d of %d pairs have their own proof ranked first by every model", matched.sum(), len(data)
    )
    if matched.sum() < n_pairs:
        log.warning(
            "fewer than %d pairs are matched (top 1) by every model; the panels say which are not",
            n_pairs,
        )
    rows = pick_pairs(data, n_pairs, max_tokens, matched)
    statements = token_lists(data["statement_tokens"])
    proofs = token_lists(data["proof_tokens"])
    rng = np.random.default_rng(seed)
    panels = []
    for k, row in enumerate(rows, start=1):
        rest = np.delete(np.arange(len(data)), row)
        others = [
            proofs[j]
            for j in np.sort(rng.choice(rest, size=min(n_others, rest.size), replace=False))
        ]
        pair_id = str(data["pair_id"].iloc[row])
        log.info(
            "pair %d: %s (%d statement + %d proof tokens, %d shared math symbols) against %d other proofs",
            k,
            pair_id,
            len(statements[row]),
            len(proofs[row]),
            shared_math(statements[row], proofs[row]),
            len(others),
        )
        for title, m in matchers:
            letter = chr(ord("a") + len(panels))
            panels.append(
                explain_pair(
                    m,
                    statements[row],
                    proofs[row],
                    others,
                    samples,
                    seed,
                    f"({letter}) Example {k}: {title} — {pair_id}"
                    + ("" if matched[row] else " (not top 1 under every model)"),
                    batch_size,
                    pair_id,
                )
            )
    draw_panels(panels, out_png, out_pdf)
    return panels


def math_share(panel: Explanation) -> float:
    """The share of a panel's positive LIME weight (support of "match") that falls on math tokens:
    §9.5's "heavily relies on the mathematical tokens" as one number (NaN without positive weight)."""
    positive = np.clip(panel.weights, 0, None)
    total = float(positive.sum())
    return (
        float(positive[np.asarray(panel.is_math, dtype=bool)].sum() / total)
        if total > 0
        else float("nan")
    )


def write_shares(
    panels: Sequence[Explanation], models: Sequence[str], out_json: str | os.PathLike
) -> None:
    """Each panel's pair, model and :func:`math_share` (the findings table reads them)."""
    rows = [
        {
            "pair_id": p.pair_id,
            "model": models[i % len(models)],
            "math_share": math_share(p),
            "p_match": p.p_match,
            "r2": p.r2,
        }
        for i, p in enumerate(panels)
    ]
    write_json({"panels": rows}, out_json)


def model_label(run_dir: str | os.PathLike) -> str:
    """A run's model as the tables name it (``ScratchBERT-Local-Local``: encoder, training mode,
    local decoding), read from its folder ``…/{encoder}-{mode}/{level}-{view}``; else the
    folder's name."""
    from proofmatch.registry.encoders import ENCODERS

    name = Path(run_dir).parent.name
    encoder, _, mode = name.partition("-")
    if encoder in ENCODERS and mode:
        return f"{ENCODERS[encoder].label}-{mode.capitalize()}-Local"
    return name or str(run_dir)


def figure2(
    run_conservation: str | os.PathLike,
    run_full: str | os.PathLike,
    data_parquet: str | os.PathLike,
    out_png: str | os.PathLike,
    out_pdf: str | os.PathLike,
    samples: int,
    seed: int,
    part: str = "test",
    max_tokens: int = 120,
    n_others: int = 99,
    batch_size: int = 64,
    n_pairs: int = 2,
    out_json: str | os.PathLike | None = None,
) -> None:
    """Figure 2: a Conservation-trained and a Full-trained model explained on two original pairs;
    ``out_json``: each panel's share of positive weight on math tokens (:func:`write_shares`)."""
    data = read_part(data_parquet, part)
    matchers = [
        (
            f"{model_label(run_conservation)} trained with symbol conservation",
            _load_matcher(run_conservation),
        ),
        (f"{model_label(run_full)} trained with full symbol replacement", _load_matcher(run_full)),
    ]
    panels = figure_from_matchers(
        matchers, data, out_png, out_pdf, samples, seed, max_tokens, n_others, batch_size, n_pairs
    )
    if out_json is not None:
        write_shares(panels, ["conservation", "full"], out_json)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run-conservation", required=True, help="trained run folder, Conservation level"
    )
    parser.add_argument("--run-full", required=True, help="trained run folder, Full level")
    parser.add_argument(
        "--data",
        required=True,
        help="the conservation-level data, e.g. results/replaced/mixed/conservation.parquet",
    )
    parser.add_argument("--out-png", required=True, help="figure (PNG)")
    parser.add_argument("--out-pdf", required=True, help="figure (PDF)")
    config.add_option(parser, "--samples", key="figure.lime_samples", type=int, help="LIME samples")
    config.add_option(
        parser, "--seed", key="seed", type=int, help="LIME's seed and the other proofs' draw"
    )
    parser.add_argument("--part", default="test", choices=["dev", "test"], help="part explained")
    parser.add_argument(
        "--pairs",
        type=int,
        default=2,
        help="test pairs to explain (the paper's Figure 2 shows two)",
    )
    parser.add_argument("--log", default=None, help="log file (default: stderr only)")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    figure2(
        args.run_conservation,
        args.run_full,
        args.data,
        args.out_png,
        args.out_pdf,
        args.samples,
        args.seed,
        args.part,
        n_pairs=args.pairs,
    )
    return 0
