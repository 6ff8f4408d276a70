"""Symbol replacement rules (paper §5, Appendix C), determinism, symbols/level/split files and CLI."""

from __future__ import annotations

import itertools
import json
import random

import pandas as pd
import pytest

from proofmatch import cli
from proofmatch.data.linearize import linearize_element, linearize_fragment, parse_fragment
from proofmatch.data.replace import (
    analyze_file,
    replace_level_file,
    replace_split_file,
    select_split,
)
from proofmatch.data.slots import _presentation_in_place, analyze_pair, replace_pair
from proofmatch.data.symbols import (
    DEFAULT_PROTECTED,
    GREEK_CAPITAL_TARGETS,
    Symbols,
    classify,
    family_of,
    glyph_of,
    pair_rng,
    plan_mapping,
    renamed_count,
    script_of,
    unchanged_reason,
)
from proofmatch.data.views import is_math, split_math
from proofmatch.experiments import ALL_LEVELS

XHTML = "http://www.w3.org/1999/xhtml"
MML = "http://www.w3.org/1998/Math/MathML"
_ids = itertools.count()


def mi(char: str, variant: str | None = None) -> tuple[str, str | None]:
    return char, variant


def formula(*symbols: tuple[str, str | None]) -> str:
    """A LaTeXML-style formula listing ``symbols``; content and TeX annotations repeat the letters."""
    n = next(_ids)
    pres = "<mo>,</mo>".join(
        f'<mi id="m{n}.{k}" xref="m{n}.{k}.cmml"'
        + (f' mathvariant="{v}"' if v else "")
        + f">{c}</mi>"
        for k, (c, v) in enumerate(symbols)
    )
    content = "".join(f"<ci>{c}</ci>" for c, _ in symbols)
    tex = ",".join(c for c, _ in symbols)
    return (
        f'<math xmlns="{MML}" alttext="{tex}"><semantics><mrow>{pres}</mrow>'
        f'<annotation-xml encoding="MathML-Content"><list>{content}</list></annotation-xml>'
        f'<annotation encoding="application/x-tex">{tex}</annotation></semantics></math>'
    )


def statement(*symbols) -> str:
    return (
        f'<div xmlns="{XHTML}" class="ltx_theorem ltx_theorem_lemma" id="L1"><h6 class="ltx_title">Lemma 1.</h6>'
        f'<p class="ltx_p">Let {formula(*symbols)} be given.</p></div>'
    )


def proof(*symbols) -> str:
    return (
        f'<div xmlns="{XHTML}" class="ltx_proof"><h6 class="ltx_title">Proof.</h6>'
        f'<p class="ltx_p">Clearly {formula(*symbols)} works.</p></div>'
    )


def letters(chars: str) -> list[tuple[str, None]]:
    return [mi(c) for c in chars]


def math_symbols(tokens: list[str]) -> list[tuple[str, str | None]]:
    """(letter, font) of each math token except the commas of :func:`formula`."""
    return [split_math(t) for t in tokens if is_math(t) and t != "$,"]


def run(st, pr, level, seed=0, alpha=0.5, protected=(), rounding="half_up"):
    return replace_pair(
        statement(*st), proof(*pr), level, pair_rng(seed, level, "p/1"), alpha, protected, rounding
    )


# --- core rules --------------------------------------------------------------------------------


def test_full_replaces_only_shared_symbols_and_only_in_the_proof():
    for seed in range(20):
        tokens, mapping = run(letters("abx"), letters("abyz"), "full", seed)
        assert set(mapping) == {"a", "b"}
        after = [c for c, _ in math_symbols(tokens)]
        assert after[2:] == ["y", "z"]  # proof-only symbols untouched
        assert after[:2] == [mapping["a"], mapping["b"]]
        assert not set(after[:2]) & set("abxyz")
        assert [t for t in tokens if not is_math(t)] == ["Proof", ".", "Clearly", "works", "."]
        assert len(tokens) == len(
            linearize_fragment(proof(*letters("abyz")))
        )  # no annotation leaked


