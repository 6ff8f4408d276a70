"""Symbol replacement in proofs (paper §5 and Appendix C), on parsed MathML trees.

Why: with the original symbols a model can match a proof to its statement by spotting shared
variable names; renaming the proof's variables tests whether it understands more than that.

A *symbol* is a one-character identifier (``mi``) of the presentation tree whose letter is Latin
(a-z, A-Z) or Greek (lowercase, capitals and the variant forms ϵ ϑ ϕ ϱ ς ϖ), compared without
its font. Rules, as in the paper and the reference code (without its bugs):

* Only the proof changes; only symbols present in both statement and proof are replaced.
* Case coupling: letters are handled in *groups* keyed by the lowercase letter. Mapping ``a→q``
  also maps ``A→Q`` (and ``A`` alone in the statement pulls ``a`` along), including proof
  occurrences of the coupled case that are absent from the statement. Greek too (``γ→λ, Γ→Λ``);
  a variant form (``ϵ``) is its own group without a capital.
* Fonts are kept (the text of the ``mi`` changes, its ``mathvariant`` does not: bold a → bold q).
* Never replaced: double-struck letters (ℝ, ℕ, ``mathvariant="double-struck"``) and constants:
  π in any font, and ``e``, ``i``, ``d`` when upright (``mathvariant="normal"``: Euler's number,
  the imaginary unit, the differential). Italic ``e``, ``i`` are ordinary variables (indices,
  identity elements) and are replaced.
* A target letter never occurs anywhere in the pair (statement or proof, any font, including
  the double-struck and constant occurrences and the other script's capitals), and targets are
  distinct: replacement never merges two symbols nor creates an overlap with the statement. If
  no letter is left, the group is kept and recorded in the mapping as ``c→c``.
* Latin maps to Latin, Greek to Greek. Greek targets exclude omicron (indistinguishable from o);
  a Greek group whose capital occurs in the proof takes a letter whose capital differs from Latin
  (Γ Δ Θ Λ Ξ Σ Υ Φ Ψ Ω), so ``Γ`` never turns into a Latin-looking ``Α``.
* Levels: ``conservation`` (nothing), ``full`` (every shared group), ``partial`` (``round(alpha ·
  n)`` shared groups chosen at random, rounding half up; ``alpha`` is the fraction replaced),
  ``trans`` (the shared groups of each script are permuted among themselves with no fixed
  point, within classes of the same shared cases — lowercase-only with lowercase-only, ``Aa``
  with ``Xx`` — so the proof shares exactly the statement's letters again, only permuted; a
  class with a single group keeps it; groups whose letter is also used as a
  constant in the pair, and Π, whose lowercase is the constant π, do not take part), and
  ``partial_p``/``full_p``, which additionally keep the *protected* symbols (default P, E, V, σ,
  ρ: probability, expectation, variance, standard deviation, correlation). Protection is by exact
  character and wins over coupling: with P protected, ``p→q`` still happens and ``P`` stays; a
  protected letter is never a target either. The other levels protect nothing.

Randomness is seeded per pair from ``(seed, level, pair_id)`` with SHA-256 (:func:`pair_rng`), so a
pair gets the same replacement whatever the row order, split or process.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import string
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from lxml import etree
from tqdm import tqdm

from proofmatch.linearize import FragmentError, iter_maths, linearize_element, linearize_fragment, parse_fragment
from proofmatch.logs import setup_logging
from proofmatch.mathml import presentation, single_char_identifiers
from proofmatch.store import atomic_path

log = logging.getLogger(__name__)

LEVELS = ("conservation", "partial", "full", "trans", "partial_p", "full_p")
DEFAULT_PROTECTED = ("P", "E", "V", "σ", "ρ")

LATIN = string.ascii_lowercase
GREEK = "αβγδεζηθικλμνξοπρστυφχψω"  # lowercase base letters; π is a constant, never a target
GREEK_VARIANTS = {"ϵ": "ε", "ϑ": "θ", "ϕ": "φ", "ϱ": "ρ", "ς": "σ", "ϖ": "π"}  # variant -> base
LATIN_TARGETS = LATIN
GREEK_TARGETS = "".join(c for c in GREEK if c not in "πο")
GREEK_CAPITAL_TARGETS = "γδθλξσυφψω"  # capitals Γ Δ Θ Λ Ξ Σ Υ Φ Ψ Ω differ from Latin letters
UPRIGHT_CONSTANTS = frozenset("eid")  # with mathvariant="normal"


def script_of(char: str) -> str | None:
    """``"latin"``, ``"greek"`` or None for a character that is no replaceable letter."""
    if len(char) != 1:
        return None
    if char in string.ascii_letters:
        return "latin"
    if char.lower() in GREEK or char in GREEK_VARIANTS:
        return "greek"
    return None


def group_of(char: str) -> str:
    """Case-coupling key: the lowercase letter (a variant form is its own key)."""
    return char.lower()


def family_of(char: str) -> str:
    """Letter identity for collisions: case and variant form ignored (ϵ, ε, Ε -> ε)."""
    key = char.lower()
    return GREEK_VARIANTS.get(key, key)


def is_constant(char: str, variant: str | None) -> bool:
    return char == "π" or (char in UPRIGHT_CONSTANTS and variant == "normal")


@dataclass
class Symbols:
    """The one-letter identifiers of a fragment's maths."""

    candidates: set[str] = field(default_factory=set)  # replaceable letters
    letters: set[str] = field(default_factory=set)  # every Latin/Greek letter, any font or role
    constants: set[str] = field(default_factory=set)  # letters used as constants
    occurrences: list[tuple[etree._Element, str]] = field(default_factory=list)  # replaceable mi


