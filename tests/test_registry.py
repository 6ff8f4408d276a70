"""The encoder registry (:mod:`proofmatch.registry.encoders`) and the schema agree, and an encoder is
added by three edits: docs/architecture.md's worked example ("Adding an encoder"), applied here
to a copy of the project, validates, builds, saves and loads, and a dry run plans its runs."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_workflow import SNAKEMAKE, copy_workflow, planned_wildcards

from proofmatch import config as C
from proofmatch import experiments as X
from proofmatch.config import ConfigError, run_matching, validate_config
from proofmatch.models.params import TrainParams, run_params
from proofmatch.registry import encoders as E
from proofmatch.registry.checks import one_of, unknown

REPO = Path(__file__).resolve().parents[1]
RUN_LISTS = ("fusion.runs", "report.seed_runs", "report.scaling_runs", "transfer.runs")


def registry_mismatches(schema: dict[str, Any]) -> list[str]:
    """What the schema lacks of the registry: each spec's ``block`` and ``settings`` as objects
    under ``matching``, its ``checkpoint`` key as a string or null; and the lists of runs that do
    not take exactly the registry's ``encoder-mode`` names. The one place they are compared."""
    matching = schema["properties"]["matching"]["properties"]
    bad = []
    for spec in E.ENCODERS.values():
        for block in (spec.block, *spec.settings):
            if matching.get(block, {}).get("type") != "object":
                bad.append(f"{spec.name}: no block matching.{block}")
        if spec.checkpoint and matching.get(spec.checkpoint, {}).get("type") != ["string", "null"]:
            bad.append(f"{spec.name}: no checkpoint key matching.{spec.checkpoint}")
    for key in RUN_LISTS:
        section, name = key.split(".")
        items = schema["properties"][section]["properties"][name]["items"]
        if items.get("enum") != E.run_names():
            bad.append(f"{key}: runs {items.get('enum')}, not the registry's")
    return bad


def test_the_schema_has_every_encoders_blocks_and_runs():
    assert registry_mismatches(C.schema()) == []


def test_each_encoders_settings_class_holds_its_blocks_keys():
    """A run of each encoder under the schema's defaults holds every key of its blocks, the
    common ones in TrainParams and the rest in its spec's settings class, and nothing else."""
    matching = validate_config({})["matching"]
    for spec in E.ENCODERS.values():
        p = TrainParams.from_config(matching, spec.name)
        assert type(p.encoder) is spec.settings_class
        assert p.flat() == run_params(matching, spec.name), spec.name


def test_the_registrys_order():
    assert E.run_names()[:2] == ["npt-local", "npt-hybrid"] and "specter-triplet" in E.run_names()
    assert X.ENCODERS == tuple(E.ENCODERS) and X.PRETRAINED_ENCODERS == ("scratchbert", "specter")
    pairs = [E.split_run_name(name) for name in E.run_names()]
    assert pairs == [(s.name, mode) for s in E.ENCODERS.values() for mode in s.modes]


def test_the_one_unknown_name_error():
    err = unknown("encoder", "bm25", ("npt", "specter"), "a registered encoder")
    assert (
        str(err)
        == "unknown encoder 'bm25'; expected one of npt, specter; fix: a registered encoder"
    )
    assert one_of("view", "math", ("text", "math")) == "math"
    with pytest.raises(ValueError, match="unknown encoder 'bm25'; expected one of npt, scratch"):
        E.encoder_spec("bm25")


TOY = E.EncoderSpec(
    "toy", "Toy", ("local",), "toy", "proofmatch.models.matcher:NPT_BUILDER", E.NPTSettings
)