def test_case_coupling_both_directions_and_greek():
    for seed in range(20):
        _, m = run(letters("a"), letters("aA"), "full", seed)  # A is not in the statement
        assert m["A"] == m["a"].upper() and m["a"] != "a"
        _, m = run(letters("B"), letters("bB"), "full", seed)  # only the capital is shared
        assert m["b"] not in "bB" and m["b"].islower() and m["B"] == m["b"].upper()
        _, m = run(
            letters("B"), letters("b"), "full", seed
        )  # sharing compares the letter, case included
        assert m == {}
        _, m = run(letters("γ"), letters("γΓ"), "full", seed)
        assert m["Γ"] == m["γ"].upper() and m["γ"] in GREEK_CAPITAL_TARGETS


def test_latin_to_latin_greek_to_greek():
    for seed in range(20):
        _, m = run(letters("aα"), letters("aα"), "full", seed)
        assert m["a"].isascii() and not m["α"].isascii()


def test_font_is_kept():
    tokens, m = run(letters("a"), [mi("a", "bold"), mi("a"), mi("A", "script")], "full", 3)
    t = m["a"]
    assert math_symbols(tokens) == [(t, "bold"), (t, None), (t.upper(), "script")]


def test_targets_never_collide_and_stay_distinct():
    rng = random.Random(0)
    pool = "abcdefghijklmnopqrstuvwxyzABCDEFGHαβγδεθλμσφΓΔ"
    for trial in range(60):
        st = rng.sample(pool, 8)
        pr = rng.sample(pool, 10) + st[:4]
        tokens, m = run(letters(st), letters(pr), rng.choice(["full", "partial"]), trial)
        present = {family_of(c) for c in st + pr}
        changed = {c: t for c, t in m.items() if c != t}
        assert not {family_of(t) for t in changed.values()} & present
        before = {(c, None) for c in pr}
        after = set(math_symbols(tokens))
        assert len(after) == len(before)  # injective: no two symbols merged


def test_exhausted_pool_keeps_the_symbol_and_records_it():
    st = letters("ab")
    pr = letters("abcdefghijklmnopqrstuvwxy")  # only z is free
    tokens, m = run(st, pr, "full", 1)
    assert sorted(m.values()).count("z") == 1
    kept = [c for c, t in m.items() if c == t]
    assert len(kept) == 1 and kept[0] in "ab"
    assert {c for c, _ in math_symbols(tokens)} == set("abcdefghijklmnopqrstuvwxyz") - {
        next(c for c in "ab" if c not in kept)
    }


def test_double_struck_and_constants_stay():
    st = [
        mi("ℝ"),
        mi("R"),
        mi("π"),
        mi("e", "normal"),
        mi("e"),
        mi("i", "normal"),
        mi("N", "double-struck"),
    ]
    pr = [
        mi("ℝ"),
        mi("R"),
        mi("π"),
        mi("e", "normal"),
        mi("e"),
        mi("i", "normal"),
        mi("N", "double-struck"),
    ]
    for seed in range(10):
        tokens, m = run(st, pr, "full", seed)
        assert set(m) == {"R", "e"}  # plain R and italic e are variables
        syms = math_symbols(tokens)
        assert syms[0] == ("R", "double-struck") and syms[2] == ("π", None)
        assert syms[3] == ("e", None) and syms[5] == ("i", None)  # upright e, i (normal font) kept
        assert syms[6] == ("N", "double-struck")
        assert syms[1][0] == m["R"] and syms[4][0] == m["e"]


