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
  ``trans`` and ``partial_p``/``full_p`` (below).
* ``trans``, §5: "We permute the variables' names such that no symbol remains the same". The
  shared groups exchange their names among themselves: whenever a pair shares two or more
  groups, every one of them gets another group's name (a permutation without a fixed point;
  each occurrence keeps its own case and font, so with ``{G, x}`` shared, ``G→X`` and ``x→g``).
  The permutation prefers, in this order: groups of the same script and the same shared cases
  (lowercase-only with lowercase-only, ``Aa`` with ``Xx``: the proof then shares exactly the
  statement's letters again, only permuted); the same script (groups alone in their case class
  permute among themselves, or a single one joins another class's cycle); other scripts only
  when a script has a single shared group.
  A name never merges two symbols of the proof, and a capital does not turn into its look-alike
  of the other script (``B→Β``) unless no other permutation exists. A pair sharing a single
  group keeps it (the reference code maps a single letter to itself); groups whose letter is
  also used as a constant in the pair, and Π (lowercase π is the constant), do not take part.
* ``partial_p``/``full_p`` additionally keep the *protected* symbols (default P, E, V, σ, ρ:
  probability, expectation, variance, standard deviation, correlation). Protection is by exact
  character and wins over coupling: with P protected, ``p→q`` still happens and ``P`` stays; a
  protected letter is never a target either. The other levels protect nothing.

Randomness is seeded per pair from ``(seed, level, pair_id)`` with SHA-256 (:func:`pair_rng`), so a
pair gets the same replacement whatever the row order, split or process.

Cost: the XML work (parsing, presentation MathML, finding the replaceable ``mi`` elements and
where their tokens stand) does not depend on the level, so it is done once per pair
(:func:`analyze_file`, ``results/replaced/symbols.parquet``); each level is then a pure mapping
over symbol sets and token slots (:func:`replace_level_file`, ``results/replaced/{level}.parquet``
for every pair), and each split selects its rows from it (:func:`select_split`), so a level is
computed once, not once per split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import string
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lxml import etree
from tqdm import tqdm

from proofmatch.data.linearize import FragmentError, iter_maths, linearize_element, linearize_fragment, parse_fragment
from proofmatch.logs import setup_logging
from proofmatch.data.mathml import presentation, single_char_identifiers
from proofmatch.experiments import ALL_LEVELS as LEVELS
from proofmatch.artifacts import atomic_path, write_json
from proofmatch.data.views import MATH_PREFIX, math_token, split_math

log = logging.getLogger(__name__)

DEFAULT_PROTECTED = ("P", "E", "V", "σ", "ρ")

LATIN = string.ascii_lowercase
GREEK = "αβγδεζηθικλμνξοπρστυφχψω"  # lowercase base letters; π is a constant, never a target
GREEK_VARIANTS = {"ϵ": "ε", "ϑ": "θ", "ϕ": "φ", "ϱ": "ρ", "ς": "σ", "ϖ": "π"}  # variant -> base
LATIN_TARGETS = LATIN
GREEK_TARGETS = "".join(c for c in GREEK if c not in "πο")
GREEK_CAPITAL_TARGETS = "γδθλξσυφψω"  # capitals Γ Δ Θ Λ Ξ Σ Υ Φ Ψ Ω differ from Latin letters
UPRIGHT_CONSTANTS = frozenset("eid")  # with mathvariant="normal"
# Greek letters drawn like a Latin one: renaming B to Β would change the token, not the look.
LOOKALIKE = dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧο", "ABEZHIKMNOPTYXo"))
TRANS_TRIES = 30  # random permutations tried per preference before relaxing it

# Why a pair's proof comes out of a level with the Conservation tokens (the summary's keys).
UNCHANGED_REASONS = (
    "conservation",  # the level changes nothing
    "no_shared_symbol",  # statement and proof share no replaceable symbol group
    "one_shared_group",  # trans: a single shared group has no other name to take
    "none_selected",  # partial: round(alpha · n) = 0 groups chosen
    "no_free_letter",  # full/partial: every chosen group found its pool empty (kept as c→c)
    "no_valid_permutation",  # trans: every permutation would merge two symbols of the proof
    "no_token",  # renamed letters, none of which stands in the proof's tokens
)


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


def glyph_of(char: str) -> str:
    """What a reader sees: a Greek capital drawn like a Latin one is that Latin letter."""
    return LOOKALIKE.get(char, char)


def is_constant(char: str, variant: str | None) -> bool:
    return char == "π" or (char in UPRIGHT_CONSTANTS and variant == "normal")


@dataclass
class Symbols:
    """The one-letter identifiers of a fragment's maths."""

    candidates: set[str] = field(default_factory=set)  # replaceable letters
    letters: set[str] = field(default_factory=set)  # every Latin/Greek letter, any font or role
    constants: set[str] = field(default_factory=set)  # letters used as constants

    def encode(self) -> tuple[str, str, str]:
        """The three sets as strings of sorted characters (how the symbols file stores them)."""
        return "".join(sorted(self.candidates)), "".join(sorted(self.letters)), "".join(sorted(self.constants))

    @classmethod
    def decode(cls, candidates: str, letters: str, constants: str) -> Symbols:
        return cls(set(candidates), set(letters), set(constants))


def _classify(trees: Iterable[etree._Element]) -> tuple[Symbols, list[tuple[etree._Element, str]]]:
    """Symbols of some presentation trees and their replaceable ``mi`` elements with letters."""
    found = Symbols()
    occurrences = []
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
                occurrences.append((mi, char))
    return found, occurrences


def collect_symbols(trees: Iterable[etree._Element]) -> Symbols:
    """Classify every one-character ``mi`` of some presentation trees."""
    return _classify(trees)[0]


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


def _check_level(level: str, alpha: float | None) -> None:
    if level not in LEVELS:
        raise ValueError(f"unknown replacement level {level!r}; expected one of {', '.join(LEVELS)}")
    if level.startswith("partial") and alpha is None:
        raise ValueError(f"level {level!r} needs alpha (the fraction of shared symbols replaced)")
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1] (the fraction of shared symbols replaced), got {alpha}")


