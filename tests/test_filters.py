"""Filters of Appendix A on hand-built fragments, linearized by the real linearizer."""

from __future__ import annotations

import json
from xml.sax.saxutils import escape

import pandas as pd
import pytest

from proofmatch.artifacts import read_json, read_parquet
from proofmatch.data import filter_rules, filters
from proofmatch.data.filter_rules import EXAMPLES, REASONS, classify, match_omitted, match_reference
from proofmatch.data.filters import filter_pairs, read_extraction_reports
from proofmatch.data.linearize import linearize_pair

XHTML = "http://www.w3.org/1999/xhtml"
MML = "http://www.w3.org/1998/Math/MathML"

ST_TITLE = "Lemma 3.2."  # 2 whitespace tokens (5 typed tokens: Lemma 3 . 2 .)
PR_TITLE = "Proof."  # 1 whitespace token
# 20 whitespace tokens each, titles included; plain English so CLD2 detects it reliably.
EN_STATEMENT = "Let $x be a real number with $x $> $0 . Then every power of it is positive."
EN_PROOF = (
    "We argue by induction on the integer $n . The case $n $= $1 holds by assumption, so done."
)
FR_STATEMENT = (
    "Soit $x un nombre réel strictement positif. Alors pour tout entier $n la puissance est "
    "positive et la suite est bornée dans cet espace."
)
FR_PROOF = (
    "On raisonne par récurrence sur l'entier $n . Le cas initial est vrai par hypothèse et "
    "l'hérédité découle du fait que le produit de deux nombres positifs reste positif."
)
RU_STATEMENT = (
    "Пусть $x положительное вещественное число. Тогда для любого целого $n степень "
    "положительна и последовательность ограничена на этом интервале."
)
RU_PROOF = (
    "Доказательство проводится индукцией по $n . Базовый случай верен по предположению, а шаг "
    "индукции следует из того, что произведение двух положительных чисел положительно."
)


def body_xml(body: str) -> str:
    """A paragraph: ``$sym`` words become one-symbol formulas, the other words stay text."""
    parts = [
        f'<math xmlns="{MML}"><mi>{escape(w[1:])}</mi></math>'
        if w.startswith("$") and len(w) > 1
        else escape(w)
        for w in body.split()
    ]
    return f"<p>{' '.join(parts)}</p>" if parts else ""


def fragment(title: str, body: str, cls: str) -> str:
    head = f'<h6 class="ltx_title">{escape(title)}</h6>' if title else ""
    return f'<div xmlns="{XHTML}" class="{cls}">{head}{body_xml(body)}</div>'


def n_ws(title: str, body: str) -> int:
    """The reference length of a fragment built by :func:`fragment` (whitespace words + symbols)."""
    return len(title.split()) + len(body.split())


def row(
    pair_id: str,
    statement: str = EN_STATEMENT,
    proof: str = EN_PROOF,
    *,
    article: str = "a1",
    st_title: str = ST_TITLE,
    pr_title: str = PR_TITLE,
    error: str | None = None,
    position: int = 0,
) -> dict:
    base = {
        "article_id": article,
        "statement_id": pair_id.split("/")[-1],
        "kind": "lemma",
        "position": position,
        "statement_xml": fragment(st_title, statement, "ltx_theorem ltx_theorem_lemma"),
        "proof_xml": fragment(pr_title, proof, "ltx_proof"),
    }
    out = linearize_pair(base)
    out["pair_id"] = pair_id
    if error:
        out.update(
            statement_tokens=[],
            proof_tokens=[],
            statement_title_tokens=0,
            proof_title_tokens=0,
            linearize_error=error,
        )
    return out


def verdicts(rows: list[dict], **kw) -> pd.DataFrame:
    verdict, _ = classify(pd.DataFrame(rows), **kw)
    return verdict.set_index(pd.Index([r["pair_id"] for r in rows]))


def reasons(rows: list[dict], **kw) -> dict[str, str | None]:
    return verdicts(rows, **kw)["reason"].to_dict()


def test_lengths_count_whitespace_tokens_of_text_and_math_titles_included():
    assert n_ws(ST_TITLE, EN_STATEMENT) == 20 and n_ws(PR_TITLE, EN_PROOF) == 20
    v = verdicts([row("a1/ok")])
    assert v.loc["a1/ok", "reason"] is None
    assert (v.loc["a1/ok", "statement_length"], v.loc["a1/ok", "proof_length"]) == (20, 20)
    # The typed tokens (punctuation split off) are more numerous: they are not what is counted.
    assert len(row("a1/ok")["statement_tokens"]) > 20
    # One word fewer: 19 tokens, too short, although the title-free typed body has 19 tokens too.
    short = " ".join(EN_STATEMENT.split()[1:])
    v = verdicts([row("a1/s", statement=short)])
    assert (v.loc["a1/s", "reason"], v.loc["a1/s", "example"]) == ("too_short", "other")
    assert v.loc["a1/s", "detail"] == "statement 19 < 20"


