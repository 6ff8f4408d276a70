"""Which symbols of a proof are renamed, and to what (paper §5 and Appendix C): pure over symbol sets.

A *symbol* is a one-character identifier (``mi``) of the presentation tree whose letter is Latin
(a-z, A-Z) or Greek (lowercase, capitals and the variant forms ϵ ϑ ϕ ϱ ς ϖ), compared without
its font. Rules, as in the paper (§5) and the reference code (without its bugs):

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
* Levels: ``conservation`` (nothing), ``full`` (every shared group), ``partial`` (below),
  ``trans`` and ``partial_p``/``full_p`` (below).
* ``partial``, §5: "A fraction of α of all the symbols in the proof remain the same, and the rest
  are changed". Of a pair's ``n`` shared groups, ``round((1 - alpha) · n)`` chosen at random are
  renamed (:func:`renamed_count`) and the others keep their names. ``rounding`` says how a half is
  rounded: ``half_even`` is the reference code's Python ``round`` (it renames ``round(0.5 · n)``
  groups: one group of one stays, five give two renamed), ``half_up`` renames the larger half (one
  of one, three of five: a pair sharing one group is then always renamed, as at Full). The two
  differ only when ``(1 - alpha) · n`` ends in one half.
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

Why a module of its own: this is the part that decides (classification, shared groups, the
mapping of a level, why a proof stays unchanged); :mod:`proofmatch.data.slots` finds where the
symbols stand in the proof's tokens and :mod:`proofmatch.data.replace` writes the files.
"""

from __future__ import annotations

import hashlib
import math
import random
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal, get_args

from lxml import etree

from proofmatch import config
from proofmatch.data.mathml import single_char_identifiers

# the schema's replace.* defaults, for callers that leave them out (the workflow passes its config's)
DEFAULT_PROTECTED = tuple(config.default("replace.protected"))
DEFAULT_ALPHA = config.default("replace.partial_alpha")
DEFAULT_ROUNDING = config.default("replace.partial_rounding")

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
Rounding = Literal["half_even", "half_up"]  # how partial rounds the number of groups renamed
ROUNDINGS: tuple[Rounding, ...] = get_args(Rounding)

UNCHANGED_REASONS = (
    "conservation",  # the level changes nothing
    "no_shared_symbol",  # statement and proof share no replaceable symbol group
    "one_shared_group",  # trans: a single shared group has no other name to take
    "none_selected",  # partial: round((1 - alpha) · n) = 0 groups chosen
    "no_free_letter",  # full/partial: every chosen group found its pool empty (kept as c→c)
    "no_valid_permutation",  # trans: every permutation would merge two symbols of the proof
    "no_token",  # renamed letters, none of which stands in the proof's tokens
)


# --- classification: which letters are symbols, constants or neither -------------------------------


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
    """π in any font; ``e``, ``i``, ``d`` when upright (Euler's number, imaginary unit, differential)."""
    return char == "π" or (char in UPRIGHT_CONSTANTS and variant == "normal")


@dataclass
class Symbols:
    """The one-letter identifiers of a fragment's maths."""

    candidates: set[str] = field(default_factory=set)  # replaceable letters
    letters: set[str] = field(default_factory=set)  # every Latin/Greek letter, any font or role
    constants: set[str] = field(default_factory=set)  # letters used as constants

    def encode(self) -> tuple[str, str, str]:
        """The three sets as strings of sorted characters (how the symbols file stores them)."""
        return (
            "".join(sorted(self.candidates)),
            "".join(sorted(self.letters)),
            "".join(sorted(self.constants)),
        )

    @classmethod
    def decode(cls, candidates: str, letters: str, constants: str) -> Symbols:
        return cls(set(candidates), set(letters), set(constants))


def classify(trees: Iterable[etree._Element]) -> tuple[Symbols, list[tuple[etree._Element, str]]]:
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


# --- planning: the groups a level renames and the letters they take ------------------------------


def pair_rng(seed: int, level: str, pair_id: str) -> random.Random:
    """A generator that depends only on (seed, level, pair_id): stable across runs and row orders."""
    digest = hashlib.sha256(f"{seed}\x1f{level}\x1f{pair_id}".encode()).digest()
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