def _check_protected(protected: Sequence[str]) -> None:
    bad = [p for p in protected if len(p) != 1]
    if bad:
        raise ValueError(f"protected symbols must be single characters, got {bad}")


def shared_groups(statement: Symbols, proof: Symbols, level: str, protected: Iterable[str] = ()) -> list[str]:
    """The replaceable groups of a pair at ``level``: groups of a letter in both fragments.

    Protected letters do not make a group shared at the ``*_p`` levels; at ``trans``, groups
    whose letter is also a constant of the pair (and Π, π's capital) take no part.
    """
    kept = set(protected) if level.endswith("_p") else set()
    groups = {group_of(c) for c in proof.candidates & statement.candidates if c not in kept}
    if level == "trans":
        in_use = {family_of(c) for c in statement.constants | proof.constants} | {"π"}
        groups = {g for g in groups if family_of(g) not in in_use}
    return sorted(groups)


def _join_cycle(perm: dict[str, str], group: str, sources: list[str], rng: random.Random) -> None:
    """Put ``group`` into the permutation's cycles after a random source (no fixed point made)."""
    source = rng.choice(sources)
    perm[group], perm[source] = perm[source], group


def _preferred_derangement(groups: list[str], cases: dict[str, str], rng: random.Random) -> dict[str, str]:
    """A permutation without fixed point that stays within case classes, then scripts.

    Within a script, each class of >= 2 groups with the same shared cases is deranged on its own;
    groups alone in their class are deranged among themselves, or, if only one is, it joins
    another class's cycle. A script with a single group joins the other script's cycles (or the
    two single groups swap).
    """
    perm: dict[str, str] = {}
    lone = []
    for script in ("latin", "greek"):
        own = [g for g in groups if script_of(g) == script]
        if len(own) == 1:
            lone.append(own[0])
            continue
        classes: dict[str, list[str]] = {}
        for g in own:
            classes.setdefault(cases[g], []).append(g)
        singles = []
        for key in sorted(classes):
            if len(classes[key]) >= 2:
                perm.update(zip(classes[key], _derangement(classes[key], rng)))
            else:
                singles += classes[key]
        if len(singles) >= 2:
            perm.update(zip(singles, _derangement(singles, rng)))
        elif singles:
            _join_cycle(perm, singles[0], [g for g in own if g in perm], rng)
    if len(lone) == 2 and not perm:
        perm = {lone[0]: lone[1], lone[1]: lone[0]}
    else:
        for g in lone:
            _join_cycle(perm, g, sorted(perm), rng)
    return perm


