"""One pair's symbol replacement: where the proof's replaceable symbols stand in its tokens (the
*slots*), renaming them, and the pair at one level (:func:`replace_pair`).

This is the XML work of symbol replacement, done once per pair whatever the level: parse the
statement and the proof, classify their ``mi`` elements (:func:`proofmatch.data.symbols.classify`),
and linearize the proof with every replaceable ``mi`` marked, so that the tokens say which of
them stand for a replaceable letter (:func:`analyze_pair`). A level is then a mapping over letters
(:mod:`proofmatch.data.symbols`) applied to those slots (:func:`apply_mapping`), with no XML left
to read.

Why a module of its own: :mod:`proofmatch.data.symbols` decides over symbol sets and never sees
a tree; :mod:`proofmatch.data.replace` reads and writes the files (the symbols file, a level's
file, a split's rows). This is what lies between: one pair's fragments to symbol sets and slots.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lxml import etree

from proofmatch.data.linearize import (
    iter_maths,
    linearize_element,
    linearize_fragment,
    parse_fragment,
)
from proofmatch.data.mathml import presentation
from proofmatch.data.symbols import (
    DEFAULT_ALPHA,
    DEFAULT_PROTECTED,
    DEFAULT_ROUNDING,
    Symbols,
    check_level,
    classify,
    plan_mapping,
)
from proofmatch.data.views import MATH_PREFIX, math_token, split_math

# Linearization runs with every replaceable mi renamed to a private-use character (one per
# letter), so the tokens it yields say which of them come from a replaceable mi: the slots.
SLOT_BASE = 0xF0000  # Supplementary Private Use Area-A


@dataclass
class PairSymbols:
    """What every level needs of one pair: symbol sets, the proof's tokens and its slots."""

    statement: Symbols
    proof: Symbols
    tokens: list[str]  # the proof's tokens (linearization of its presentation trees)
    slots: list[int]  # indices of the tokens that stand for a replaceable mi


def _presentation_in_place(root: etree._Element) -> tuple[etree._Element, list[etree._Element]]:
    """Swap each math that linearization reads for its presentation copy.

    Returns the (possibly new) root and the copies, whose ``mi`` elements can then be renamed.
    """
    copies = []
    for math in list(iter_maths(root)):
        pres = presentation(math)
        parent = math.getparent()
        if parent is None:  # the fragment is a bare <math>
            return pres, [pres]
        pres.tail = math.tail
        parent.replace(math, pres)
        copies.append(pres)
    return root, copies


def analyze_pair(statement_xml: str, proof_xml: str) -> PairSymbols:
    """Parse both fragments once and find the proof's slots; may raise
    :class:`proofmatch.data.linearize.FragmentError`."""
    statement, _ = classify(presentation(m) for m in iter_maths(parse_fragment(statement_xml)))
    proof_root, trees = _presentation_in_place(parse_fragment(proof_xml))
    proof, occurrences = classify(trees)
    alphabet = sorted(proof.candidates)
    marks = {c: chr(SLOT_BASE + k) for k, c in enumerate(alphabet)}
    for mi, char in occurrences:
        mi.text = marks[char]
    tokens, slots = linearize_element(proof_root, presented=True)[0], []
    first, last = chr(SLOT_BASE), chr(SLOT_BASE + len(alphabet) - 1)
    for i, token in enumerate(tokens):
        if token[:1] == MATH_PREFIX and first <= token[1:2] <= last:
            symbol, font = split_math(token)
            if len(symbol) == 1:
                tokens[i] = math_token(alphabet[ord(symbol) - SLOT_BASE], font)
                slots.append(i)
    return PairSymbols(statement, proof, tokens, slots)


def apply_mapping(
    tokens: Sequence[str], slots: Iterable[int], mapping: dict[str, str]
) -> list[str]:
    """The proof's tokens with each slot's letter renamed by ``mapping`` (font suffix kept)."""
    out = list(tokens)
    for i in slots:
        symbol, font = split_math(out[i])
        target = mapping.get(symbol, symbol)
        if target != symbol:
            out[i] = math_token(target, font)
    return out


def replace_pair(
    statement_xml: str,
    proof_xml: str,
    level: str,
    rng: random.Random,
    alpha: float | None = DEFAULT_ALPHA,
    protected: Sequence[str] = DEFAULT_PROTECTED,
    rounding: str | None = DEFAULT_ROUNDING,
) -> tuple[list[str], dict[str, str]]:
    """(proof tokens after replacement, mapping) for one pair; ``protected`` counts for ``*_p``
    only, ``alpha`` (the fraction of shared groups kept) and ``rounding`` for ``partial*`` only."""
    check_level(level, alpha, rounding)
    if level == "conservation":
        return linearize_fragment(proof_xml), {}
    pair = analyze_pair(statement_xml, proof_xml)
    mapping = plan_mapping(pair.statement, pair.proof, level, rng, alpha, protected, rounding)
    return apply_mapping(pair.tokens, pair.slots, mapping), mapping