def check_level(
    level: str, alpha: float | None, rounding: Rounding | None = DEFAULT_ROUNDING
) -> None:
    """What a level needs of its other arguments. The level itself (one of
    :data:`proofmatch.experiments.ALL_LEVELS`) and the rounding are the workflow's wildcard and
    config or the command line's choices, checked there."""
    if level.startswith("partial") and alpha is None:
        raise ValueError(
            f"level {level!r} needs alpha (the fraction of shared symbol groups that keep their names)"
        )
    if alpha is not None and not 0.0 <= alpha <= 1.0:
        raise ValueError(
            f"alpha must be in [0, 1] (the fraction of shared symbol groups that keep their names), got {alpha}"
        )
    if level.startswith("partial") and rounding is None:
        raise ValueError(f"level {level!r} needs a rounding ({', '.join(ROUNDINGS)})")


def renamed_count(n_groups: int, level: str, alpha: float | None, rounding: Rounding | None) -> int:
    """How many of ``n_groups`` shared groups a full or partial level renames: all of them, or
    ``(1 - alpha) · n`` rounded by ``rounding`` (exact arithmetic: 0.7 · 5 is a tie, 3.5)."""
    if not level.startswith("partial"):
        return n_groups
    share = (1 - Fraction(str(alpha))) * n_groups
    if rounding == "half_even":
        return round(share)  # Fraction rounds ties to even, as round() of a float does
    if rounding == "half_up":
        return math.floor(share + Fraction(1, 2))
    raise AssertionError(f"a partial level's rounding is one of {ROUNDINGS}, not {rounding!r}")


def check_protected(protected: Sequence[str]) -> None:
    bad = [p for p in protected if len(p) != 1]
    if bad:
        raise ValueError(f"protected symbols must be single characters, got {bad}")


def shared_groups(
    statement: Symbols, proof: Symbols, level: str, protected: Iterable[str] = DEFAULT_PROTECTED
) -> list[str]:
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


def _preferred_derangement(
    groups: list[str], cases: dict[str, str], rng: random.Random
) -> dict[str, str]:
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


def _any_derangement(
    groups: list[str], cases: dict[str, str], rng: random.Random
) -> dict[str, str]:
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
    groups: list[str],
    members: dict[str, list[str]],
    cases: dict[str, str],
    proof: Symbols,
    rng: random.Random,
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
    alpha: float | None = DEFAULT_ALPHA,
    protected: Iterable[str] = DEFAULT_PROTECTED,
    rounding: str | None = DEFAULT_ROUNDING,
) -> dict[str, str]:
    """Letter -> letter for the proof's replaceable letters; ``c→c`` marks an exhausted pool.

    ``alpha`` (partial levels) is the fraction of shared groups that keep their names, ``rounding``
    how their number is rounded (:func:`renamed_count`). Pure over the symbol sets;
    :func:`proofmatch.data.slots.apply_mapping` applies it to the proof's tokens.
    """
    check_level(level, alpha, rounding)
    if level == "conservation":
        return {}
    kept = set(protected) if level.endswith("_p") else set()
    groups = shared_groups(statement, proof, level, kept)
    members = {
        g: sorted(c for c in proof.candidates if group_of(c) == g and c not in kept) for g in groups
    }
    mapping: dict[str, str] = {}
    if level == "trans":
        shared = proof.candidates & statement.candidates
        cases = {
            g: "".join(sorted({"U" if c != c.lower() else "L" for c in shared if group_of(c) == g}))
            for g in groups
        }
        return _transposition(groups, members, cases, proof, rng)
    chosen = sorted(rng.sample(groups, renamed_count(len(groups), level, alpha, rounding)))
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


def unchanged_reason(
    n_groups: int,
    level: str,
    alpha: float | None,
    mapping: dict[str, str],
    rounding: str | None = DEFAULT_ROUNDING,
) -> str:
    """Why a proof kept its Conservation tokens at ``level`` (one of :data:`UNCHANGED_REASONS`)."""
    if level == "conservation":
        return "conservation"
    if n_groups == 0:
        return "no_shared_symbol"
    if level == "trans":
        if n_groups == 1:
            return "one_shared_group"
        return "no_token" if mapping else "no_valid_permutation"
    if level.startswith("partial") and renamed_count(n_groups, level, alpha, rounding) == 0:
        return "none_selected"
    if mapping and all(a == b for a, b in mapping.items()):
        return "no_free_letter"
    return "no_token"