def _any_derangement(groups: list[str], cases: dict[str, str], rng: random.Random) -> dict[str, str]:
    return dict(zip(groups, _derangement(groups, rng)))


def _keeps_symbols_apart(mapping: dict[str, str], proof_candidates: set[str], strict: bool) -> bool:
    """No letter keeps its name, no two letters merge, none lands on an unrenamed proof letter;
    ``strict``: and no capital turns into its look-alike of the other script."""
    images = list(mapping.values())
    if any(c == t for c, t in mapping.items()) or len(set(images)) != len(images):
        return False
    if not set(images).isdisjoint(proof_candidates - mapping.keys()):
        return False
    return not strict or all(glyph_of(c) != glyph_of(t) for c, t in mapping.items())


def _transposition(
    groups: list[str], members: dict[str, list[str]], cases: dict[str, str], proof: Symbols, rng: random.Random
) -> dict[str, str]:
    """§5's Transposition: every shared group takes another shared group's name ({} if < 2)."""
    if len(groups) < 2:
        return {}
    builders: tuple[Callable[..., dict[str, str]], ...] = (_preferred_derangement, _any_derangement)
    for strict in (True, False):
        for build in builders:
            for _ in range(TRANS_TRIES):
                perm = build(groups, cases, rng)
                mapping = {c: _image(c, perm[g]) for g in groups for c in members[g]}
                if _keeps_symbols_apart(mapping, proof.candidates, strict):
                    return mapping
    return {}


def plan_mapping(
    statement: Symbols,
    proof: Symbols,
    level: str,
    rng: random.Random,
    alpha: float | None = 0.5,
    protected: Iterable[str] = (),
) -> dict[str, str]:
    """Letter -> letter for the proof's replaceable letters; ``c→c`` marks an exhausted pool.

    Pure over the symbol sets; :func:`apply_mapping` applies it to the proof's tokens.
    """
    _check_level(level, alpha)
    if level == "conservation":
        return {}
    kept = set(protected) if level.endswith("_p") else set()
    groups = shared_groups(statement, proof, level, kept)
    members = {g: sorted(c for c in proof.candidates if group_of(c) == g and c not in kept) for g in groups}
    mapping: dict[str, str] = {}
    if level == "trans":
        shared = proof.candidates & statement.candidates
        cases = {g: "".join(sorted({"U" if c != c.lower() else "L" for c in shared if group_of(c) == g})) for g in groups}
        return _transposition(groups, members, cases, proof, rng)
    count = len(groups) if level.startswith("full") else int(alpha * len(groups) + 0.5)  # type: ignore[operator]
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


def unchanged_reason(n_groups: int, level: str, alpha: float | None, mapping: dict[str, str]) -> str:
    """Why a proof kept its Conservation tokens at ``level`` (one of :data:`UNCHANGED_REASONS`)."""
    if level == "conservation":
        return "conservation"
    if n_groups == 0:
        return "no_shared_symbol"
    if level == "trans":
        if n_groups == 1:
            return "one_shared_group"
        return "no_token" if mapping else "no_valid_permutation"
    if level.startswith("partial") and int(alpha * n_groups + 0.5) == 0:  # type: ignore[operator]
        return "none_selected"
    if mapping and all(a == b for a, b in mapping.items()):
        return "no_free_letter"
    return "no_token"


# --- the XML work, once per pair ------------------------------------------------------------------

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
    statement, _ = _classify(presentation(m) for m in iter_maths(parse_fragment(statement_xml)))
    proof_root, trees = _presentation_in_place(parse_fragment(proof_xml))
    proof, occurrences = _classify(trees)
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


def apply_mapping(tokens: Sequence[str], slots: Iterable[int], mapping: dict[str, str]) -> list[str]:
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
    alpha: float | None = 0.5,
    protected: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """(proof tokens after replacement, mapping) for one pair; ``protected`` counts for ``*_p`` only."""
    _check_level(level, alpha)
    if level == "conservation":
        return linearize_fragment(proof_xml), {}
    pair = analyze_pair(statement_xml, proof_xml)
    mapping = plan_mapping(pair.statement, pair.proof, level, rng, alpha, protected)
    return apply_mapping(pair.tokens, pair.slots, mapping), mapping