def test_a_registered_encoder_is_validated_and_read(monkeypatch):
    """A throw-away spec registered at test time, with a block given here: the schema's lists of
    runs take its runs, and a run reads its block (nothing else names it)."""
    real = C.schema

    def with_block() -> dict[str, Any]:
        s = real()
        matching = s["properties"]["matching"]["properties"]
        matching["toy"] = {**copy.deepcopy(matching["npt"]), "description": "the toy encoder"}
        return s

    monkeypatch.setattr(C, "schema", with_block)
    given = {"matching": {"toy": {"epochs": 1}}, "fusion": {"runs": ["toy-local"]}}
    with pytest.raises(ConfigError, match=r"config key fusion\.runs\.0: 'toy-local' is not one"):
        validate_config(copy.deepcopy(given))  # not registered yet
    monkeypatch.setitem(E.ENCODERS, "toy", TOY)
    assert registry_mismatches(real()) == ["toy: no block matching.toy"]  # its runs: filled in
    assert "toy-local" in real()["properties"]["transfer"]["properties"]["runs"]["items"]["enum"]
    assert registry_mismatches(with_block()) == []
    cfg = validate_config(copy.deepcopy(given))
    part = run_matching(cfg["matching"], "toy", cfg["decode"])
    assert part == {"max_length": cfg["matching"]["max_length"], "toy": cfg["matching"]["toy"]}
    p = TrainParams.from_config(cfg["matching"], "toy")
    assert p.epochs == 1 and p.encoder.d_model == cfg["matching"]["npt"]["d_model"]
    with pytest.raises(ConfigError, match=r"matching\.toy\.optimizer"):
        validate_config({"matching": {"toy": {"optimizer": "sgd"}}})


# ----------------------------------------------------------------------------- the worked example

EDIT = re.compile(
    r"^\*\*\d\.[^*]*\*\* — `(?P<path>[^`]+)`, "
    r"(?:(?P<new>new file)|(?P<where>after|before|in place of) the line `(?P<anchor>[^`]+)`):\n\n"
    r"```\w+\n(?P<text>.*?)```",
    flags=re.M | re.S,
)


def section_edits(heading: str) -> list[re.Match]:
    """The file edits of docs/architecture.md's section ``heading`` (a worked example)."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return list(EDIT.finditer(section))


def worked_example() -> list[re.Match]:
    return section_edits("Adding an encoder")


def apply_edit(root: Path, edit: re.Match) -> None:
    """One edit of a worked example applied to the copy ``root``: a new file, or its text
    inserted after or before, or put in place of, the one line equal to its anchor."""
    path = root / edit["path"]
    if edit["new"]:
        assert not path.exists(), path
        path.write_text(edit["text"], encoding="utf-8")
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.strip() == edit["anchor"]]
    assert len(at) == 1, (edit["path"], edit["anchor"], at)
    i = at[0]
    if edit["where"] == "in place of":
        lines[i] = edit["text"]
    else:
        lines.insert(i + (edit["where"] == "after"), edit["text"])
    path.write_text("".join(lines), encoding="utf-8")


BUILD_AND_LOAD = """
import sys, torch
sys.path.insert(0, sys.argv[2])
from toydata import toy_pairs, train_params
from proofmatch.config import load_config
from proofmatch.models.matcher import build_matcher, load_matcher
from proofmatch.models.params import TrainParams, run_params
from proofmatch.registry.settings import NPTSettings
cfg = load_config("config/config.yaml", "bow.yaml")  # the demo config and the new block validate
p = TrainParams.from_config(cfg["matching"], "bow")
assert type(p.encoder) is NPTSettings and p.encoder.d_model == cfg["matching"]["bow"]["d_model"]
assert p.epochs == 2
train = toy_pairs(n_articles=4, pairs_per_article=3, seed=0)
m = build_matcher("bow", "local", "both", train_params("bow", d_model=8), train)
texts = list(train["statement_tokens"][:3])
m.save_pretrained(sys.argv[1])
back = load_matcher(sys.argv[1], "cpu")
assert type(back.encoder).__name__ == "BowEncoder" and back.encoder.dim == 8
assert torch.equal(m.embed(texts), back.embed(texts)), "the saved model scores differently"
print("built, saved and loaded")
"""

# The config guard tests, run in the copy with the new encoder: the schema's blocks and run lists
# agree with the registry, its enums with the Literal types, and the library defaults with the
# schema's, with no entry added for the new encoder.
GUARDS = [
    "tests/test_registry.py::test_the_schema_has_every_encoders_blocks_and_runs",
    "tests/test_registry.py::test_each_encoders_settings_class_holds_its_blocks_keys",
    "tests/test_registry.py::test_typed_values_are_the_schemas",
    "tests/test_defaults.py",
]


def digests(root: Path) -> dict[str, int]:
    """Every file under ``root`` (caches aside) and a hash of its bytes."""
    return {
        str(f.relative_to(root)): hash(f.read_bytes())
        for f in root.rglob("*")
        if f.is_file() and "__pycache__" not in f.parts
    }


def test_the_worked_example_is_three_edits_and_a_dry_run_plans_it(tmp_path):
    edits = worked_example()
    assert [e["path"] for e in edits] == [
        "src/proofmatch/models/bow.py",
        "src/proofmatch/registry/encoders.py",
        "src/proofmatch/schemas/config.schema.yaml",
    ]
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    before = digests(wd)
    for edit in edits:
        apply_edit(wd, edit)
    after = digests(wd)
    edited = sorted(f for f in after.keys() | before.keys() if after.get(f) != before.get(f))
    assert len(edited) == 3 and edited == sorted(e["path"] for e in edits)
    env = {**os.environ, "PYTHONPATH": str(wd / "src")}
    (wd / "bow.yaml").write_text(
        "matching:\n  bow:\n    epochs: 2\nfusion:\n  runs: [npt-local, bow-local]\n"
    )
    made = subprocess.run(
        [sys.executable, "-c", BUILD_AND_LOAD, str(tmp_path / "model"), str(REPO / "tests")],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    guards = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
        + [str(REPO / g) for g in GUARDS],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert guards.returncode == 0, (guards.stdout + guards.stderr)[-3000:]
    assert "bow" in (wd / "src/proofmatch/registry/encoders.py").read_text()  # the copy's ran
    dry = subprocess.run(
        SNAKEMAKE + ["-n", "all", "--configfile", "config/config.yaml", "bow.yaml"],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    trained = [w for w in planned_wildcards(dry.stdout, "train_matcher") if w["encoder"] == "bow"]
    assert sorted(w["level"] for w in trained) == sorted(X.LEVELS)  # Table 3's row
    assert {(w["split"], w["mode"], w["view"]) for w in trained} == {("mixed", "local", "both")}
    fused = [w for w in planned_wildcards(dry.stdout, "fuse_run") if w["encoder"] == "bow"]
    assert sorted(w["level"] for w in fused) == sorted(X.LEVELS)  # fusion.runs names it


def test_typed_values_are_the_schemas():
    """The ``Literal`` types that code below the config trusts hold the schema's enum values:
    each typed field of TrainParams and of the encoders' settings classes as every ``matching``
    block that has the key, and the partial levels' rounding as ``replace.partial_rounding``."""
    from proofmatch.data.symbols import ROUNDINGS
    from proofmatch.models.params import _literals

    props = C.schema()["properties"]
    blocks = [b for b in props["matching"]["properties"].values() if b.get("type") == "object"]
    typed = (TrainParams, *{s.settings_class for s in E.ENCODERS.values()})
    literals = {n: v for cls in typed for n, v in _literals(cls).items()}
    assert {"optimizer", "pooling"} <= set(literals)  # the encoders' own too
    for name, values in literals.items():
        enums = [b["properties"][name]["enum"] for b in blocks if name in b["properties"]]
        assert enums and all(tuple(e) == values for e in enums), (name, values, enums)
    assert tuple(props["replace"]["properties"]["partial_rounding"]["enum"]) == ROUNDINGS