def test_lone_full_stops_at_the_ends_of_a_statement_are_not_counted():
    # Ends with a formula then " ." (a lone full stop): the reference's strip(" .") removes it.
    statement = " ".join(["word"] * 17 + ["$x", "."])
    assert n_ws(ST_TITLE, statement) == 21
    v = verdicts(
        [
            row("a1/st", statement=statement),
            row("a1/pr", proof=" ".join(["word"] * 17 + ["$x", "."])),
        ],
        language=None,
    )
    assert v.loc["a1/st", "statement_length"] == 20 and v.loc["a1/st", "reason"] is None
    assert v.loc["a1/pr", "proof_length"] == 20  # proofs are not stripped: 1 + 19


def test_length_bounds_are_inclusive():
    exactly_20 = " ".join(["word"] * 8 + ["$x"] * 10)  # + 2 title tokens
    exactly_500 = " ".join(["$y"] * 499)  # + "Proof."
    got = reasons(
        [
            row("a1/min", statement=exactly_20),
            row("a1/19", proof=" ".join(["word"] * 18)),
            row("a1/500", proof=exactly_500),
            row("a1/501", proof=exactly_500 + " $y"),
        ],
        language=None,
    )
    assert got == {"a1/min": None, "a1/19": "too_short", "a1/500": None, "a1/501": "too_long"}


def test_patterns_only_label_pairs_the_length_filter_drops():
    rows = [
        row("a1/err", error="MathML parse error"),
        row("a1/ok"),
        row("a1/title", statement="", st_title="5.26 Lemma."),
        row("a1/punct", statement=". :"),  # only punctuation after the title
        row("a1/emptyproof", proof=""),
        row("a1/omit", proof="Omitted."),
        row("a1/obvious", proof="This is obvious and will be left to the readers."),
        row("a1/wellknown", proof="This is well-known."),
        row("a1/appendix", proof="See Appendix A"),
        row("a1/follows", proof="This follows immediately from Proposition 4.4 (ii)."),
        row("a1/similar", proof="Similar to proof of Lemma 6.1"),
        row("a1/cite", proof="See [BK3, Theorem 4.8]."),
        row("a1/elsewhere", proof="The proof will appear elsewhere."),
        row("a1/above", proof="See above."),
        row("a1/section", proof="Will be given in section 5."),
        row("a1/take", proof="Take $Q $' $= $p $h $i $- $p $i ."),
        row("a1/long", proof=" ".join(["$z"] * 600)),
        row("a1/title+omit", statement="", proof="Omitted."),  # the title wins over the phrase
    ]
    v = verdicts(rows)
    assert v["reason"].to_dict() == {
        "a1/err": "linearize_error",
        "a1/ok": None,
        "a1/long": "too_long",
        **{
            r["pair_id"]: "too_short"
            for r in rows
            if r["pair_id"] not in ("a1/err", "a1/ok", "a1/long")
        },
    }
    assert v["example"].dropna().to_dict() == {
        "a1/title": "title_only",
        "a1/punct": "title_only",
        "a1/emptyproof": "title_only",
        "a1/omit": "omitted",
        "a1/obvious": "omitted",
        "a1/wellknown": "omitted",
        "a1/appendix": "reference_only",
        "a1/follows": "reference_only",
        "a1/similar": "reference_only",
        "a1/cite": "reference_only",
        "a1/elsewhere": "reference_only",
        "a1/above": "reference_only",
        "a1/section": "reference_only",
        "a1/take": "other",
        "a1/title+omit": "title_only",
    }
    assert v.loc["a1/omit", "detail"] == "proof 2 < 20; omitted: 'omitted'"
    assert v.loc["a1/emptyproof", "detail"] == "proof 1 < 20; title_only: proof"