def test_protected_symbols_are_kept_and_protection_wins_over_coupling():
    st, pr = letters("PpEx"), letters("PpEx")
    for seed in range(20):
        tokens, m = run(st, pr, "full_p", seed, protected=DEFAULT_PROTECTED)
        assert set(m) == {"p", "x"}
        assert [c for c, _ in math_symbols(tokens)] == ["P", m["p"], "E", m["x"]]
        assert not {family_of(t) for t in m.values()} & {"p", "e", "v", "σ", "ρ"}
        _, m_full = run(
            st, pr, "full", seed, protected=DEFAULT_PROTECTED
        )  # non-_p level: nothing protected
        assert set(m_full) == {"P", "p", "E", "x"}


def test_partial_replaces_round_half_up_of_shared_groups():
    """half_up (the demo's rounding) renames the larger half: one group of one, two of three."""
    chosen = set()
    for seed in range(30):
        _, m = run(letters("abcd"), letters("abcdAB"), "partial", seed)
        groups = {c.lower() for c in m}
        assert len(groups) == 2
        assert ("A" in m) == ("a" in m) and ("B" in m) == ("b" in m)
        chosen.add(frozenset(groups))
        _, m3 = run(letters("abc"), letters("abc"), "partial", seed)
        assert len(m3) == 2
        _, m1 = run(letters("a"), letters("a"), "partial", seed)
        assert len(m1) == 1
        # alpha is the share that keeps its name (§5): 1.0 keeps every group, 0.0 renames all
        _, mall = run(letters("abc"), letters("abc"), "partial", seed, alpha=0.0)
        assert set(mall) == set("abc")
        _, m0 = run(letters("abc"), letters("abc"), "partial", seed, alpha=1.0)
        assert m0 == {}
        _, m3 = run(letters("abcd"), letters("abcd"), "partial", seed, alpha=0.75)
        assert len(m3) == 1  # three of four keep their names
    assert len(chosen) > 1  # the subset is random


@pytest.mark.parametrize(
    "n, half_even, half_up", [(1, 0, 1), (2, 1, 1), (3, 2, 2), (4, 2, 2), (5, 2, 3), (9, 4, 5)]
)
def test_partial_rounding_half_even_is_the_references_round(n, half_even, half_up):
    """The reference renames round(0.5 · n) groups with Python's round (ties to even)."""
    assert renamed_count(n, "partial", 0.5, "half_even") == half_even == round(0.5 * n)
    assert renamed_count(n, "partial_p", 0.5, "half_up") == half_up
    assert renamed_count(n, "full", None, None) == n
    st = pr = letters("abcdefghi"[:n])
    for seed in range(5):
        assert len(run(st, pr, "partial", seed, rounding="half_even")[1]) == half_even
        assert len(run(st, pr, "partial", seed, rounding="half_up")[1]) == half_up


def test_partial_rounding_is_exact_on_decimal_ties():
    # (1 - 0.3) · 5 is 3.5 exactly; in floats it is 3.4999999999999996
    assert (
        renamed_count(5, "partial", 0.3, "half_even") == 4
        and renamed_count(5, "partial", 0.3, "half_up") == 4
    )
    assert (
        renamed_count(5, "partial", 0.9, "half_even") == 0
        and renamed_count(5, "partial", 0.9, "half_up") == 1
    )
    with pytest.raises(ValueError, match="needs a rounding"):
        run(letters("a"), letters("a"), "partial", rounding=None)
    with pytest.raises(AssertionError, match="rounding is one of"):  # typed: never given another
        run(letters("ab"), letters("ab"), "partial", rounding="half_down")
    assert unchanged_reason(1, "partial", 0.5, {}, "half_even") == "none_selected"


def test_transposition_permutes_shared_symbols_without_fixed_point():
    for seed in range(30):
        tokens, m = run(letters("abcαβz"), letters("abcαβAy"), "trans", seed)
        latin = {c: m[c] for c in "abc"}
        assert sorted(latin.values()) == ["a", "b", "c"] and all(c != t for c, t in latin.items())
        assert m["α"] == "β" and m["β"] == "α"
        assert m["A"] == m["a"].upper()
        assert "y" not in m and "z" not in m
        assert len(set(math_symbols(tokens))) == 7


