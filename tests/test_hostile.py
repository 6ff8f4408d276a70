"""Hostile inputs (issue 35): generated files that must be skipped or counted, never kill a run."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proofmatch.data import extract, statements, xmlsafe

XHTML = "http://www.w3.org/1999/xhtml"


def nested_doc(depth: int, payload_chars: int) -> bytes:
    """``depth`` theorems nested one inside the other, each followed by its proof; the innermost
    holds ``payload_chars`` of text, which every enclosing statement's XML would repeat."""
    open_ = "".join(f'<div class="ltx_theorem ltx_theorem_lemma" id="t{i}"><p>L{i}.</p>' for i in range(depth))
    close = "</div><div class=\"ltx_proof\"><p>P.</p></div>" * depth
    inner = "<p>" + "x " * (payload_chars // 2) + "</p>"
    return f'<html xmlns="{XHTML}"><body>{open_}{inner}{close}</body></html>'.encode()


def test_nested_statements_are_bounded_by_an_output_budget() -> None:
    data = nested_doc(100, 100_000)  # unbounded: ~100 x 100 KB = 10 MB of pairs from 100 KB
    with pytest.raises(xmlsafe.SkipFile) as err:
        extract.extract_bytes(data, "nest")
    assert err.value.reason == "output_too_large"
    shallow = nested_doc(3, 1000)  # a few nested statements stay well inside the budget
    res = extract.extract_bytes(shallow, "nest")
    assert len(res.pairs) == 3
    total = sum(len(p["statement_xml"]) + len(p["proof_xml"]) for p in res.pairs)
    assert total <= statements.output_budget(len(shallow))


def test_nested_statements_worst_case_peak_rss(tmp_path: Path) -> None:
    """The issue's worst case (4 MB unpacked, nested ~200 deep: over 1 GB of pairs unbounded) is
    skipped with its reason, and the extracting process stays under 400 MB peak RSS."""
    data = nested_doc(200, 4_000_000)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "nest.xhtml.gz").write_bytes(gzip.compress(data))
    (corpus / "ok.xhtml").write_bytes(nested_doc(1, 100))
    out = tmp_path / "pairs.parquet"
    code = textwrap.dedent(f"""
        import json, resource
        from proofmatch.data import extract
        rep = extract.extract_dir({str(corpus)!r}, {str(out)!r})
        print(json.dumps({{"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                          "skipped": rep["files_skipped"], "pairs": rep["pairs"]}}))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["skipped"] == {"output_too_large": 1} and got["pairs"] == 1
    assert got["rss_mb"] < 400, got