def test_no_proof_of_20_or_more_tokens_is_dropped_by_a_pattern():
    # 20-30 token proofs that cite a result or say "obvious": the old pattern rules dropped these.
    cites = (
        "This follows immediately from Proposition 4.4 applied to the restriction of the sheaf to each open "
        "set of the given cover."
    )
    obvious = "It is obvious from Lemma 6.1 that the map is injective, hence the claim holds for every point of X."
    see = "See [BK3, Theorem 4.8] for the general case; here we only check that the given map is injective on X."
    proofs = {"a1/cites": cites, "a1/obvious": obvious, "a1/see": see}
    for p in proofs.values():
        assert 20 <= n_ws(PR_TITLE, p) <= 30
        assert match_omitted(p.split()) or match_reference(p.split())
    v = verdicts([row(k, proof=p) for k, p in proofs.items()])
    assert v["reason"].isna().all()
    assert (v["proof_length"] >= 20).all()


def test_pattern_helpers_report_the_phrase():
    assert match_omitted("The proof is omitted .".split()) == "omitted"
    assert match_omitted("Let $x be given .".split()) is None
    assert match_reference("See [ 12 ] .".split()) == "see"
    assert match_reference("We compute directly .".split()) is None


def test_language_is_decided_per_article_and_drops_all_its_pairs():
    rows = [
        # a French article: one pair alone is too short to detect, one is title-only; all go
        row("fr/1", FR_STATEMENT, FR_PROOF, article="fr"),
        row("fr/2", FR_STATEMENT, "Évident.", article="fr", pr_title="Preuve."),
        row("fr/3", "", FR_PROOF, article="fr", st_title="Lemme 2."),
        row("ru/1", RU_STATEMENT, RU_PROOF, article="ru"),
        # an English article with one French pair: the article is English, every pair kept
        row("en/1", article="en"),
        row("en/2", article="en"),
        row("en/3", article="en"),
        row("en/4", FR_STATEMENT, FR_PROOF, article="en"),
    ]
    verdict, lang = classify(pd.DataFrame(rows))
    got = dict(zip([r["pair_id"] for r in rows], verdict["reason"]))
    assert got == {
        "fr/1": "language",
        "fr/2": "language",
        "fr/3": "language",
        "ru/1": "language",
        "en/1": None,
        "en/2": None,
        "en/3": None,
        "en/4": None,
    }
    assert verdict["detail"][0].startswith("article in fr (")
    assert lang["articles"] == 3 and dict(lang["languages"]) == {"en": 1, "fr": 1, "ru": 1}
    assert dict(lang["dropped_articles"]) == {"fr": 1, "ru": 1}
    assert dict(lang["dropped_pairs"]) == {"fr": 3, "ru": 1}


def test_language_none_disables_and_short_articles_are_kept_and_counted():
    assert reasons([row("fr/1", FR_STATEMENT, FR_PROOF, article="fr")], language=None) == {
        "fr/1": None
    }
    math_only = " ".join(["$x"] * 25)  # no words at all: too little text to detect
    verdict, lang = classify(
        pd.DataFrame(
            [
                row("m/1", math_only, math_only, st_title="", pr_title="", article="m"),
                row("m/2", math_only, math_only, st_title="", pr_title="", article="m"),
            ]
        )
    )
    assert verdict["reason"].tolist() == [None, None]
    assert lang["articles"] == 1 and lang["short"] == 1 and sum(lang["languages"].values()) == 0


def test_unreliable_and_failed_detections_keep_the_article(monkeypatch):
    calls = iter([("unreliable", "fr", 40.0), ("undetected", None, 0.0)])
    monkeypatch.setattr(filter_rules, "detect_language", lambda text: next(calls))
    verdict, lang = classify(
        pd.DataFrame([row("a/1", FR_STATEMENT, FR_PROOF, article="a"), row("b/1", article="b")])
    )
    assert verdict["reason"].tolist() == [None, None]
    assert (lang["unreliable"], lang["undetected"]) == (1, 1)


def test_detector_exceptions_are_undetected(monkeypatch):
    import polyglot.detect

    class Broken:
        def __init__(self, *a, **k):
            raise RuntimeError("cld2 exploded")

    monkeypatch.setattr(polyglot.detect, "Detector", Broken)
    assert filter_rules.detect_language("Let x be a real number.") == ("undetected", None, 0.0)


def test_detect_language_survives_control_characters_and_surrogates():
    status, code, _ = filter_rules.detect_language(
        "Let \x01 x be a real number \ud800 and then the claim holds for every x."
    )
    assert status == "reliable" and code == "en"