# --- files -------------------------------------------------------------------------------------

SYMBOLS_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("slots", pa.list_(pa.int32())),
        *[(f"{side}_{kind}", pa.string()) for side in ("statement", "proof") for kind in ("candidates", "letters", "constants")],
    ]
)
LEVEL_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("mapping", pa.string()),
    ]
)
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
PAIR_COLUMNS = ["pair_id", "article_id", "statement_xml", "proof_xml", "statement_tokens", "proof_tokens"]


def _parquet(path: str | os.PathLike, columns: Iterable[str]) -> pq.ParquetFile:
    file = pq.ParquetFile(path)
    missing = [c for c in columns if c not in file.schema_arrow.names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}")
    return file


def analyze_file(
    pairs_parquet: str | os.PathLike, out_parquet: str | os.PathLike, pair_ids: Collection[str] | None = None
) -> int:
    """Write every pair's :class:`PairSymbols` (only ``pair_ids`` if given); returns the row count.

    The pairs file is read in record batches and the output written batch by batch, so memory
    holds one batch, not the corpus. The proof tokens of the presentation trees must equal the
    linearize stage's ``proof_tokens`` (checked per pair): the replaced tokens of a level are
    then exactly what linearizing the renamed trees would give.
    """
    pairs_file = _parquet(pairs_parquet, PAIR_COLUMNS)
    seen: set[str] = set()
    total = pairs_file.metadata.num_rows if pair_ids is None else len(pair_ids)
    with atomic_path(out_parquet, ".parquet") as tmp, pq.ParquetWriter(tmp, SYMBOLS_SCHEMA) as writer:
        with tqdm(total=total, desc="symbols", unit="pair", mininterval=5) as bar:
            for batch in pairs_file.iter_batches(columns=PAIR_COLUMNS, batch_size=256):
                rows: dict[str, list[Any]] = {name: [] for name in SYMBOLS_SCHEMA.names}
                for rec in batch.to_pylist():
                    pid = rec["pair_id"]
                    if pair_ids is not None and pid not in pair_ids:
                        continue
                    if pid in seen:
                        raise ValueError(f"{pairs_parquet}: duplicated pair_id {pid!r}")
                    seen.add(pid)
                    try:
                        pair = analyze_pair(rec["statement_xml"], rec["proof_xml"])
                    except FragmentError as exc:
                        raise ValueError(f"pair {pid!r} passed linearization but its fragment fails now: {exc}") from exc
                    if pair.tokens != rec["proof_tokens"]:
                        at = next((i for i, (a, b) in enumerate(zip(pair.tokens, rec["proof_tokens"])) if a != b),
                                  min(len(pair.tokens), len(rec["proof_tokens"])))
                        raise ValueError(
                            f"pair {pid!r}: the proof's presentation tokens differ from {pairs_parquet}'s proof_tokens "
                            f"at token {at} ({pair.tokens[at:at + 3]} vs {rec['proof_tokens'][at:at + 3]}); "
                            "was the linearize stage run with other code? Rerun it (snakemake -R linearize)"
                        )
                    values = (pid, rec["article_id"], rec["statement_tokens"], rec["proof_tokens"], pair.slots,
                              *pair.statement.encode(), *pair.proof.encode())
                    for name, value in zip(SYMBOLS_SCHEMA.names, values):
                        rows[name].append(value)
                    bar.update()
                writer.write_table(pa.table(rows, schema=SYMBOLS_SCHEMA))
    if pair_ids is not None and len(seen) != len(pair_ids):
        absent = sorted(set(pair_ids) - seen)
        raise ValueError(f"{len(absent)} pair id(s) are not in {pairs_parquet}, e.g. {absent[0]!r}")
    log.info("symbols of %d pairs", len(seen))
    return len(seen)