def _symbols(statement_letters: str, proof_letters: str | None = None) -> tuple[Symbols, Symbols]:
    proof_letters = statement_letters if proof_letters is None else proof_letters
    return (
        Symbols(set(statement_letters), set(statement_letters)),
        Symbols(set(proof_letters), set(proof_letters)),
    )


def _trans(
    statement_letters: str, proof_letters: str | None = None, seed: int = 0
) -> dict[str, str]:
    st, pf = _symbols(statement_letters, proof_letters)
    return plan_mapping(st, pf, "trans", pair_rng(seed, "trans", "p"))


@pytest.mark.parametrize(
    "shared", ["Gx", "fX", "Bent", "BEntQq", "aα", "Aα", "abα", "abcβγδΓ", "Tt", "xX"]
)
def test_transposition_renames_every_group_when_two_or_more_are_shared(shared):
    """§5: "We permute the variables' names such that no symbol remains the same" — also when the
    shared letters differ in case ({G, x}: G→X, x→g) or script; each letter keeps its case."""
    groups = {c.lower() for c in shared}
    for seed in range(40):
        m = _trans(shared, seed=seed)
        if len(groups) < 2:
            assert m == {}
            continue
        assert set(m) == set(shared)
        assert all(t != c and (t == t.lower()) == (c == c.lower()) for c, t in m.items())
        assert {t.lower() for t in m.values()} == groups  # a permutation of the shared names
        assert len(set(m.values())) == len(m)
        assert all(
            m[c].upper() == m[c.lower()].upper() for c in m if c.lower() in m
        )  # case coupling


def test_transposition_issue_examples_change_the_tokens():
    for st, pr in (("Gx", "Gx"), ("fX", "fXx")):
        for seed in range(10):
            tokens, m = run(letters(st), letters(pr), "trans", seed)
            assert tokens != linearize_fragment(proof(*letters(pr)))
    assert _trans("Gx") == {"G": "X", "x": "g"}
    assert _trans("fX", "fXx") == {"f": "x", "X": "F", "x": "f"}


def test_transposition_keeps_case_classes_and_scripts_when_it_can():
    """Classes of >= 2 groups with the same shared cases permute among themselves (the proof then
    shares exactly the statement's letters); scripts stay apart unless one has a single group."""
    for seed in range(40):
        m = _trans("BEntνμ", seed=seed)
        assert (
            {m["B"], m["E"]} == {"B", "E"}
            and {m["n"], m["t"]} == {"n", "t"}
            and {m["ν"], m["μ"]} == {"ν", "μ"}
        )
        m = _trans("BEntQq", seed=seed)  # Qq is alone in its class: it joins another class's cycle
        assert all(m[c] != c for c in "BEntQq") and m["Q"] == m["q"].upper()
        m = _trans("abcαβ", seed=seed)
        assert all(m[c].isascii() for c in "abc") and not any(m[c].isascii() for c in "αβ")
        m = _trans("abcα", seed=seed)  # a lone Greek group crosses into the Latin cycle
        assert m["α"].isascii() and len([c for c in "abc" if m[c] == "α"]) == 1


def test_transposition_never_merges_symbols_or_turns_a_capital_into_its_lookalike():
    # b↔β would draw B as Β: with c, d in the Latin cycle an arrangement avoids it.
    for seed in range(40):
        m = _trans("bBcCdβΒ", seed=seed)
        assert all(t != c for c, t in m.items())
        assert all(glyph_of(t) != glyph_of(c) for c, t in m.items())
    # γ↔ϵ would turn Γ into Ε, already a proof-only letter: the Latin groups take part instead.
    for seed in range(40):
        m = _trans("γϵab", "γΓϵabΕ", seed=seed)
        assert set(m) == set("γΓϵab") and "Ε" not in m.values() and len(set(m.values())) == 5
    # Only the merging permutation exists: nothing is renamed, and the summary says why.
    assert _trans("γϵ", "γΓϵΕ") == {}
    assert unchanged_reason(2, "trans", None, {}) == "no_valid_permutation"
    # ε (with Ε) and ϵ: Ε → 'ϵ'.upper() would be Ε again, so that swap is refused.
    for seed in range(10):
        m = _trans("εΕϵab", seed=seed)
        assert all(t != c for c, t in m.items()) and len(set(m.values())) == len(m)