def test_duplicates_stale_tokens_and_bad_titles_raise_or_drop():
    v, _ = classify(pd.DataFrame([row("a1/x"), row("a1/y"), row("a1/x")]))
    assert v["reason"].tolist() == [None, None, "duplicate_pair_id"]
    stale = row("a1/b")
    stale["proof_tokens"] = stale["proof_tokens"][:-1]
    with pytest.raises(ValueError, match="stale token column"):
        classify(pd.DataFrame([stale]))
    bad = row("a1/b")
    bad["statement_title_tokens"] = 999
    with pytest.raises(ValueError, match="title length"):
        classify(pd.DataFrame([bad]))
    with pytest.raises(ValueError, match="lacks columns"):
        classify(pd.DataFrame([row("a1/c")]).drop(columns=["proof_tokens"]))


def _write_shards(tmp_path):
    shard0 = [
        row("a1/ok", position=1),
        row("a1/ok2", position=0),
        row("a1/err", error="boom"),
        row("a2/fr", FR_STATEMENT, FR_PROOF, article="a2"),
        row("a1/omit", proof="Omitted."),
    ]
    # a3 is split across the two shards: the language decision still sees all its pairs
    shard1 = [
        row("a3/ru", RU_STATEMENT, RU_PROOF, article="a3"),
        row("a4/ok", article="a4"),
        row("a1/ok"),
        row("a4/cite", proof="See [BK3, Theorem 4.8].", article="a4"),
    ]
    shard0.append(
        row("a3/ru2", RU_STATEMENT, "Очевидно.", article="a3", pr_title="Доказательство.")
    )
    paths, reports = [], []
    for i, (rows, skipped) in enumerate(
        [(shard0, {"too_large": 1}), (shard1, {"too_large": 2, "bad_xml": 1})]
    ):
        p = tmp_path / f"shard-{i}.parquet"
        pd.DataFrame(rows).to_parquet(p)
        paths.append(str(p))
        r = tmp_path / f"shard-{i}.report.json"
        r.write_text(
            json.dumps(
                {
                    "files_seen": 5,
                    "files_ok": 5 - sum(skipped.values()),
                    "files_skipped": skipped,
                    "skipped_files": [{"path": f"s{i}.xhtml", "reason": "too_large"}],
                    "theorem_like": 10 + i,
                    "pairs": len(rows),
                    "articles_with_pairs": 2,
                    "kinds": {"lemma": len(rows)},
                    "max_file_mb": 64,
                    "max_depth": 256,
                    **(
                        {
                            "near_misses": 2,
                            "near_miss_sides": {"statement": 2},
                            "near_miss_classes": {"mytheorem -> ltx_proof": 2},
                        }
                        if i
                        else {}
                    ),
                }
            )
        )
        reports.append(str(r))
    return paths, reports


def test_filter_pairs_writes_pairs_audit_and_a_report_that_adds_up(tmp_path):
    paths, reports = _write_shards(tmp_path)
    out = tmp_path / "data"
    report = filter_pairs(
        paths, reports, out / "pairs.parquet", out / "audit.parquet", out / "report.json"
    )
    assert report == read_json(out / "report.json")
    assert report["input_pairs"] == 10 and report["kept"] == 3
    assert report["dropped"] == {
        "linearize_error": 1,
        "duplicate_pair_id": 1,
        "language": 3,
        "too_short": 2,
        "too_long": 0,
    }
    assert set(report["dropped"]) == set(REASONS)
    assert report["too_short_examples"] == {
        "title_only": 0,
        "omitted": 1,
        "reference_only": 1,
        "other": 0,
    }
    assert set(report["too_short_examples"]) == set(EXAMPLES)
    assert report["kept"] + report["dropped_total"] == report["input_pairs"]
    assert report["check"] == {
        "kept_plus_dropped_equals_input": True,
        "too_short_examples_add_up": True,
        "language_articles_add_up": True,
        "extraction_pairs_equal_input": True,
    }
    assert report["language_articles"] == 4 and report["languages"] == {"en": 2, "fr": 1, "ru": 1}
    assert report["language_dropped_articles"] == {"fr": 1, "ru": 1}
    assert report["language_dropped_pairs"] == {"fr": 1, "ru": 2}
    ext = report["extraction"]
    assert ext["files_seen"] == 10 and ext["files_skipped"] == {"bad_xml": 1, "too_large": 3}
    assert ext["pairs"] == 10 and ext["theorem_like"] == 21
    # near misses of the pair rule summed (shard 0's report predates them)
    assert ext["near_misses"] == 2 and ext["near_miss_sides"] == {"statement": 2}
    assert ext["near_miss_classes"] == {"mytheorem -> ltx_proof": 2}
    assert [f["path"] for f in ext["skipped_files"]] == ["s0.xhtml", "s1.xhtml"]

    pairs = read_parquet(out / "pairs.parquet")
    assert pairs["pair_id"].tolist() == ["a1/ok2", "a1/ok", "a4/ok"]  # sorted by article, position
    assert "linearize_error" not in pairs.columns
    assert list(pairs["statement_tokens"].iloc[0]) == row("a1/ok2")["statement_tokens"]
    audit = read_parquet(out / "audit.parquet")
    assert list(audit.columns) == list(filter_rules.AUDIT_COLUMNS)
    assert dict(zip(audit["pair_id"], audit["reason"])) == {
        "a1/err": "linearize_error",
        "a2/fr": "language",
        "a1/omit": "too_short",
        "a3/ru2": "language",
        "a3/ru": "language",
        "a1/ok": "duplicate_pair_id",
        "a4/cite": "too_short",
    }
    examples = audit.set_index("pair_id")["example"].dropna().to_dict()
    assert examples == {"a1/omit": "omitted", "a4/cite": "reference_only"}
    assert audit.set_index("pair_id").loc["a4/cite", "proof_length"] == 5
    assert pd.isna(audit.set_index("pair_id").loc["a1/err", "proof_length"])