def replace_level_file(
    symbols_parquet: str | os.PathLike,
    level: str,
    out_parquet: str | os.PathLike,
    summary_json: str | os.PathLike,
    seed: int = 0,
    alpha: float | None = 0.5,
    protected: Sequence[str] = DEFAULT_PROTECTED,
) -> dict[str, Any]:
    """Replace the symbols of every pair of the symbols file at one level; returns the summary.

    ``alpha`` is used by the partial levels, ``protected`` by the ``*_p`` levels (both are
    recorded in the summary). The summary counts the pairs whose proof tokens changed and, for
    the others, why not (:data:`UNCHANGED_REASONS`), plus the shared groups per pair.
    """
    _check_level(level, alpha)
    _check_protected(protected)
    symbols_file = _parquet(symbols_parquet, SYMBOLS_SCHEMA.names)
    sets = [f"{side}_{kind}" for side in ("statement", "proof") for kind in ("candidates", "letters", "constants")]
    unchanged: Counter[str] = Counter({r: 0 for r in UNCHANGED_REASONS})
    groups_hist: Counter[int] = Counter()
    n = n_changed = n_kept = 0
    with atomic_path(out_parquet, ".parquet") as tmp, pq.ParquetWriter(tmp, LEVEL_SCHEMA) as writer:
        for batch in symbols_file.iter_batches(batch_size=2048):
            if level == "conservation":  # nothing to compute: pass the tokens through as Arrow data
                table = pa.Table.from_batches([batch]).select(LEVEL_SCHEMA.names[:-1])
                writer.write_table(table.append_column("mapping", pa.array(["{}"] * batch.num_rows, pa.string())))
                n += batch.num_rows
                unchanged["conservation"] += batch.num_rows
                continue
            columns = {name: batch.column(name).to_pylist() for name in ["pair_id", "slots", *sets]}
            proof_tokens = batch.column("proof_tokens")
            take, new_tokens, mappings = list(range(batch.num_rows)), [], []
            for k, pid in enumerate(columns["pair_id"]):
                statement = Symbols.decode(*(columns[s][k] for s in sets[:3]))
                proof = Symbols.decode(*(columns[s][k] for s in sets[3:]))
                n_groups = len(shared_groups(statement, proof, level, protected))
                mapping = plan_mapping(statement, proof, level, pair_rng(seed, level, pid), alpha, protected)
                renamed = {c: t for c, t in mapping.items() if c != t}
                changed = False
                if renamed and columns["slots"][k]:
                    original = proof_tokens[k].as_py()
                    tokens = apply_mapping(original, columns["slots"][k], renamed)
                    if tokens != original:
                        changed = True
                        take[k] = batch.num_rows + len(new_tokens)
                        new_tokens.append(tokens)
                mappings.append(json.dumps(mapping, ensure_ascii=False, sort_keys=True))
                n += 1
                n_changed += changed
                n_kept += len(mapping) - len(renamed)
                groups_hist[min(n_groups, 3)] += 1
                if not changed:
                    unchanged[unchanged_reason(n_groups, level, alpha, mapping)] += 1
            # Unchanged rows keep their Arrow token lists; only renamed proofs go through Python.
            both = pa.concat_arrays([proof_tokens, pa.array(new_tokens, proof_tokens.type)])
            table = pa.table(
                {
                    "pair_id": batch.column("pair_id"),
                    "article_id": batch.column("article_id"),
                    "statement_tokens": batch.column("statement_tokens"),
                    "proof_tokens": both.take(pa.array(take, pa.int64())),
                    "mapping": pa.array(mappings, pa.string()),
                },
                schema=LEVEL_SCHEMA,
            )
            writer.write_table(table)
    summary = {
        "level": level,
        "pairs": n,
        "changed": n_changed,
        "unchanged": dict(unchanged),
        "symbols_kept_no_free_letter": n_kept,
        "pairs_by_shared_groups": None if level == "conservation" else {
            "0": groups_hist[0], "1": groups_hist[1], "2": groups_hist[2], "3+": groups_hist[3]
        },
        "seed": seed,
        "alpha": alpha if level.startswith("partial") else None,
        "protected": list(protected) if level.endswith("_p") else [],
    }
    write_json(summary, summary_json)
    log.info(
        "%s: %d pairs, %d changed; unchanged: %s; %d symbols kept because no letter was left",
        level, n, n_changed, ", ".join(f"{r} {c}" for r, c in unchanged.items() if c) or "none", n_kept,
    )
    return summary