def collect_symbols(trees: Iterable[etree._Element]) -> Symbols:
    """Classify every one-character ``mi`` of some presentation trees."""
    found = Symbols()
    for tree in trees:
        for mi in single_char_identifiers(tree):
            char, variant = mi.text, mi.get("mathvariant")
            if script_of(char) is None:
                continue
            found.letters.add(char)
            if is_constant(char, variant):
                found.constants.add(char)
            elif variant != "double-struck":
                found.candidates.add(char)
                found.occurrences.append((mi, char))
    return found


def pair_rng(seed: int, level: str, pair_id: str) -> random.Random:
    """A generator that depends only on (seed, level, pair_id): stable across runs and row orders."""
    digest = hashlib.sha256(f"{seed}\x1f{level}\x1f{pair_id}".encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _derangement(items: list[str], rng: random.Random) -> list[str]:
    """A uniformly random permutation of ``items`` (len >= 2) without a fixed point (rejection)."""
    while True:
        perm = items[:]
        rng.shuffle(perm)
        if all(a != b for a, b in zip(items, perm)):
            return perm


def _image(char: str, target: str) -> str:
    """Where ``char`` goes when its group goes to the lowercase ``target`` (case kept)."""
    return target.upper() if char != char.lower() else target


def _check_level(level: str, alpha: float) -> None:
    if level not in LEVELS:
        raise ValueError(f"unknown replacement level {level!r}; expected one of {', '.join(LEVELS)}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1] (the fraction of shared symbols replaced), got {alpha}")


def plan_mapping(
    statement: Symbols,
    proof: Symbols,
    level: str,
    rng: random.Random,
    alpha: float = 0.5,
    protected: Iterable[str] = (),
) -> dict[str, str]:
    """Letter -> letter for the proof's replaceable letters; ``c→c`` marks an exhausted pool.

    Pure over the symbol sets; :func:`replace_pair` applies it to the proof's trees.
    """
    _check_level(level, alpha)
    if level == "conservation":
        return {}
    kept = set(protected) if level.endswith("_p") else set()
    shared = proof.candidates & statement.candidates
    groups = sorted({group_of(c) for c in shared if c not in kept})
    members = {g: sorted(c for c in proof.candidates if group_of(c) == g and c not in kept) for g in groups}
    mapping: dict[str, str] = {}
    if level == "trans":
        in_use = {family_of(c) for c in statement.constants | proof.constants} | {"π"}
        # Permute only groups whose shared letters have the same cases (n with t, B with E, Aa
        # with Xx): the proof then shares exactly the statement's letters again, only permuted.
        classes: dict[tuple[str, str], list[str]] = {}
        for g in groups:
            if family_of(g) in in_use:
                continue
            cases = "".join(sorted("U" if c != c.lower() else "L" for c in shared if group_of(c) == g))
            classes.setdefault((script_of(g), cases), []).append(g)
        for own in classes.values():
            if len(own) < 2:
                continue
            for g, h in zip(own, _derangement(own, rng)):
                mapping.update({c: _image(c, h) for c in members[g]})
        return mapping
    count = len(groups) if level.startswith("full") else int(alpha * len(groups) + 0.5)
    chosen = sorted(rng.sample(groups, count))
    taken = {family_of(c) for c in statement.letters | proof.letters} | {family_of(c) for c in kept}
    for g in chosen:
        if script_of(g) == "latin":
            letters = LATIN_TARGETS
        else:
            capital = any(c != c.lower() for c in members[g])
            letters = GREEK_CAPITAL_TARGETS if capital else GREEK_TARGETS
        pool = [t for t in letters if t not in taken]
        if not pool:
            mapping.update({c: c for c in members[g]})
            continue
        target = rng.choice(pool)
        taken.add(target)
        mapping.update({c: _image(c, target) for c in members[g]})
    return mapping


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


def replace_pair(
    statement_xml: str,
    proof_xml: str,
    level: str,
    rng: random.Random,
    alpha: float = 0.5,
    protected: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """(proof tokens after replacement, mapping) for one pair; ``protected`` counts for ``*_p`` only."""
    _check_level(level, alpha)
    if level == "conservation":
        return linearize_fragment(proof_xml), {}
    statement_root = parse_fragment(statement_xml)
    statement = collect_symbols(presentation(m) for m in iter_maths(statement_root))
    proof_root, proof_trees = _presentation_in_place(parse_fragment(proof_xml))
    proof = collect_symbols(proof_trees)
    mapping = plan_mapping(statement, proof, level, rng, alpha, protected)
    for mi, char in proof.occurrences:
        if char in mapping:
            mi.text = mapping[char]
    return linearize_element(proof_root, presented=True)[0], mapping


OUTPUT_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("part", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("mapping", pa.string()),
    ]
)


def replace_split_file(
    pairs_parquet: str | os.PathLike,
    split_parquet: str | os.PathLike,
    level: str,
    out_parquet: str | os.PathLike,
    seed: int = 0,
    alpha: float = 0.5,
    protected: Sequence[str] = DEFAULT_PROTECTED,
) -> None:
    """Replace symbols in the proofs of one split at one level; one output row per split row.

    The pairs file is read in record batches (only the rows of the split are kept), so memory
    holds the split's tokens, not every fragment of the corpus.
    """
    _check_level(level, alpha)
    bad = [p for p in protected if len(p) != 1]
    if bad:
        raise ValueError(f"protected symbols must be single characters, got {bad}")
    split = pd.read_parquet(split_parquet, columns=["pair_id", "article_id", "part"])
    if split["pair_id"].duplicated().any():
        raise ValueError(f"{split_parquet}: duplicated pair_id, e.g. {split.loc[split['pair_id'].duplicated(), 'pair_id'].iloc[0]!r}")
    wanted = set(split["pair_id"])
    columns = ["pair_id", "statement_tokens", "proof_tokens"]
    if level != "conservation":
        columns += ["statement_xml", "proof_xml"]
    pairs_file = pq.ParquetFile(pairs_parquet)
    missing_cols = [c for c in columns if c not in pairs_file.schema_arrow.names]
    if missing_cols:
        raise ValueError(f"{pairs_parquet}: missing column(s) {missing_cols}")
    results: dict[str, tuple[list[str], list[str], str]] = {}
    n_changed = n_exhausted = 0
    with tqdm(total=len(wanted), desc=f"replace {level}", unit="pair", mininterval=5) as bar:
        for batch in pairs_file.iter_batches(columns=columns, batch_size=512):
            for rec in batch.to_pylist():
                pid = rec["pair_id"]
                if pid not in wanted:
                    continue
                if pid in results:
                    raise ValueError(f"{pairs_parquet}: duplicated pair_id {pid!r}")
                if level == "conservation":
                    tokens, mapping = list(rec["proof_tokens"]), {}
                else:
                    try:
                        tokens, mapping = replace_pair(
                            rec["statement_xml"], rec["proof_xml"], level, pair_rng(seed, level, pid), alpha, protected
                        )
                    except FragmentError as exc:
                        raise ValueError(f"pair {pid!r} passed linearization but its fragment fails now: {exc}") from exc
                n_changed += any(a != b for a, b in mapping.items())
                n_exhausted += sum(a == b for a, b in mapping.items())
                results[pid] = (list(rec["statement_tokens"]), tokens, json.dumps(mapping, ensure_ascii=False, sort_keys=True))
                bar.update()
    absent = [p for p in split["pair_id"] if p not in results]
    if absent:
        raise ValueError(f"{len(absent)} pair id(s) of {split_parquet} are not in {pairs_parquet}, e.g. {absent[0]!r}")
    log.info(
        "%s: %d pairs, %d with replaced symbols, %d symbols kept because no letter was left",
        level, len(split), n_changed, n_exhausted,
    )
    rows = [results[p] for p in split["pair_id"]]
    table = pa.table(
        {
            "pair_id": split["pair_id"].astype(str).tolist(),
            "article_id": split["article_id"].astype(str).tolist(),
            "part": split["part"].astype(str).tolist(),
            "statement_tokens": [r[0] for r in rows],
            "proof_tokens": [r[1] for r in rows],
            "mapping": [r[2] for r in rows],
        },
        schema=OUTPUT_SCHEMA,
    )
    with atomic_path(out_parquet, ".parquet") as tmp:
        pq.write_table(table, tmp)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pairs", help="filtered pairs (results/data/pairs.parquet)")
    parser.add_argument("split", help="split assignment (results/splits/SPLIT.parquet)")
    parser.add_argument("--level", required=True, choices=LEVELS, help="replacement level")
    parser.add_argument("--out", required=True, help="output Parquet (results/replaced/SPLIT/LEVEL.parquet)")
    parser.add_argument("--seed", type=int, default=0, help="global seed (default 0)")
    parser.add_argument("--alpha", type=float, default=0.5, help="fraction of shared symbols replaced by 'partial' (default 0.5)")
    parser.add_argument(
        "--protected", nargs="*", default=list(DEFAULT_PROTECTED),
        help="symbols kept by the *_p levels (default: P E V σ ρ)",
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    replace_split_file(args.pairs, args.split, args.level, args.out, seed=args.seed, alpha=args.alpha, protected=args.protected)
    return 0