def test_transposition_single_shared_symbol_stays():
    tokens, m = run(letters("aα"), letters("bαc"), "trans", 0)
    assert m == {}
    assert tokens == linearize_fragment(proof(*letters("bαc")))
    assert unchanged_reason(1, "trans", None, m) == "one_shared_group"
    assert _trans("aA", "aAb") == {}  # a letter and its capital are one group


def test_transposition_skips_letters_used_as_constants():
    st = [mi("e"), mi("a"), mi("b")]
    pr = [mi("e"), mi("e", "normal"), mi("a"), mi("b")]
    for seed in range(10):
        _, m = run(st, pr, "trans", seed)
        assert set(m) == {"a", "b"} and m["a"] == "b"


def test_token_slots_equal_relinearizing_the_renamed_trees():
    """The levels rename tokens at the slots found once per pair; that must be exactly what
    renaming the ``mi`` elements and linearizing again gives (fonts, constants, double-struck)."""
    rng = random.Random(3)
    pool = "abcxyzABXeiπαβγΓσR"
    fonts = [None, None, "bold", "script", "normal", "double-struck"]
    for trial in range(40):
        st = [mi(c, rng.choice(fonts)) for c in rng.sample(pool, 6)]
        pr = [mi(c, rng.choice(fonts)) for c in rng.sample(pool, 8)] + st[:3]
        s_xml, p_xml = statement(*st), proof(*pr)
        level = ("full", "partial", "trans", "full_p")[trial % 4]
        tokens, mapping = replace_pair(
            s_xml, p_xml, level, pair_rng(trial, level, "p"), 0.5, DEFAULT_PROTECTED
        )
        root, trees = _presentation_in_place(parse_fragment(p_xml))
        for el, char in classify(trees)[1]:
            el.text = mapping.get(char, char)
        assert tokens == linearize_element(root, presented=True)[0]
        pair = analyze_pair(s_xml, p_xml)
        assert pair.tokens == linearize_fragment(p_xml)
        assert sorted(split_math(pair.tokens[i])[0] for i in pair.slots) == sorted(
            c
            for c, v in pr
            if script_of(c)
            and v not in ("double-struck",)
            and not (c == "π" or (c in "ei" and v == "normal"))
        )


def test_no_shared_symbols_gives_the_original_tokens():
    for level in ("partial", "full", "trans", "partial_p", "full_p"):
        tokens, m = run(letters("ab"), letters("xy"), level)
        assert m == {} and tokens == linearize_fragment(proof(*letters("xy")))


def test_invalid_arguments():
    with pytest.raises(ValueError, match="alpha"):
        run(letters("a"), letters("a"), "partial", alpha=1.5)


def test_pair_rng_depends_only_on_seed_level_and_pair():
    assert pair_rng(1, "full", "x/1").random() == pair_rng(1, "full", "x/1").random()
    draws = {
        pair_rng(s, lv, p).random()
        for s in (1, 2)
        for lv in ("full", "trans")
        for p in ("x/1", "x/2")
    }
    assert len(draws) == 8


# --- files: symbols once per pair, one file per level, splits select from it ------------------------