def select_split(level_parquet: str | os.PathLike, split_parquet: str | os.PathLike, out_parquet: str | os.PathLike) -> None:
    """The rows of one split from a level's file, in the split's order, with its ``part`` column.

    A level does not depend on the split (each pair's randomness is seeded by its id), so the
    three splits share one replacement per level and this join is all that is left to do.
    """
    split = pq.read_table(split_parquet, columns=["pair_id", "article_id", "part"])
    ids = split.column("pair_id").cast(pa.string())
    if pc.count_distinct(ids).as_py() != len(ids):
        counts = pc.value_counts(ids)
        dup = counts.filter(pc.greater(counts.field("counts"), 1))[0]["values"].as_py()
        raise ValueError(f"{split_parquet}: duplicated pair_id, e.g. {dup!r}")
    level = pq.read_table(level_parquet, columns=["pair_id", "statement_tokens", "proof_tokens", "mapping"])
    where = pc.index_in(ids, value_set=level.column("pair_id"))
    if where.null_count:
        absent = ids.filter(pc.is_null(where))
        raise ValueError(f"{len(absent)} pair id(s) of {split_parquet} are not in {level_parquet}, e.g. {absent[0].as_py()!r}")
    rows = level.take(where)
    table = pa.table(
        {
            "pair_id": ids,
            "article_id": split.column("article_id").cast(pa.string()),
            "part": split.column("part").cast(pa.string()),
            **{name: rows.column(name) for name in ("statement_tokens", "proof_tokens", "mapping")},
        },
        schema=OUTPUT_SCHEMA,
    )
    with atomic_path(out_parquet, ".parquet") as tmp:
        pq.write_table(table, tmp)


def replace_split_file(
    pairs_parquet: str | os.PathLike,
    split_parquet: str | os.PathLike,
    level: str,
    out_parquet: str | os.PathLike,
    seed: int = 0,
    alpha: float | None = 0.5,
    protected: Sequence[str] = DEFAULT_PROTECTED,
    summary_json: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """One split at one level in one call (the CLI): :func:`analyze_file` of the split's pairs,
    :func:`replace_level_file`, :func:`select_split`; returns the level's summary."""
    _check_level(level, alpha)
    _check_protected(protected)
    wanted = set(pq.read_table(split_parquet, columns=["pair_id"]).column("pair_id").to_pylist())
    Path(out_parquet).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(out_parquet).parent, prefix=".replace.") as tmp:
        analyze_file(pairs_parquet, Path(tmp) / "symbols.parquet", pair_ids=wanted)
        summary = replace_level_file(
            Path(tmp) / "symbols.parquet", level, Path(tmp) / "level.parquet",
            summary_json or Path(tmp) / "summary.json", seed=seed, alpha=alpha, protected=protected,
        )
        select_split(Path(tmp) / "level.parquet", split_parquet, out_parquet)
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pairs", help="filtered pairs (results/data/pairs.parquet)")
    parser.add_argument("split", nargs="?", default=None,
                        help="split assignment (results/splits/SPLIT.parquet); without it every pair is replaced "
                             "and the output has no part column (results/replaced/LEVEL.parquet)")
    parser.add_argument("--level", required=True, choices=LEVELS, help="replacement level")
    parser.add_argument("--out", required=True, help="output Parquet (results/replaced/SPLIT/LEVEL.parquet)")
    parser.add_argument("--summary", default=None, help="also write the level's summary JSON here")
    parser.add_argument("--seed", type=int, default=0, help="global seed (default 0)")
    parser.add_argument("--alpha", type=float, default=0.5, help="fraction of shared symbols replaced by 'partial' (default 0.5)")
    parser.add_argument(
        "--protected", nargs="*", default=list(DEFAULT_PROTECTED),
        help="symbols kept by the *_p levels (default: P E V σ ρ)",
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    if args.split is not None:
        replace_split_file(args.pairs, args.split, args.level, args.out, seed=args.seed, alpha=args.alpha,
                           protected=args.protected, summary_json=args.summary)
        return 0
    out = Path(args.out)
    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.exists() else None, prefix=".replace.") as tmp:
        analyze_file(args.pairs, Path(tmp) / "symbols.parquet")
        replace_level_file(Path(tmp) / "symbols.parquet", args.level, out, args.summary or Path(tmp) / "summary.json",
                           seed=args.seed, alpha=args.alpha, protected=args.protected)
    return 0