def test_stale_shard_against_extraction_report_raises(tmp_path):
    paths, reports = _write_shards(tmp_path)
    with pytest.raises(ValueError, match="stale or missing"):
        filter_pairs(
            paths[:1], reports, tmp_path / "p.parquet", tmp_path / "a.parquet", tmp_path / "r.json"
        )
    report = filter_pairs(
        paths[:1], [], tmp_path / "p.parquet", tmp_path / "a.parquet", tmp_path / "r.json"
    )
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
    rc = main(
        [
            "filter",
            "--shards",
            *paths,
            "--reports",
            *reports,
            "--out-pairs",
            str(tmp_path / "p.parquet"),
            "--out-audit",
            str(tmp_path / "a.parquet"),
            "--out-report",
            str(tmp_path / "r.json"),
            "--language",
            "none",
        ]
    )
    assert rc == 0
    report = read_json(tmp_path / "r.json")
    assert report["dropped"]["language"] == 0 and report["kept"] == 5
    assert report["language_articles"] == 0
    assert json.loads(capsys.readouterr().out)["kept"] == 5


def test_shard_by_shard_filtering_equals_filtering_the_whole_input(tmp_path, monkeypatch):
    """The shards are judged one at a time and their kept pairs merged a row group at a time: the
    pairs, audit and report equal those of the same rows in one shard, articles split across
    shards (a1, a3) and a duplicate in a later shard included."""
    paths, _ = _write_shards(tmp_path)
    more = [row(f"b{i}/p{j}", article=f"b{i}", position=2 - j) for i in range(6) for j in range(3)]
    shards = [read_parquet(p) for p in paths] + [pd.DataFrame(more[k::3]) for k in range(3)]
    whole = tmp_path / "whole.parquet"
    pd.concat(shards, ignore_index=True).to_parquet(whole)
    split = []
    for k, frame in enumerate(shards):
        split.append(str(tmp_path / f"part-{k}.parquet"))
        frame.to_parquet(split[-1])
    monkeypatch.setattr(filters, "MERGE_READ_ROWS", 5)  # one-row row groups for five shards
    monkeypatch.setattr(filters, "MERGE_WRITE_ROWS", 2)
    outs = []
    for name, inputs in (("one", [str(whole)]), ("many", split)):
        out = tmp_path / name
        report = filter_pairs(
            inputs, [], out / "pairs.parquet", out / "audit.parquet", out / "report.json"
        )
        outs.append(
            (report, read_parquet(out / "pairs.parquet"), read_parquet(out / "audit.parquet"))
        )
    (r1, p1, a1), (r2, p2, a2) = outs
    assert r1 == r2 and r1["kept"] == 3 + 18 and r1["dropped"]["duplicate_pair_id"] == 1
    assert (
        p1["pair_id"].tolist()
        == p2["pair_id"].tolist()
        == ["a1/ok2", "a1/ok", "a4/ok"] + [f"b{i}/p{j}" for i in range(6) for j in (2, 1, 0)]
    )
    pd.testing.assert_frame_equal(
        p1.drop(columns=["statement_tokens", "proof_tokens"]),
        p2.drop(columns=["statement_tokens", "proof_tokens"]),
    )
    assert all(list(x) == list(y) for x, y in zip(p1["proof_tokens"], p2["proof_tokens"]))
    pd.testing.assert_frame_equal(a1, a2)