# The source example ("Adding a corpus source"): its edits may also replace a line.
def test_the_source_example_is_three_files_and_a_dry_run_plans_it(tmp_path):
    """docs/architecture.md's worked example of a corpus source, applied to a copy of the
    project: three files; the kind validates and a dry run plans its rule, then the manifest,
    extraction and the rest of the corpus stages from what it writes."""
    edits = section_edits("Adding a corpus source")
    assert sorted({e["path"] for e in edits}) == [
        "src/proofmatch/registry/sources.py",
        "src/proofmatch/schemas/config.schema.yaml",
        "workflow/rules/corpus.smk",
    ]
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    for edit in edits:
        apply_edit(wd, edit)
    (wd / "checkout").mkdir()
    (wd / "stacks.yaml").write_text("corpus:\n  source: stacks\n  dir: checkout\n  n_shards: 2\n")
    env = {**os.environ, "PYTHONPATH": str(wd / "src")}
    dry = subprocess.run(
        SNAKEMAKE
        + [
            "-np",
            "results/data/pairs.parquet",
            "--configfile",
            "config/config.yaml",
            "stacks.yaml",
        ],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    assert "proofmatch stacks --source checkout --out results/stacks/main" in out
    for rule, n in (("stacks_corpus", 1), ("manifest", 1), ("extract", 2), ("filter_pairs", 1)):
        assert len(re.findall(rf"^rule {rule}:", out, re.M)) == n, (rule, out[-3000:])
