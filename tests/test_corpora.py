"""The corpus spec (proofmatch.corpora): which corpus feeds what, read by the rules, the transfer
table and the LaTeX stage. The rules that ask it are planned by the dry-run tests of
test_workflow.py; these pin its answers per source form and role, that no rule file spells a path
it computes, and that it stays importable before any job (no pandas)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from proofmatch import corpora as C

REPO = Path(__file__).resolve().parents[1]


def config(corpus: dict, transfer: list[dict] | None = None) -> dict:
    """The parts of a validated config the spec reads."""
    return {
        "corpus": {"metadata": None, "n_shards": 3, **corpus},
        "transfer": {"corpora": transfer or []},
    }


def test_training_corpus_inputs_by_source():
    demo = C.main_corpus(config({"source": "demo", "dir": None}))
    assert demo.inputs() == {
        "corpus": "results/demo_corpus/xhtml",
        "metadata": "results/demo_corpus/metadata.csv",
    }
    assert demo.tables() is None and demo.root == "results"
    assert demo.shard_files("extract", ".report.json") == [
        "results/extract/shard-000.report.json",
        "results/extract/shard-001.report.json",
        "results/extract/shard-002.report.json",
    ]
    latex = C.main_corpus(config({"source": "latex", "dir": "src"}))
    assert latex.inputs() == {
        "corpus": "results/latex/main/xhtml",
        "metadata": "results/latex/main/metadata.csv",
    }
    # several folders: the tables that exist are inputs, which folder each belongs to is the parameter
    two = C.main_corpus(config({"source": "dir", "dir": ["a", "b"], "metadata": [None, "b.csv"]}))
    assert two.inputs() == {"corpus": ["a", "b"], "metadata": ["b.csv"]}
    assert two.tables() == [None, "b.csv"]
    with pytest.raises(C.CorpusError, match=r"corpus\.metadata: one table for 2 folders"):
        C.main_corpus(config({"source": "dir", "dir": ["a", "b"], "metadata": "m.csv"})).inputs()


def test_transfer_corpora_roots_shards_and_errors():
    cfg = config(
        {"source": "demo"},
        [
            {"name": "d", "source": "demo"},
            {"name": "x", "source": "dir", "dir": "x", "metadata": "x.csv", "n_shards": 2},
            {"name": "l", "source": "latex", "dir": "ls", "n_shards": None},
        ],
    )
    found = C.transfer_corpora(cfg)
    assert list(found) == ["d", "x", "l"]
    assert [c.n_shards for c in found.values()] == [
        3,
        2,
        3,
    ]  # corpus.n_shards unless the entry sets its own
    assert found["d"].inputs() == C.main_corpus(cfg).inputs()  # the demo corpus, generated once
    assert found["x"].inputs() == {"corpus": ["x"], "metadata": ["x.csv"]} and found[
        "x"
    ].tables() == ["x.csv"]
    assert found["l"].inputs() == {
        "corpus": "results/latex/l/xhtml",
        "metadata": "results/latex/l/metadata.csv",
    }
    assert found["x"].shard_files("linearize", ".parquet") == [
        "results/transfer/x/linearize/shard-000.parquet",
        "results/transfer/x/linearize/shard-001.parquet",
    ]
    assert C.transfer_root("x") == found["x"].root
    with pytest.raises(ValueError, match="no transfer corpus named 'y'"):
        C.transfer_corpus(cfg, "y")
    with pytest.raises(ValueError, match="'d' is used twice"):
        C.transfer_corpora(config({"source": "demo"}, [{"name": "d", "source": "demo"}] * 2))


def test_latex_corpora_of_both_roles():
    cfg = config(
        {"source": "latex", "dir": "src"},
        [
            {
                "name": "other",
                "source": "latex",
                "dir": "o",
                "metadata": "o.csv",
                "latex": {"n_shards": 2},
            },
            {"name": "d", "source": "demo"},
        ],
    )
    assert list(C.latex_corpora(cfg)) == ["main", "other"]
    assert (
        C.latex_corpus(cfg, "main").latex_shards == 3
        and C.latex_corpus(cfg, "other").latex_shards == 2
    )
    assert C.latex_corpus(cfg, "main").latex_inputs("inventory") == {"sources": "src"}
    assert C.latex_corpus(cfg, "other").latex_inputs("corpus") == {
        "inventory": "results/latex/other/inventory.parquet",
        "metadata": "o.csv",
        "shards": [
            "results/latex/other/shards/shard-000.json",
            "results/latex/other/shards/shard-001.json",
        ],
    }
    assert C.conversion_reports(cfg) == {
        "main": "results/latex/main/report.json",
        "other": "results/latex/other/report.json",
    }
    with pytest.raises(ValueError, match="no LaTeX corpus named 'd'"):
        C.latex_corpus(cfg, "d")
    with pytest.raises(ValueError, match="needs a LaTeX corpus"):
        C.conversion_reports(config({"source": "demo"}))


def test_search_index_is_the_one_the_readme_serves():
    assert C.SEARCH_INDEX == "results/index/mixed/npt-local/conservation-both"
    assert f"proofmatch serve {C.SEARCH_INDEX}" in (REPO / "README.md").read_text()


def test_workflow_spells_no_corpus_path_the_spec_owns():
    """The rules ask the spec; none spells a path it computes (a second home would drift)."""
    owned = [C.SEARCH_INDEX, f"{C.LATEX_ROOT}/{C.MAIN}", "{i:03d}"]
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        text = path.read_text()
        for spelled in owned:
            assert spelled not in text, f"{path.relative_to(REPO)} spells {spelled!r}"


def test_the_spec_imports_no_pandas():
    """The Snakefile imports it while it parses; proofmatch.config checks corpus folders with it."""
    code = (
        "import json, sys; import proofmatch.corpora, proofmatch.config; "
        "print(json.dumps([m for m in ('pandas', 'numpy', 'pyarrow', 'torch') if m in sys.modules]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
