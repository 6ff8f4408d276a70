"""`proofmatch show` on every artifact kind, with hand-built Parquets."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from proofmatch.data.show import detect_kind, format_mapping, format_tokens, show

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
    with pytest.raises(ValueError, match="no 'reason' column"):
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
    assert f"proofmatch show: {bad}: cannot be read" in err and "Traceback" not in err
