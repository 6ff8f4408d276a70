"""Filters of Appendix A on hand-built token lists (no dependence on the linearizer)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from proofmatch import filters
from proofmatch.filters import REASONS, classify, filter_pairs, match_omitted, match_reference, read_extraction_reports
from proofmatch.store import read_json, read_parquet


def toks(s: str) -> list[str]:
    """Whitespace tokens; ``$``-prefixed ones are math (the tokens.py convention)."""
    return s.split()


ST_TITLE = "Lemma 3 . 2 ."  # 5 title tokens
PR_TITLE = "Proof ."  # 2 title tokens
# 24 body tokens, 9 of them math; plain English so CLD2 detects it reliably.
EN_STATEMENT = ("Let $x be a real number such that $x $> $0 . Then for every integer $n the power "
                "$x $n is positive and bounded .")
EN_PROOF = ("We argue by induction on the integer $n . The case $n $= $1 holds by assumption , and the "
            "induction step follows because the product of two positive real numbers is positive again .")
FR_STATEMENT = ("Soit $x un nombre réel strictement positif . Alors pour tout entier $n la puissance est "
                "positive et la suite est bornée dans cet espace .")
FR_PROOF = ("On raisonne par récurrence sur l' entier $n . Le cas initial est vrai par hypothèse et "
            "l' hérédité découle du fait que le produit de deux nombres positifs reste positif .")
RU_STATEMENT = ("Пусть $x положительное вещественное число . Тогда для любого целого $n степень "
                "положительна и последовательность ограничена на этом интервале .")
RU_PROOF = ("Доказательство проводится индукцией по $n . Базовый случай верен по предположению , а шаг "
            "индукции следует из того , что произведение двух положительных чисел положительно .")


def row(pair_id: str, statement: str = EN_STATEMENT, proof: str = EN_PROOF, *, article: str = "a1",
        st_title: str = ST_TITLE, pr_title: str = PR_TITLE, error: str | None = None, position: int = 0) -> dict:
    st = toks(st_title) + toks(statement)
    pr = toks(pr_title) + toks(proof)
    return {
        "article_id": article, "statement_id": pair_id.split("/")[-1], "kind": "lemma", "position": position,
        "statement_xml": "<div/>", "proof_xml": "<div/>", "pair_id": pair_id,
        "statement_tokens": None if error else st, "proof_tokens": None if error else pr,
        "statement_title_tokens": len(toks(st_title)), "proof_title_tokens": len(toks(pr_title)),
        "linearize_error": error,
    }


def reasons(rows: list[dict], **kw) -> dict[str, str | None]:
    verdict, _ = classify(pd.DataFrame(rows), **kw)
    return dict(zip([r["pair_id"] for r in rows], verdict["reason"]))


def test_english_pair_is_kept_and_body_lengths_exclude_titles():
    assert len(toks(EN_STATEMENT)) >= 20 and len(toks(EN_PROOF)) >= 20
    assert reasons([row("a1/ok")]) == {"a1/ok": None}
    # 17 body tokens + 5 title tokens = 22 tokens: short, because titles do not count.
    short = " ".join(toks(EN_STATEMENT)[:17])
    verdict, _ = classify(pd.DataFrame([row("a1/s", statement=short)]))
    assert verdict["reason"].tolist() == ["too_short"]
    assert verdict["detail"].tolist() == ["statement 17 < 20"]


def test_length_bounds_are_inclusive():
    exactly_20 = " ".join(["word"] * 10 + ["$x"] * 10)
    exactly_500 = " ".join(["$y"] * 500)
    got = reasons([row("a1/min", statement=exactly_20), row("a1/19", proof=" ".join(toks(exactly_20)[1:])),
                   row("a1/500", proof=exactly_500), row("a1/501", proof=exactly_500 + " $y")], language=None)
    assert got == {"a1/min": None, "a1/19": "too_short", "a1/500": None, "a1/501": "too_long"}


def test_each_reason_and_the_first_match_wins():
    rows = [
        row("a1/err", error="MathML parse error"),
        row("a1/ok"),
        row("a1/title", statement="", st_title="Lemma 5 . 26 ."),
        row("a1/punct", statement=". :"),  # only punctuation after the title
        row("a1/emptyproof", proof=""),
        row("a2/fr", FR_STATEMENT, FR_PROOF, article="a2"),
        row("a3/ru", RU_STATEMENT, RU_PROOF, article="a3"),
        row("a1/omit", proof="Omitted ."),
        row("a1/obvious", proof="This is obvious and will be left to the readers ."),
        row("a1/wellknown", proof="This is well - known ."),
        row("a1/appendix", proof="See Appendix A"),
        row("a1/follows", proof="This follows immediately from Proposition 4 . 4 ( ii ) ."),
        row("a1/similar", proof="Similar to proof of Lemma 6 . 1"),
        row("a1/cite", proof="See [ BK3 , Theorem 4 . 8 ] ."),
        row("a1/elsewhere", proof="The proof will appear elsewhere ."),
        row("a1/above", proof="See above ."),
        row("a1/section", proof="Will be given in section 5 ."),
        row("a1/short", proof="Take $Q $' $= $p $h $i $- $p $i ."),
        row("a1/long", proof=" ".join(["$z"] * 600)),
        # an error wins over everything, a title-only statement over a short proof
        row("a1/title+omit", statement="", proof="Omitted ."),
    ]
    got = reasons(rows)
    assert got == {
        "a1/err": "linearize_error", "a1/ok": None, "a1/title": "title_only", "a1/punct": "title_only",
        "a1/emptyproof": "title_only", "a2/fr": "language", "a3/ru": "language", "a1/omit": "omitted",
        "a1/obvious": "omitted", "a1/wellknown": "omitted", "a1/appendix": "reference_only",
        "a1/follows": "reference_only", "a1/similar": "reference_only", "a1/cite": "reference_only",
        "a1/elsewhere": "reference_only", "a1/above": "reference_only", "a1/section": "reference_only",
        "a1/short": "too_short", "a1/long": "too_long", "a1/title+omit": "title_only",
    }


def test_real_proofs_that_cite_or_say_clearly_are_not_dropped_by_patterns():
    # 35 math-free tokens: longer than the pattern gate, so the citation does not matter.
    long_cite = ("This follows from Proposition 4 . 4 , applied to the restriction of the sheaf to each "
                 "open subset in the cover , together with the fact that the gluing maps agree on all overlaps .")
    # 22 tokens with formulas: "obvious" + "Lemma 6.1" but it carries math, so it is content.
    with_math = "It is obvious from Lemma 6 . 1 that $f $( $x $) $= $0 for all $x in the interval , hence the claim ."
    assert len(toks(long_cite)) > filters.PATTERN_MAX_TOKENS
    assert len(toks(with_math)) >= 20
    assert reasons([row("a1/cite", proof=long_cite), row("a1/math", proof=with_math)]) == {
        "a1/cite": None, "a1/math": None}


def test_pattern_helpers_report_the_phrase():
    assert match_omitted(toks("The proof is omitted .")) == "omitted"
    assert match_omitted(toks("Let $x be given .")) is None
    assert match_reference(toks("See [ 12 ] .")) == "see"
    assert match_reference(toks("We compute directly .")) is None


def test_detail_names_the_side_and_the_language():
    verdict, lang = classify(pd.DataFrame([row("a1/t", proof=""), row("a2/fr", FR_STATEMENT, FR_PROOF, article="a2")]))
    assert verdict["detail"].tolist()[0] == "proof"
    assert verdict["detail"].tolist()[1].startswith("fr (")
    assert lang["languages"]["fr"] == 1


def test_language_none_disables_and_short_texts_are_not_detected():
    assert reasons([row("a2/fr", FR_STATEMENT, FR_PROOF)], language=None) == {"a2/fr": None}
    math_only = " ".join(["$x"] * 25)  # no words at all: too little text to detect
    verdict, lang = classify(pd.DataFrame([row("a1/m", math_only, math_only, st_title="", pr_title="")]))
    assert verdict["reason"].tolist() == [None]
    assert lang["short"] == 1 and sum(lang["languages"].values()) == 0


def test_detector_exceptions_are_counted_and_kept(monkeypatch):
    import polyglot.detect

    class Broken:
        def __init__(self, *a, **k):
            raise RuntimeError("cld2 exploded")

    monkeypatch.setattr(polyglot.detect, "Detector", Broken)
    verdict, lang = classify(pd.DataFrame([row("a1/ok")]))
    assert verdict["reason"].tolist() == [None]
    assert lang["undetected"] == 1


def test_detect_language_survives_control_characters_and_surrogates():
    status, code, _ = filters.detect_language("Let \x01 x be a real number \ud800 and then the claim holds for every x.")
    assert status == "reliable" and code == "en"


def test_duplicates_across_shards_and_bad_titles_raise_clearly():
    seen: set[str] = set()
    classify(pd.DataFrame([row("a1/x")]), seen=seen)
    verdict, _ = classify(pd.DataFrame([row("a1/x"), row("a1/y")]), seen=seen)
    assert verdict["reason"].tolist() == ["duplicate_pair_id", None]
    bad = row("a1/b")
    bad["statement_title_tokens"] = 999
    with pytest.raises(ValueError, match="title length"):
        classify(pd.DataFrame([bad]))
    with pytest.raises(ValueError, match="lacks columns"):
        classify(pd.DataFrame([row("a1/c")]).drop(columns=["proof_tokens"]))


def _write_shards(tmp_path):
    shard0 = [row("a1/ok", position=1), row("a1/ok2", position=0), row("a1/err", error="boom"),
              row("a2/fr", FR_STATEMENT, FR_PROOF, article="a2"), row("a1/omit", proof="Omitted .")]
    shard1 = [row("a3/ru", RU_STATEMENT, RU_PROOF, article="a3"), row("a4/ok", article="a4"),
              row("a1/ok"), row("a4/cite", proof="See [ BK3 , Theorem 4 . 8 ] .", article="a4")]
    paths, reports = [], []
    for i, (rows, skipped) in enumerate([(shard0, {"too_large": 1}), (shard1, {"too_large": 2, "bad_xml": 1})]):
        p = tmp_path / f"shard-{i}.parquet"
        pd.DataFrame(rows).to_parquet(p)
        paths.append(str(p))
        r = tmp_path / f"shard-{i}.report.json"
        r.write_text(json.dumps({"files_seen": 5, "files_ok": 5 - sum(skipped.values()), "files_skipped": skipped,
                                 "skipped_files": [{"path": f"s{i}.xhtml", "reason": "too_large"}],
                                 "theorem_like": 10 + i, "pairs": len(rows), "articles_with_pairs": 2,
                                 "kinds": {"lemma": len(rows)}, "max_file_mb": 64, "max_depth": 256}))
        reports.append(str(r))
    return paths, reports


def test_filter_pairs_writes_pairs_audit_and_a_report_that_adds_up(tmp_path):
    paths, reports = _write_shards(tmp_path)
    out = tmp_path / "data"
    report = filter_pairs(paths, reports, out / "pairs.parquet", out / "audit.parquet", out / "report.json")
    assert report == read_json(out / "report.json")
    assert report["input_pairs"] == 9 and report["kept"] == 3
    assert report["dropped"] == {"linearize_error": 1, "duplicate_pair_id": 1, "title_only": 0, "language": 2,
                                 "omitted": 1, "reference_only": 1, "too_short": 0, "too_long": 0}
    assert set(report["dropped"]) == set(REASONS)
    assert report["kept"] + report["dropped_total"] == report["input_pairs"]
    assert report["check"] == {"kept_plus_dropped_equals_input": True, "extraction_pairs_equal_input": True}
    assert report["languages"]["fr"] == 1 and report["languages"]["ru"] == 1 and report["languages"]["en"] >= 3
    assert report["language_dropped_articles"] == {"fr": 1, "ru": 1}
    ext = report["extraction"]
    assert ext["files_seen"] == 10 and ext["files_skipped"] == {"bad_xml": 1, "too_large": 3}
    assert ext["pairs"] == 9 and ext["theorem_like"] == 21
    assert [f["path"] for f in ext["skipped_files"]] == ["s0.xhtml", "s1.xhtml"]

    pairs = read_parquet(out / "pairs.parquet")
    assert pairs["pair_id"].tolist() == ["a1/ok2", "a1/ok", "a4/ok"]  # sorted by article, position
    assert "linearize_error" not in pairs.columns
    assert list(pairs["statement_tokens"].iloc[0]) == toks(ST_TITLE) + toks(EN_STATEMENT)
    audit = read_parquet(out / "audit.parquet")
    assert list(audit.columns) == list(filters.AUDIT_COLUMNS)
    assert dict(zip(audit["pair_id"], audit["reason"])) == {
        "a1/err": "linearize_error", "a2/fr": "language", "a1/omit": "omitted", "a3/ru": "language",
        "a1/ok": "duplicate_pair_id", "a4/cite": "reference_only"}


def test_stale_shard_against_extraction_report_raises(tmp_path):
    paths, reports = _write_shards(tmp_path)
    with pytest.raises(ValueError, match="stale or missing"):
        filter_pairs(paths[:1], reports, tmp_path / "p.parquet", tmp_path / "a.parquet", tmp_path / "r.json")
    report = filter_pairs(paths[:1], [], tmp_path / "p.parquet", tmp_path / "a.parquet", tmp_path / "r.json")
    assert report["extraction"] is None and report["check"]["extraction_pairs_equal_input"] is None


def test_malformed_extraction_reports_are_rejected(tmp_path):
    bad = tmp_path / "bad.report.json"
    bad.write_text(json.dumps({"files_seen": 1}))
    with pytest.raises(ValueError, match="bad.report.json lacks keys"):
        read_extraction_reports([bad])
    assert read_extraction_reports([]) is None


def test_cli_filter(tmp_path, capsys):
    from proofmatch.cli import main

    paths, reports = _write_shards(tmp_path)
    rc = main(["filter", "--shards", *paths, "--reports", *reports, "--out-pairs", str(tmp_path / "p.parquet"),
               "--out-audit", str(tmp_path / "a.parquet"), "--out-report", str(tmp_path / "r.json"),
               "--language", "none"])
    assert rc == 0
    report = read_json(tmp_path / "r.json")
    assert report["dropped"]["language"] == 0 and report["kept"] == 5
    assert json.loads(capsys.readouterr().out)["kept"] == 5
