"""Symbol replacement rules (paper §5, Appendix C), determinism, split files and CLI."""

from __future__ import annotations

import itertools
import json
import random

import pandas as pd
import pytest

from proofmatch import cli
from proofmatch.linearize import linearize_fragment
from proofmatch.replace import (
    DEFAULT_PROTECTED,
    GREEK_CAPITAL_TARGETS,
    family_of,
    pair_rng,
    replace_pair,
    replace_split_file,
)
from proofmatch.tokens import is_math, split_math

XHTML = "http://www.w3.org/1999/xhtml"
MML = "http://www.w3.org/1998/Math/MathML"
_ids = itertools.count()


def mi(char: str, variant: str | None = None) -> tuple[str, str | None]:
    return char, variant


def formula(*symbols: tuple[str, str | None]) -> str:
    """A LaTeXML-style formula listing ``symbols``; content and TeX annotations repeat the letters."""
    n = next(_ids)
    pres = "<mo>,</mo>".join(
        f'<mi id="m{n}.{k}" xref="m{n}.{k}.cmml"' + (f' mathvariant="{v}"' if v else "") + f">{c}</mi>"
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


def run(st, pr, level, seed=0, alpha=0.5, protected=()):
    return replace_pair(statement(*st), proof(*pr), level, pair_rng(seed, level, "p/1"), alpha, protected)


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
        assert len(tokens) == len(linearize_fragment(proof(*letters("abyz"))))  # no annotation leaked


def test_case_coupling_both_directions_and_greek():
    for seed in range(20):
        _, m = run(letters("a"), letters("aA"), "full", seed)  # A is not in the statement
        assert m["A"] == m["a"].upper() and m["a"] != "a"
        _, m = run(letters("B"), letters("bB"), "full", seed)  # only the capital is shared
        assert m["b"] not in "bB" and m["b"].islower() and m["B"] == m["b"].upper()
        _, m = run(letters("B"), letters("b"), "full", seed)  # sharing compares the letter, case included
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
    assert {c for c, _ in math_symbols(tokens)} == set("abcdefghijklmnopqrstuvwxyz") - {next(c for c in "ab" if c not in kept)}


def test_double_struck_and_constants_stay():
    st = [mi("ℝ"), mi("R"), mi("π"), mi("e", "normal"), mi("e"), mi("i", "normal"), mi("N", "double-struck")]
    pr = [mi("ℝ"), mi("R"), mi("π"), mi("e", "normal"), mi("e"), mi("i", "normal"), mi("N", "double-struck")]
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
        _, m_full = run(st, pr, "full", seed, protected=DEFAULT_PROTECTED)  # non-_p level: nothing protected
        assert set(m_full) == {"P", "p", "E", "x"}


def test_partial_replaces_round_half_up_of_shared_groups():
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
        _, m0 = run(letters("abc"), letters("abc"), "partial", seed, alpha=0.0)
        assert m0 == {}
        _, mall = run(letters("abc"), letters("abc"), "partial", seed, alpha=1.0)
        assert set(mall) == set("abc")
    assert len(chosen) > 1  # the subset is random


def test_transposition_permutes_shared_symbols_without_fixed_point():
    for seed in range(30):
        tokens, m = run(letters("abcαβz"), letters("abcαβAy"), "trans", seed)
        latin = {c: m[c] for c in "abc"}
        assert sorted(latin.values()) == ["a", "b", "c"] and all(c != t for c, t in latin.items())
        assert m["α"] == "β" and m["β"] == "α"
        assert m["A"] == m["a"].upper()
        assert "y" not in m and "z" not in m
        assert len(set(math_symbols(tokens))) == 7


def test_transposition_single_shared_symbol_stays():
    tokens, m = run(letters("aα"), letters("aαb"), "trans", 0)
    assert m == {}
    assert tokens == linearize_fragment(proof(*letters("aαb")))


def test_transposition_skips_letters_used_as_constants():
    st = [mi("e"), mi("a"), mi("b")]
    pr = [mi("e"), mi("e", "normal"), mi("a"), mi("b")]
    for seed in range(10):
        _, m = run(st, pr, "trans", seed)
        assert set(m) == {"a", "b"} and m["a"] == "b"


def test_no_shared_symbols_gives_the_original_tokens():
    for level in ("partial", "full", "trans", "partial_p", "full_p"):
        tokens, m = run(letters("ab"), letters("xy"), level)
        assert m == {} and tokens == linearize_fragment(proof(*letters("xy")))


def test_invalid_arguments():
    with pytest.raises(ValueError, match="unknown replacement level"):
        run(letters("a"), letters("a"), "zero")
    with pytest.raises(ValueError, match="alpha"):
        run(letters("a"), letters("a"), "partial", alpha=1.5)


def test_pair_rng_depends_only_on_seed_level_and_pair():
    assert pair_rng(1, "full", "x/1").random() == pair_rng(1, "full", "x/1").random()
    draws = {pair_rng(s, lv, p).random() for s in (1, 2) for lv in ("full", "trans") for p in ("x/1", "x/2")}
    assert len(draws) == 8


# --- split files -------------------------------------------------------------------------------


def _pairs(tmp_path, n=12):
    rng = random.Random(5)
    rows = []
    for k in range(n):
        st = rng.sample("abcdefghkmnpqrst", 5)
        pr = st[:3] + rng.sample("uvwxyz", 2)
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
        {"pair_id": pairs["pair_id"], "article_id": pairs["article_id"], "part": ["train", "dev", "test"] * (n // 3)}
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
    pairs, split = _pairs(tmp_path)
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
    assert list(out.columns) == ["pair_id", "article_id", "part", "statement_tokens", "proof_tokens", "mapping"]
    assert list(out["pair_id"]) == list(pd.read_parquet(s2)["pair_id"])  # rows follow the split
    assert list(out["part"]) == list(pd.read_parquet(s2)["part"])
    for row in out.itertuples():
        mapping = json.loads(row.mapping)
        assert len(mapping) == 3  # three shared letters per pair
        original = pairs.set_index("pair_id").loc[row.pair_id]
        assert list(row.statement_tokens) == list(original["statement_tokens"])
        assert list(row.proof_tokens) != list(original["proof_tokens"])


def test_split_file_conservation_and_subset(tmp_path):
    pairs, split = _pairs(tmp_path)
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
    pairs, split = _pairs(tmp_path)
    p = _write(tmp_path, "p.parquet", pairs.iloc[1:])
    s = _write(tmp_path, "s.parquet", split)
    with pytest.raises(ValueError, match="not in"):
        replace_split_file(p, s, "full", tmp_path / "o.parquet", seed=1)
    assert not (tmp_path / "o.parquet").exists()


def test_cli_replace(tmp_path):
    pairs, split = _pairs(tmp_path)
    p, s = _write(tmp_path, "p.parquet", pairs), _write(tmp_path, "s.parquet", split)
    out = tmp_path / "out.parquet"
    argv = ["replace", str(p), str(s), "--level", "partial_p", "--out", str(out), "--seed", "3", "--alpha", "0.5",
            "--protected", "P", "σ"]
    assert cli.main(argv) == 0
    df = pd.read_parquet(out)
    assert len(df) == len(split)
    assert all(len(json.loads(m)) == 2 for m in df["mapping"])  # round(0.5 * 3) = 2 of 3 shared letters


def test_transposition_keeps_the_shared_letters_exactly():
    """n, t (lowercase in the statement) and B, E (capitals) permute within their case class,
    so the proof shares exactly the statement's letters afterwards (paper: a permutation)."""
    from proofmatch.replace import Symbols, pair_rng, plan_mapping

    letters = {"B", "E", "n", "t", "Q", "q"}
    st = Symbols(candidates=set(letters), letters=set(letters))
    pf = Symbols(candidates=set(letters), letters=set(letters))
    for i in range(30):
        mapping = plan_mapping(st, pf, "trans", pair_rng(i, "trans", "p"))
        image = {mapping.get(c, c) for c in letters}
        assert image == letters
        assert all(mapping[c] != c for c in ("B", "E", "n", "t"))  # no fixed point where >= 2
        assert mapping.get("q", "q") == "q" and mapping.get("Q", "Q") == "Q"  # alone in its class
