"""`proofmatch show` on every artifact kind, with hand-built Parquets."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from proofmatch.data.show import ShowError, detect_kind, format_mapping, format_tokens, show

STATEMENT = [
    "Lemma",
    "3",
    ".",
    "2",
    ".",
    "Let",
    "$x",
    "$=",
    "$y~bold",
    "be",
    "(",
    "a",
    ")",
    "real",
    ".",
]
PROOF = ["Proof", ".", "See", "[", "BK3", ",", "Theorem", "4", ".", "8", "]", "."]


def pairs_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "article_id": ["a1", "a1", "a2"],
            "statement_id": ["s1", "s2", "s1"],
            "kind": ["lemma"] * 3,
            "position": [0, 1, 0],
            "statement_xml": ["<div/>"] * 3,
            "proof_xml": ["<div/>"] * 3,
            "pair_id": ["a1/s1", "a1/s2", "a2/s1"],
            "statement_tokens": [STATEMENT] * 3,
            "proof_tokens": [PROOF] * 3,
            "statement_title_tokens": [5] * 3,
            "proof_title_tokens": [2] * 3,
        }
    )


def test_format_tokens_marks_math_and_titles():
    assert format_tokens(STATEMENT, title=5) == "«Lemma 3.2.» Let $x = y~bold$ be (a) real."
    assert format_tokens(PROOF, title=2) == "«Proof.» See [BK3, Theorem 4.8]."
    assert format_tokens(["$a", "$+", "$b"], color=True) == "\x1b[36m$a + b$\x1b[0m"
    assert format_tokens(None) == ""


def test_detect_kind():
    assert detect_kind(pairs_frame().columns) == "pairs"
    assert detect_kind(["pair_id", "article_id", "reason", "detail"]) == "audit"
    assert (
        detect_kind(
            ["pair_id", "article_id", "part", "statement_tokens", "proof_tokens", "mapping"]
        )
        == "replaced"
    )
    assert detect_kind(["article_id", "statement_id", "statement_xml", "proof_xml"]) == "extract"
    assert detect_kind(["pair_id", "article_id", "part"]) == "split"
    assert detect_kind(["article_id", "path", "bytes", "shard"]) == "table"


def test_show_pairs_with_filters(tmp_path):
    p = tmp_path / "pairs.parquet"
    pairs_frame().to_parquet(p)
    text, n = show(str(p), article="a1")
    assert n == 2 and "pairs, 3 rows, 2 shown" in text
    assert "== a1/s1  (article_id=a1, kind=lemma, position=0)" in text
    assert "statement [12 text + 3 math]: «Lemma 3.2.» Let $x = y~bold$ be (a) real." in text
    assert "a2/s1" not in text and "tokens:" not in text
    text, n = show(str(p), pair="a2/s1", show_tokens=True)
    assert n == 1 and "statement tokens: ['Lemma', '3'" in text
    assert show(str(p), limit=1)[1] == 1
    text, n = show(str(p), article="nope")
    assert n == 0 and "no row matches" in text
    with pytest.raises(ShowError, match="no 'reason' column"):
        show(str(p), reason="omitted")


def test_show_audit_reasons(tmp_path):
    p = tmp_path / "audit.parquet"
    pd.DataFrame(
        {
            "pair_id": ["a1/s1", "a1/s2", "a2/s1"],
            "article_id": ["a1", "a1", "a2"],
            "reason": ["omitted", "language", "omitted"],
            "detail": ["omitted", "fr (99%)", "trivial"],
            "statement_tokens": [STATEMENT] * 3,
            "proof_tokens": [["Proof", ".", "Omitted", "."]] * 3,
        }
    ).to_parquet(p)
    text, n = show(str(p), reason="omitted")
    assert n == 2 and "reasons: omitted=2" in text
    assert "== a1/s1  (article_id=a1)  [omitted] omitted" in text and "language" not in text
    assert "proof [4 text + 0 math]: Proof. Omitted." in text


def test_show_replaced_mapping(tmp_path):
    p = tmp_path / "replaced.parquet"
    pd.DataFrame(
        {
            "pair_id": ["a1/s1", "a2/s1"],
            "article_id": ["a1", "a2"],
            "part": ["train", "test"],
            "statement_tokens": [STATEMENT] * 2,
            "proof_tokens": [["$q", "$=", "$r"], ["$x"]],
            "mapping": [json.dumps({"x": "q", "y": "r"}), json.dumps({})],
        }
    ).to_parquet(p)
    text, n = show(str(p))
    assert n == 2
    assert "== a1/s1  (article_id=a1, part=train)" in text
    assert "mapping: x→q, y→r" in text and "mapping: (identity)" in text
    assert "proof [0 text + 3 math]: $q = r$" in text
    assert format_mapping('[["a", "b"]]') == "a→b" and format_mapping(None) == "(none)"


def test_show_split_extract_and_generic_tables(tmp_path):
    split = tmp_path / "split.parquet"
    pd.DataFrame(
        {
            "pair_id": ["a/1", "a/2", "b/1"],
            "article_id": ["a", "a", "b"],
            "part": ["train", "train", "test"],
        }
    ).to_parquet(split)
    text, n = show(str(split))
    assert n == 3 and "split, 3 rows" in text and "train" in text and "test" in text
    extract = tmp_path / "extract.parquet"
    pairs_frame().drop(columns=["statement_tokens", "proof_tokens"]).to_parquet(extract)
    text, n = show(str(extract), pair="a1/s2")
    assert n == 1 and "statement_xml: <div/>" in text
    manifest = tmp_path / "manifest.parquet"
    pd.DataFrame(
        {"article_id": ["a", "b"], "path": ["x", "y"], "bytes": [1, 2], "shard": [0, 1]}
    ).to_parquet(manifest)
    text, n = show(str(manifest), article="b")
    assert n == 1 and "table, 2 rows" in text and " b " in text + " "


def test_cli_show_exit_codes(tmp_path, capsys):
    from proofmatch.cli import main

    p = tmp_path / "pairs.parquet"
    pairs_frame().to_parquet(p)
    assert main(["show", str(p), "--pair", "a1/s2", "--tokens"]) == 0
    out = capsys.readouterr().out
    assert "== a1/s2" in out and "proof tokens:" in out
    assert main(["show", str(p), "--pair", "missing"]) == 1


def test_show_refuses_a_corrupt_parquet_cleanly(tmp_path, capsys) -> None:
    """A damaged file (no digest to name it) is one line naming it and the fix, not a traceback."""
    from proofmatch import cli

    bad = tmp_path / "pairs.parquet"
    bad.write_bytes(b"PAR1" + b"\x00" * 100 + b"PAR1")
    assert cli.main(["show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"proofmatch show: {bad} is not a readable Parquet" in err and "Traceback" not in err


def test_show_answers_any_path_without_a_traceback(tmp_path, capsys):
    """A JSON report is printed indented; a missing path, a folder, another format, a corrupt
    Parquet and a changed one (digest) are refused with a message naming the path (exit 2)."""
    from proofmatch.artifacts import write_parquet
    from proofmatch.cli import main

    report = tmp_path / "filter_report.json"
    report.write_text(json.dumps({"articles_in": 3, "dropped": {"language": 1}}))
    assert main(["show", str(report)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{report}: JSON\n{{\n") and '    "language": 1' in out
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 not really")
    changed = tmp_path / "changed.parquet"
    write_parquet(pairs_frame(), changed)
    changed.write_bytes(changed.read_bytes()[:-20] + b"\0" * 20)
    for path, message in [
        (tmp_path / "missing.parquet", "no such file"),
        (tmp_path, "is a folder"),
        (tmp_path / "table1.md", "show reads Parquet artifacts"),
        (bad_json, "is not valid JSON"),
        (corrupt, "is not a readable Parquet file"),
        (changed, "changed.parquet"),
    ]:
        if path.suffix == ".md":
            path.write_text("| a |\n")
        assert main(["show", str(path)]) == 2, path
        err = capsys.readouterr().err
        assert err.startswith("proofmatch show: ") and message in err and "Traceback" not in err
        assert str(path) in err or path.name in err, err


def test_show_reason_lists_the_reasons_held(tmp_path):
    p = tmp_path / "audit.parquet"
    pd.DataFrame(
        {
            "pair_id": ["a/1", "a/2", "b/1"],
            "article_id": ["a", "a", "b"],
            "reason": ["too_short", "language", "too_short"],
            "detail": ["", "", ""],
        }
    ).to_parquet(p)
    with pytest.raises(
        ShowError, match=r"the reasons in this file: language \(1\), too_short \(2\)"
    ):
        show(str(p), reason="nosuch")


def test_show_evaluations_and_symbols_readably(tmp_path):
    """An evaluation prints its summary and, per statement, the gold rank and the first proofs
    of its top-k list (no line of thousands of characters); symbols.parquet is "symbols"."""
    ids = [f"art-{i:04d}/S{i}.Thm{i}" for i in range(500)]
    ev = tmp_path / "test-conservation.parquet"
    pd.DataFrame(
        {
            "pair_id": ids[:3],
            "gold_rank": [1, 2, 10],
            "top1": [ids[0], ids[5], ids[7]],
            "global_pred": [ids[0], ids[5], ids[7]],
            "topk_ids": [ids] * 3,
            "topk_scores": [[float(500 - i) for i in range(500)]] * 3,
        }
    ).to_parquet(ev)
    text, n = show(str(ev), limit=2)
    assert n == 2 and "evaluation, 3 rows, 2 shown" in text
    assert "statements 3: MRR 53.33 %, top-1 accuracy 33.33 %" in text
    assert f"== {ids[0]}  gold rank 1 (top 1)" in text and f"500.000  {ids[0]}  (its proof)" in text
    assert "… 495 more in its top 500" in text
    assert max(len(line) for line in text.splitlines()) < 200
    sym = tmp_path / "symbols.parquet"
    pd.DataFrame(
        {
            "pair_id": ["a/1"],
            "article_id": ["a"],
            "statement_tokens": [STATEMENT],
            "proof_tokens": [PROOF],
            "slots": [[{"side": "proof", "index": 3}]],
            "statement_candidates": ["xy"],
            "statement_letters": ["xy"],
            "statement_constants": [""],
            "proof_candidates": [""],
            "proof_letters": [""],
            "proof_constants": [""],
        }
    ).to_parquet(sym)
    text, n = show(str(sym))
    assert n == 1 and "symbols, 1 rows" in text and "pairs" not in text.splitlines()[0]
    assert "slots: 1 replaceable symbol places" in text and "candidates xy" in text
    wide = tmp_path / "wide.parquet"
    pd.DataFrame({"a": ["x" * 5000], "b": [list(range(1000))]}).to_parquet(wide)
    text, _ = show(str(wide))
    assert "a kind with no view of its own" in text and max(map(len, text.splitlines())) < 300