def _pairs(n=12, shared=3):
    rng = random.Random(5)
    rows = []
    for k in range(n):
        st = rng.sample("abcdefghkmnpqrst", 5)
        pr = st[:shared] + rng.sample("uvwxyz", 2)
        s_xml, p_xml = statement(*letters(st)), proof(*letters(pr))
        rows.append(
            {
                "pair_id": f"art{k % 4}/S{k}",
                "article_id": f"art{k % 4}",
                "statement_xml": s_xml,
                "proof_xml": p_xml,
                "statement_tokens": linearize_fragment(s_xml),
                "proof_tokens": linearize_fragment(p_xml),
            }
        )
    pairs = pd.DataFrame(rows)
    split = pd.DataFrame(
        {
            "pair_id": pairs["pair_id"],
            "article_id": pairs["article_id"],
            "part": ["train", "dev", "test"] * (n // 3),
        }
    )
    return pairs, split


def _write(tmp_path, name, df):
    path = tmp_path / name
    df.to_parquet(path, index=False)
    return path


def _by_pair(path):
    df = pd.read_parquet(path)
    return {r.pair_id: (list(r.proof_tokens), r.mapping) for r in df.itertuples()}


def test_split_file_is_deterministic_across_row_order(tmp_path):
    pairs, split = _pairs()
    p1, s1 = _write(tmp_path, "p1.parquet", pairs), _write(tmp_path, "s1.parquet", split)
    p2 = _write(tmp_path, "p2.parquet", pairs.sample(frac=1, random_state=1))
    s2 = _write(tmp_path, "s2.parquet", split.sample(frac=1, random_state=2))
    replace_split_file(p1, s1, "full", tmp_path / "o1.parquet", seed=7)
    replace_split_file(p2, s2, "full", tmp_path / "o2.parquet", seed=7)
    replace_split_file(p1, s1, "full", tmp_path / "o3.parquet", seed=8)
    first, second, other = (_by_pair(tmp_path / f"o{k}.parquet") for k in (1, 2, 3))
    assert first == second
    assert first != other
    out = pd.read_parquet(tmp_path / "o2.parquet")
    assert list(out.columns) == [
        "pair_id",
        "article_id",
        "part",
        "statement_tokens",
        "proof_tokens",
        "mapping",
    ]
    assert list(out["pair_id"]) == list(pd.read_parquet(s2)["pair_id"])  # rows follow the split
    assert list(out["part"]) == list(pd.read_parquet(s2)["part"])
    for row in out.itertuples():
        mapping = json.loads(row.mapping)
        assert len(mapping) == 3  # three shared letters per pair
        original = pairs.set_index("pair_id").loc[row.pair_id]
        assert list(row.statement_tokens) == list(original["statement_tokens"])
        assert list(row.proof_tokens) != list(original["proof_tokens"])


def test_one_level_file_serves_every_split(tmp_path):
    """A level is computed once for all pairs; each split selects its rows, and a pair gets the
    same tokens and mapping whichever split it is in (or when the split alone is replaced)."""
    pairs, split = _pairs()
    p = _write(tmp_path, "pairs.parquet", pairs)
    analyze_file(p, tmp_path / "symbols.parquet")
    summary = replace_level_file(
        tmp_path / "symbols.parquet",
        "trans",
        tmp_path / "trans.parquet",
        tmp_path / "trans.json",
        seed=4,
        alpha=None,
    )
    assert summary["pairs"] == len(pairs) == summary["changed"]
    assert json.loads((tmp_path / "trans.json").read_text()) == summary
    level = _by_pair(tmp_path / "trans.parquet")
    subset = split.iloc[[7, 1, 4]]  # another split: a subset in another order
    for name, sp in (("all", split), ("subset", subset)):
        s = _write(tmp_path, f"{name}.parquet", sp)
        select_split(tmp_path / "trans.parquet", s, tmp_path / f"{name}-trans.parquet")
        out = pd.read_parquet(tmp_path / f"{name}-trans.parquet")
        assert list(out["pair_id"]) == list(sp["pair_id"]) and list(out["part"]) == list(sp["part"])
        assert list(out.columns) == [
            "pair_id",
            "article_id",
            "part",
            "statement_tokens",
            "proof_tokens",
            "mapping",
        ]
        assert _by_pair(tmp_path / f"{name}-trans.parquet") == {k: level[k] for k in sp["pair_id"]}
    replace_split_file(p, tmp_path / "subset.parquet", "trans", tmp_path / "alone.parquet", seed=4)
    assert _by_pair(tmp_path / "alone.parquet") == {k: level[k] for k in subset["pair_id"]}


def test_level_summary_counts_unchanged_pairs_by_reason(tmp_path):
    rows = []
    for k, (st, pr) in enumerate(
        [("abc", "abx"), ("abc", "axy"), ("abc", "xyz"), ("Gx", "Gx"), ("aα", "aαz")]
    ):
        s_xml, p_xml = statement(*letters(st)), proof(*letters(pr))
        rows.append(
            {
                "pair_id": f"a/{k}",
                "article_id": "a",
                "statement_xml": s_xml,
                "proof_xml": p_xml,
                "statement_tokens": linearize_fragment(s_xml),
                "proof_tokens": linearize_fragment(p_xml),
            }
        )
    p = _write(tmp_path, "pairs.parquet", pd.DataFrame(rows))
    assert analyze_file(p, tmp_path / "symbols.parquet") == 5
    sums = {
        level: replace_level_file(
            tmp_path / "symbols.parquet",
            level,
            tmp_path / f"{level}.parquet",
            tmp_path / f"{level}.json",
            seed=1,
            alpha=0.5 if level.startswith("partial") else None,
        )
        for level in ALL_LEVELS
    }
    trans = sums["trans"]
    assert trans["changed"] == 3  # {a, b}, {G, x} and {a, α} are permuted
    assert (
        trans["unchanged"]["one_shared_group"] == 1 and trans["unchanged"]["no_shared_symbol"] == 1
    )
    assert trans["pairs_by_shared_groups"] == {"0": 1, "1": 1, "2": 3, "3+": 0}
    assert sums["full"]["changed"] == 4 and sums["full"]["unchanged"]["no_shared_symbol"] == 1
    assert (
        sums["conservation"]["unchanged"]["conservation"] == 5
        and sums["conservation"]["changed"] == 0
    )
    assert sums["partial"]["alpha"] == 0.5 and sums["full"]["alpha"] is None
    assert sums["partial"]["rounding"] == "half_up" and sums["full"]["rounding"] is None
    # shared groups per pair 2, 1, 0, 2, 2: half_up renames 1, 1, 0, 1, 1 of them
    assert sums["partial"]["partial_groups"] == {"shared": 7, "renamed": 4, "kept": 3}
    assert sums["partial"]["unchanged_pairs"] == 1 and sums["full"]["partial_groups"] is None
    even = replace_level_file(
        tmp_path / "symbols.parquet",
        "partial",
        tmp_path / "even.parquet",
        tmp_path / "even.json",
        seed=1,
        alpha=0.5,
        rounding="half_even",
    )
    assert even["partial_groups"] == {
        "shared": 7,
        "renamed": 3,
        "kept": 4,
    }  # the pair sharing one group keeps it
    assert even["unchanged_pairs"] == 2 and even["unchanged"]["none_selected"] == 1
    assert json.loads((tmp_path / "even.json").read_text()) == even
    assert (
        sums["full_p"]["protected"] == list(DEFAULT_PROTECTED) and sums["full"]["protected"] == []
    )
    for level, summary in sums.items():
        assert summary["changed"] + sum(summary["unchanged"].values()) == 5
        assert summary["unchanged_pairs"] == sum(summary["unchanged"].values())
        out = pd.read_parquet(tmp_path / f"{level}.parquet")
        assert list(out.columns) == [
            "pair_id",
            "article_id",
            "statement_tokens",
            "proof_tokens",
            "mapping",
        ]
        changed = sum(
            list(a) != b for a, b in zip(out["proof_tokens"], [r["proof_tokens"] for r in rows])
        )
        assert changed == summary["changed"]
    cons = pd.read_parquet(tmp_path / "conservation.parquet")
    assert [list(t) for t in cons["proof_tokens"]] == [r["proof_tokens"] for r in rows]


def test_partial_needs_alpha():
    with pytest.raises(ValueError, match="needs alpha"):
        run(letters("a"), letters("a"), "partial", alpha=None)


def test_stale_pairs_file_is_an_error(tmp_path):
    pairs, _ = _pairs(3)
    pairs.at[1, "proof_tokens"] = pairs.at[1, "proof_tokens"][:-1]
    p = _write(tmp_path, "pairs.parquet", pairs)
    with pytest.raises(ValueError, match="Rerun it"):
        analyze_file(p, tmp_path / "symbols.parquet")
    assert not (tmp_path / "symbols.parquet").exists()


def test_split_file_conservation_and_subset(tmp_path):
    pairs, split = _pairs()
    subset = split.iloc[::2]
    p, s = _write(tmp_path, "p.parquet", pairs), _write(tmp_path, "s.parquet", subset)
    replace_split_file(p, s, "conservation", tmp_path / "c.parquet", seed=1)
    out = pd.read_parquet(tmp_path / "c.parquet")
    assert len(out) == len(subset)
    assert set(out["mapping"]) == {"{}"}
    original = pairs.set_index("pair_id")
    for row in out.itertuples():
        assert list(row.proof_tokens) == list(original.loc[row.pair_id, "proof_tokens"])


def test_split_file_missing_pair_is_an_error(tmp_path):
    pairs, split = _pairs()
    p = _write(tmp_path, "p.parquet", pairs.iloc[1:])
    s = _write(tmp_path, "s.parquet", split)
    with pytest.raises(ValueError, match="not in"):
        replace_split_file(p, s, "full", tmp_path / "o.parquet", seed=1)
    assert not (tmp_path / "o.parquet").exists()
    analyze_file(p, tmp_path / "symbols.parquet")
    replace_level_file(
        tmp_path / "symbols.parquet", "full", tmp_path / "full.parquet", tmp_path / "full.json"
    )
    with pytest.raises(ValueError, match="not in"):
        select_split(tmp_path / "full.parquet", s, tmp_path / "o.parquet")
    dup = _write(tmp_path, "dup.parquet", pd.concat([split.iloc[1:3], split.iloc[1:2]]))
    with pytest.raises(ValueError, match="duplicated pair_id"):
        select_split(tmp_path / "full.parquet", dup, tmp_path / "o.parquet")
    assert not (tmp_path / "o.parquet").exists()


def test_cli_replace(tmp_path):
    pairs, split = _pairs()
    p, s = _write(tmp_path, "p.parquet", pairs), _write(tmp_path, "s.parquet", split)
    out = tmp_path / "out.parquet"
    argv = [
        "replace",
        str(p),
        str(s),
        "--level",
        "partial_p",
        "--out",
        str(out),
        "--seed",
        "3",
        "--alpha",
        "0.5",
        "--protected",
        "P",
        "σ",
        "--summary",
        str(tmp_path / "sum.json"),
    ]
    assert cli.main(argv) == 0
    df = pd.read_parquet(out)
    assert len(df) == len(split)
    assert all(
        len(json.loads(m)) == 2 for m in df["mapping"]
    )  # round(0.5 * 3) = 2 of 3 shared letters
    summary = json.loads((tmp_path / "sum.json").read_text())
    assert (
        summary["protected"] == ["P", "σ"] and summary["rounding"] == "half_up"
    )  # the config's default
    assert cli.main([*argv[:-1], str(tmp_path / "even.json"), "--rounding", "half_even"]) == 0
    assert json.loads((tmp_path / "even.json").read_text())["rounding"] == "half_even"
    every = tmp_path / "level.parquet"  # without a split: every pair, the level file's columns
    assert cli.main(["replace", str(p), "--level", "trans", "--out", str(every)]) == 0
    assert list(pd.read_parquet(every).columns) == [
        "pair_id",
        "article_id",
        "statement_tokens",
        "proof_tokens",
        "mapping",
    ]
