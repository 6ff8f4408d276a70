"""The corpus spec (proofmatch.corpora) and the source registry (proofmatch.registry.sources): which
corpus feeds what, read by the rules, the transfer table and the LaTeX stage. These pin its
answers per source form and role, that the schema's source enums are the registry's, that one set
of corpus rules plans every corpus (and each source's own rule), that no rule file spells a path
it computes, and that it stays importable before any job (no pandas)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_workflow import copy_workflow, planned_io

from proofmatch import config as CONFIG
from proofmatch import corpora as C
from proofmatch.registry.sources import SOURCES, SourceSpec

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
    assert list(C.source_corpora(cfg, "demo")) == ["main", "d"]  # both read the one demo corpus
    with pytest.raises(ValueError, match="no dir corpus named 'y'"):
        C.source_corpus(cfg, "dir", "y")
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
    assert list(C.source_corpora(cfg, "latex")) == ["main", "other"]
    assert (
        C.source_corpus(cfg, "latex", "main").latex_shards == 3
        and C.source_corpus(cfg, "latex", "other").latex_shards == 2
    )
    assert C.source_corpus(cfg, "latex", "main").latex_inputs("inventory") == {"sources": "src"}
    assert C.source_corpus(cfg, "latex", "other").latex_inputs("corpus") == {
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
    with pytest.raises(ValueError, match="no latex corpus named 'd'.*source: latex"):
        C.source_corpus(cfg, "latex", "d")
    with pytest.raises(ValueError, match="needs a LaTeX corpus"):
        C.conversion_reports(config({"source": "demo"}))


def test_search_index_is_the_one_the_readme_serves():
    demo = CONFIG.load_config(REPO / "config/config.yaml")
    assert C.search_indexes(demo) == ["results/index/mixed/npt-local/conservation-both"]
    assert f"proofmatch serve {C.search_indexes(demo)[0]}" in (REPO / "README.md").read_text()
    served = CONFIG.load_config(
        *(REPO / "config" / f for f in ("config.yaml", "stacks.yaml", "stacks-pretrained.yaml"))
    )
    assert C.search_indexes(served) == ["results/index/mixed/mathbert-local/conservation-both"]


def test_search_demo_plans_an_index_for_each_search_run(tmp_path):
    wd = copy_workflow(tmp_path)
    (wd / "serve.yaml").write_text(
        json.dumps({"fusion": {"search_runs": ["scratchbert-local", "npt-local"]}}), "utf-8"
    )
    dry = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "search_demo"]
        + ["--configfile", "config/config.yaml", "config/smoke.yaml", "serve.yaml"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    built = sorted(
        o for rule, _, out in planned_io(dry.stdout) for o in out if rule == "search_index"
    )
    assert built == [
        "results/index/mixed/npt-local/conservation-both",
        "results/index/mixed/scratchbert-local/conservation-both",
    ]


def test_workflow_spells_no_corpus_path_the_spec_owns():
    """The rules ask the spec; none spells a path it computes (a second home would drift)."""
    generated = [s.root(C.MAIN) for s in SOURCES.values() if s.folder is not None]
    owned = [
        *C.search_indexes(CONFIG.load_config(REPO / "config/config.yaml")),
        *generated,
        "{i:03d}",
    ]
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


def test_corpus_wildcard_values_keep_the_training_corpus_in_results():
    """The {corpus} wildcard: "" for the training corpus (its paths as they always were),
    transfer/NAME/ for a transfer corpus; a baseline reads the replaced split or the pool."""
    cfg = config({"source": "demo"}, [{"name": "x", "source": "demo"}])
    corpora = C.all_corpora(cfg)
    assert list(corpora) == ["", "transfer/x/"]
    assert [c.name for c in corpora.values()] == [C.MAIN, "x"]
    for key, corpus in corpora.items():
        assert (
            f"results/{key}extract/shard-000.parquet"
            == corpus.shard_files("extract", ".parquet")[0]
        )
    assert (
        corpora[""].test_data("mixed", "conservation")
        == "results/replaced/mixed/conservation.parquet"
    )
    assert (
        corpora["transfer/x/"].test_data("mixed", "conservation")
        == "results/transfer/x/pool/mixed/conservation.parquet"
    )


def test_schema_source_enums_are_the_registry():
    """The one place the schema and :data:`SOURCES` are held together: both roles' ``source``
    refer to one enum, which names every registered kind, in order; the sources that need
    ``dir`` are those that read a folder; each kind's settings block exists in the schema."""
    schema = CONFIG.schema()
    defs = schema["definitions"]
    assert defs["source"]["enum"] == list(SOURCES)
    assert defs["source_with_dir"]["enum"] == [n for n, s in SOURCES.items() if s.reads]
    roles = [
        schema["properties"]["corpus"]["properties"]["source"],
        schema["properties"]["transfer"]["properties"]["corpora"]["items"]["properties"]["source"],
    ]
    assert [role["$ref"] for role in roles] == ["#/definitions/source"] * 2
    for spec in SOURCES.values():
        if spec.block is not None:
            node = schema
            for key in spec.block.removeprefix("#/").split("/"):
                node = node[key]
            assert node["type"] == "object" or "$ref" in node, spec.block
    with pytest.raises(ValueError, match="a rule needs its folder"):
        SourceSpec("half", label="x", rule="half_corpus")


def test_one_set_of_corpus_rules_plans_every_corpus(tmp_path):
    """A dry run with a LaTeX training corpus and a demo transfer corpus: the same manifest,
    extract, linearize, filter_pairs and baseline rules plan both (no per-role copies), each
    manifest reads what its source's rule (:attr:`SourceSpec.rule`) writes into its folder."""
    wd = copy_workflow(tmp_path)
    sources = REPO / "tests" / "data" / "latex" / "sources"
    (wd / "two.yaml").write_text(
        json.dumps(
            {
                "corpus": {"source": "latex", "dir": str(sources), "n_shards": 2},
                "transfer": {"corpora": [{"name": "d", "source": "demo", "n_shards": 1}]},
            }
        ),
        encoding="utf-8",
    )
    targets = [
        "results/data/pairs.parquet",
        "results/transfer/d/eval/mixed/bm25-none/conservation-both/test-conservation.json",
    ]
    dry = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", *targets]
        + ["--configfile", "config/config.yaml", "two.yaml"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    jobs = planned_io(dry.stdout)
    rules = [rule for rule, _, _ in jobs]
    assert not [r for r in rules if r.startswith("transfer_") and r != "transfer_pool"]
    assert [rules.count(r) for r in ("manifest", "extract", "linearize", "filter_pairs")] == [
        2,
        3,
        3,
        2,
    ]
    assert rules.count("baseline") == 1
    manifests = sorted((o, i) for rule, i, o in jobs if rule == "manifest")
    made = {rule: o for rule, _, o in jobs}
    for (outputs, inputs), (name, source) in zip(manifests, [("main", "latex"), ("d", "demo")]):
        spec = SOURCES[source]
        root = spec.root(name)
        assert outputs[0].startswith("results/corpus/" if name == "main" else "results/transfer/d/")
        assert inputs == [f"{root}/xhtml", f"{root}/metadata.csv"]
        assert f"{root}/metadata.csv" in made[spec.rule]
