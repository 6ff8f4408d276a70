"""The experiment specification (proofmatch.experiments): the one definition of the wildcard
values and the tables' cells, which the workflow, the table renderer and the CLI all read."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.config import schema, validate_config
from proofmatch.evaluation import intervals as I

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "modules",
    [
        "proofmatch.experiments",
        "proofmatch.evaluation.tables",
        "proofmatch.render",
        "proofmatch.config",
        "proofmatch.evaluation.tables, proofmatch.evaluation.transfer",
        "proofmatch.registry.tables, proofmatch.result_tables",
    ],
)
def test_spec_and_table_renderer_load_no_torch(modules):
    code = f"import sys, {modules}; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "False", f"importing {modules} loads torch"


def test_wildcard_values():
    assert X.MODES == ("local", "hybrid", "zeroshot", "frozen", "triplet")
    assert X.ALL_LEVELS == ("conservation", "partial", "full", "trans", "partial_p", "full_p")
    assert X.FAMILIES == ("mixed", "unmixed") and [X.family(s) for s in X.SPLITS] == [
        "mixed",
        "unmixed",
        "unmixed",
    ]
    assert re.fullmatch(X.pattern(X.METHODS), "tfidf_paper") and not re.fullmatch(
        X.pattern(X.METHODS), "tfidf_"
    )
    for names, values in (
        (X.LEVEL_NAMES, X.ALL_LEVELS),
        (X.ENCODER_NAMES, X.ENCODERS),
        (X.MODE_NAMES, X.MODES),
        (X.VIEW_NAMES, X.VIEWS),
        (X.SPLIT_NAMES, X.SPLITS),
        (X.METHOD_NAMES, X.METHODS),
    ):
        assert tuple(names) == values


def test_schema_choices_are_the_specs_values():
    """The config schema names runs, baselines and splits by the spec's values."""
    transfer = schema()["properties"]["transfer"]["properties"]
    assert transfer["runs"]["items"]["enum"] == [
        f"{e}-{m}" for e in X.ENCODERS for m in X.ENCODER_MODES[e]
    ]
    fusion = schema()["properties"]["fusion"]["properties"]
    assert fusion["runs"]["items"]["enum"] == transfer["runs"]["items"]["enum"]
    assert X.fusion_runs(validate_config({})) == X.FUSION_RUNS
    assert transfer["baselines"]["items"]["enum"] == list(X.METHODS)
    assert transfer["split"]["enum"] == list(X.FAMILIES)


def test_tables_cells():
    tables = RT.tables()
    assert list(tables) == ["table3", "table4", "table5", "table6", "baselines", "table7"]
    shapes = {
        name: (len(t.rows), len(t.groups), len(t.evaluations())) for name, t in tables.items()
    }
    # Table 3: 10 runs (local and hybrid per bilinear encoder, MathBERT's zeroshot and frozen,
    # SPECTER-style triplet from ScratchBERT and from MathBERT's checkpoint) at 4 levels
    assert shapes == {
        "table3": (17, 4, 40),
        "table4": (8, 4, 32),
        "table5": (6, 2, 12),
        "table6": (5, 2, 10),
        "baselines": (12, 4, 24),
        "table7": (1, 0, 1),
    }
    for table in tables.values():
        for row in table.rows:
            assert len(row.cells) == max(len(table.groups), 1)
            assert row.decoding in X.DECODINGS
            for ev in row.cells:  # every cell is a value the workflow's wildcards accept
                assert (
                    ev.split in X.SPLITS
                    and ev.level in X.ALL_LEVELS
                    and ev.test_level in X.ALL_LEVELS
                )
                assert ev.view in X.VIEWS and ev.part in X.PARTS
                learned = X.learned_encoder(ev.model)
                assert (learned is not None and ev.mode in X.ENCODER_MODES[learned]) or (
                    ev.model in X.METHODS
                    and ev.mode == X.BASELINE_MODE
                    and ev.test_level == ev.level
                )
                assert ev.fused == (ev.model not in X.ENCODERS and learned is not None)
    assert tables["table7"].rows[0].cells[0].path() == Path(
        "results/eval/mixed/scratchbert-local/conservation-both/dev-conservation.json"
    )
    assert RT.tables("dev")["table3"].rows[0].cells[0].part == "dev"


def test_model_folders_behind_evaluations():
    """A run's model/ once however many evaluations read it, no folder for a baseline, and the
    tokenizer and ScratchBERT of each family a ScratchBERT/SPECTER run starts from (pr: unmixed)."""
    npt = X.Run("mixed", "npt", "local", "conservation")
    sb = X.Run("pr", "scratchbert", "hybrid", "full_p", "math")
    evals = [
        npt.evaluation("test"),
        npt.evaluation("dev", "full"),
        X.baseline("mixed", "bm25", "full", "test"),
        sb.evaluation("test", "conservation"),
    ]
    assert X.model_folders(evals) == [
        "results/runs/mixed/npt-local/conservation-both/model",
        "results/runs/pr/scratchbert-hybrid/full_p-math/model",
        "results/models/tokenizer/unmixed",
        "results/models/scratchbert/unmixed",
    ]
    assert X.model_folders([], [npt, npt]) == [
        "results/runs/mixed/npt-local/conservation-both/model"
    ]
    # a fusion reads its learned half's model (and its fusion.json, beside it)
    assert X.model_folders(
        [npt.fusion("test"), X.Run("mixed", "npt", "local", "full").fusion("dev")]
    ) == [
        "results/runs/mixed/npt-local/conservation-both/model",
        "results/runs/mixed/npt-local/full-both/model",
    ]
    assert npt.fusion_json() == Path("results/runs/mixed/npt-local/conservation-both/fusion.json")


def test_fusion_names_and_labels():
    """A fusion's model name is distinct from every encoder's and baseline's, so its evaluations
    have their own folder; its row label says it is this project's."""
    assert X.fusion_model("npt") == "npt+bm25" and X.learned_encoder("npt+bm25") == "npt"
    assert X.learned_encoder("bm25") is None and X.learned_encoder("scratchbert") == "scratchbert"
    assert not X.is_fusion("bm25") and not X.is_fusion("npt") and not X.is_fusion("foo+bm25")
    with pytest.raises(ValueError, match="unknown encoder"):
        X.fusion_model("bm25")
    ev = X.Run("mixed", "scratchbert", "local", "full").fusion("test", "conservation")
    assert ev.path() == Path(
        "results/eval/mixed/scratchbert+bm25-local/full-both/test-conservation.json"
    )
    assert (
        ev.run() == X.Run("mixed", "scratchbert", "local", "full")
        and X.baseline("mixed", "bm25", "full", "test").run() is None
    )
    for enc in X.ENCODERS:  # no wildcard value of the model rules matches a fusion's folder name
        assert not re.fullmatch(X.pattern(X.ENCODERS), X.fusion_model(enc))
        assert not re.fullmatch(X.pattern(X.METHODS), X.fusion_model(enc))
    assert (
        X.model_label("npt+bm25", "local", "global")
        == "NPT-Local + BM25-Global (fusion, this project)"
    )
    assert X.fusion_runs({"fusion": {"runs": ["specter-triplet"]}}) == (("specter", "triplet"),)


def test_not_run_follows_the_config():
    demo = validate_config({})
    assert X.not_run(demo) == {"mathbert": X.NOT_RUN_MATHBERT, "mathspecter": X.NOT_RUN_MATHBERT}
    assert X.configured_splits(demo) == X.SPLITS
    cfg = validate_config(
        {"matching": {"mathbert": "tbs17/MathBERT-custom"}, "splits": {"pr_category": None}}
    )
    assert X.not_run(cfg) == {"pr": X.NOT_RUN_PR} and X.configured_splits(cfg) == X.FAMILIES
    assert RT.table6().evaluations(X.not_run(cfg)) == []
    t3 = RT.table3()
    assert len(t3.evaluations(X.not_run(demo))) == 20 and len(t3.evaluations(X.not_run(cfg))) == 40
    assert {X.note("x"), X.note("not run: x")} == {"not run: x"}


def test_a_left_out_run_is_a_row_not_run_and_may_not_be_asked_for_elsewhere():
    """``report.leave_out`` drops one encoder-mode from the tables and findings (its rows say
    so; the encoder's other modes stay), and a run list naming it too is refused by key."""
    from proofmatch.config import ConfigError
    from proofmatch.evaluation.report import finding_inputs

    cfg = validate_config(
        {"matching": {"mathbert": "tbs17/MathBERT"}, "report": {"leave_out": ["mathbert-hybrid"]}}
    )
    skip = X.not_run(cfg)
    assert skip[("mathbert", "hybrid")] == "not run: report.leave_out names mathbert-hybrid"
    t3 = RT.table3()
    reasons = {row.labels[0]: t3.reason(row, skip) for row in t3.rows}
    assert reasons["MathBERT-Global-Global"] == skip[("mathbert", "hybrid")]
    assert reasons["MathBERT-Local-Global"] is None
    planned = t3.evaluations(skip)
    assert {e.mode for e in planned if e.model == "mathbert"} == {"zeroshot", "frozen", "local"}
    assert all((e.model, e.mode) != ("mathbert", "hybrid") for e in finding_inputs(skip))
    with pytest.raises(ConfigError, match=r"config key fusion.runs: mathbert-hybrid .*leave_out"):
        validate_config(
            {"fusion": {"runs": ["mathbert-hybrid"]}, "report": {"leave_out": ["mathbert-hybrid"]}}
        )


WORKFLOW_FILES = sorted((REPO / "workflow/rules").glob("*.smk")) + [REPO / "Snakefile"]
LIBRARY_FILES = [
    REPO / "src/proofmatch" / f
    for f in ("evaluation/tables.py", "evaluation/transfer.py", "render.py", "config.py")
]


@pytest.mark.parametrize(
    "values",
    [
        X.ENCODERS,
        X.MODES,
        X.LEVELS,
        X.ALL_LEVELS,
        X.VIEWS,
        X.SPLITS,
        X.FAMILIES,
        X.METHODS,
        X.PARTS,
        RT.TABLE6_TRAIN,
        RT.TABLE6_TEST,
        RT.TABLE5_LEVELS,
    ],
)
def test_value_lists_are_defined_once(values):
    """No rule file or table module spells a list of wildcard values again, as a constraint
    ("a|b|c"), a tuple or a list, nor joins keys with "__" to parse them back apart."""
    spellings = ["|".join(values), ", ".join(f'"{v}"' for v in values)]
    for path in WORKFLOW_FILES + LIBRARY_FILES:
        text = path.read_text(encoding="utf-8")
        for spelled in spellings:
            assert spelled not in text, f"{path.relative_to(REPO)} repeats {spelled}"
        assert '"__".join' not in text and 'split("__")' not in text, path


def test_workflow_plans_exactly_the_tables_evaluations(tmp_path):
    """The tables' inputs in the workflow are the spec's evaluations (the demo config: MathBERT
    not run), and nothing else is evaluated for them."""
    from test_workflow import copy_workflow

    wd = copy_workflow(tmp_path)
    targets = [f"results/tables/{name}.md" for name in RT.tables()]
    dry = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", *targets],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    outputs = [
        o
        for line in re.findall(r"^    output: (.*)$", dry.stdout, flags=re.M)
        for o in line.split(", ")
    ]
    planned = {o for o in outputs if o.startswith("results/eval/") and not o.endswith(".parquet")}
    not_run = X.not_run(validate_config({}))
    evaluations = I.with_references(  # BM25 on the statements of Unmixed and pr cells too
        ev for t in RT.tables().values() for ev in t.evaluations(not_run)
    )
    # a trained run's evaluations are its folder (one job), a baseline's its JSON (one job each)
    assert planned == set(X.workflow_inputs(evaluations))
    assert sum(o.endswith(".json") for o in planned) == 12 + 7 and len(planned) == 19 + 37 + 8


# A throw-away table, docs/architecture.md's worked example ("Adding a table"), in a module of its
# own that PROOFMATCH_TABLES names.
THROWAWAY = """
from proofmatch import experiments as X
from proofmatch.experiments import Run
from proofmatch.result_tables import Row, Table
from proofmatch.registry.tables import TableSpec


def views(part="test"):
    rows = tuple(
        Row(
            (X.VIEW_NAMES[view],),
            (Run("mixed", "npt", "local", "conservation", view).evaluation(part),),
            "local",
            (("npt", view), "npt"),
        )
        for view in X.VIEWS
    )
    return Table("views", ("Input",), ("Conservation",), rows)


TABLES = (
    TableSpec(
        "views",
        "Views table",
        "Views: MRR and accuracy (%) of NPT-Local-Local by input at Conservation.",
        rows=lambda s: views(s.part),
    ),
)
"""


def test_a_registered_table_is_planned(tmp_path):
    """A table registered in one place is planned by the one `rule table` (its `{table}` wildcard
    takes the registry's names), with the evaluation folders of its cells; unregistered, no rule
    makes it. The registry refuses a second table of one name and a module without TABLES."""
    from test_workflow import copy_workflow

    from proofmatch.registry import tables as S

    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "throwaway_tables.py").write_text(THROWAWAY, encoding="utf-8")
    (tmp_path / "extra" / "empty_tables.py").write_text("", encoding="utf-8")
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    env = {k: v for k, v in os.environ.items() if k != S.EXTRA_ENV}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(tmp_path / "extra"), env.get("PYTHONPATH")])
    )

    def plan(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "results/tables/views.md"],
            cwd=wd,
            env={**env, **dict(zip([S.EXTRA_ENV] * len(extra), extra))},
            capture_output=True,
            text=True,
            timeout=300,
        )

    dry = plan("throwaway_tables")
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    jobs = re.findall(r"^rule (\w+):\n((?:    .*\n)+)", dry.stdout, flags=re.M)
    (table,) = [body for rule, body in jobs if rule == "table"]
    assert "output: results/tables/views.md" in table and "wildcards: table=views" in table
    evaluated = {
        re.search(r"output: (\S+)", body).group(1) for rule, body in jobs if rule == "evaluate_run"
    }
    assert evaluated == {f"results/eval/mixed/npt-local/conservation-{v}" for v in X.VIEWS}
    unregistered = plan()
    assert unregistered.returncode != 0
    assert "MissingRuleException" in unregistered.stdout + unregistered.stderr

    sys.path.insert(0, str(tmp_path / "extra"))
    try:
        (spec,) = S.extra_specs({S.EXTRA_ENV: "throwaway_tables"})
        assert spec.target == "results/tables/views.md"
        assert list(S.registry(RT.BUILTIN, [spec]))[-1] == "views"
        with pytest.raises(ValueError, match="'table3' is registered twice"):
            S.registry(RT.BUILTIN, [RT.TABLES["table3"]])
        with pytest.raises(TypeError, match="no TABLES"):
            S.extra_specs({S.EXTRA_ENV: "empty_tables"})
    finally:
        sys.path.remove(str(tmp_path / "extra"))
    with pytest.raises(ImportError, match="cannot be imported"):
        S.extra_specs({S.EXTRA_ENV: "no_such_tables_module"})
    with pytest.raises(ValueError, match="names the rule that makes it"):
        S.TableSpec("t", "T", "caption")
    with pytest.raises(ValueError, match="not a file stem"):
        S.TableSpec("a/b", "T", "caption", rule="x")


def test_evaluation_plan_holds_every_part_and_level_a_table_reads():
    """Each trained run's (and fusion's) folder holds exactly the (part, test level) pairs the
    tables read from it: one job writes them all."""
    evaluations = [
        ev for t in RT.tables().values() for ev in t.evaluations(X.not_run(validate_config({})))
    ]
    plan = X.evaluation_plan(evaluations)
    for ev in evaluations:
        assert (ev.part, ev.test_level) in plan.get(str(ev.folder()), ()) or ev.run() is None, ev
    assert sum(len(pairs) for pairs in plan.values()) == sum(
        ev.run() is not None for ev in set(evaluations)
    )
    # Table 7's run: its dev part (hubness), Table 3's and 5's test at its level, Table 4's at every level
    t7 = RT.TABLE7_RUN
    assert plan[str(t7.evaluation("dev").folder())] == (("dev", "conservation"),) + tuple(
        ("test", lv) for lv in sorted(X.LEVELS)
    )
    assert plan[str(X.Run("pr", "scratchbert", "local", "full_p").evaluation("test").folder())] == (
        ("test", "conservation"),
        ("test", "partial_p"),
    )
    assert plan["results/eval/mixed/npt+bm25-local/trans-both"] == (("test", "trans"),)
    assert not any("-none/" in folder for folder in plan)  # baselines: one file a job
    # a folder that no table reads (asked for by hand): the test part at the run's level
    assert X.folder_plan(plan, "results/eval/mixed/specter-triplet/full-text", "full") == (
        ("test", "full"),
    )
    assert X.folder_plan(plan, Path("results/eval/mixed/npt+bm25-local/trans-both"), "trans") == (
        ("test", "trans"),
    )
    assert (
        X.workflow_input(X.baseline("mixed", "bm25", "full", "test"))
        == "results/eval/mixed/bm25-none/full-both/test-full.json"
    )
    assert (
        X.workflow_input(t7.fusion("test"), "r")
        == "r/mixed/scratchbert+bm25-local/conservation-both"
    )


def test_rules_take_run_paths_from_run_path():
    """One spelling of the run layout (:func:`X.run_path`): :class:`X.Run` and
    :class:`X.Evaluation` build their folders with it, and the rules declare its wildcard pattern
    (common.smk's ``run_pattern``) instead of spelling ``{encoder}-{mode}/{level}-{view}`` again."""
    run = X.Run("pr", "npt", "hybrid", "full_p", "math", "seed14")
    assert run.dir() == Path("results/runs/pr/npt-hybrid/full_p-math-seed14")
    assert run.fusion("dev").folder() == Path("results/eval/pr/npt+bm25-hybrid/full_p-math-seed14")
    wild = ("{split}", "{encoder}", "{mode}", "{level}", "{view}")
    assert X.run_path(*wild, root="r") == "r/{split}/{encoder}-{mode}/{level}-{view}"
    spelled = {
        path.name: text.count("{encoder}-{mode}") + text.count("{method}-none")
        for path in sorted((REPO / "workflow" / "rules").glob("*.smk"))
        for text in [path.read_text(encoding="utf-8")]
    }
    assert sum(spelled.values()) <= 1, spelled


def test_the_table_example_is_one_file_and_a_dry_run_plans_it(tmp_path):
    """docs/architecture.md's worked example of a table ("Adding a table"), applied to a copy of
    the project: one file; `rule table` then plans it with its cells' evaluations, and `rule all`
    asks for it."""
    from test_registry import apply_edit, section_edits
    from test_workflow import copy_workflow

    edits = section_edits("Adding a table")
    assert len(edits) == 2 and {e["path"] for e in edits} == {"src/proofmatch/result_tables.py"}
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    for edit in edits:
        apply_edit(wd, edit)
    env = {**os.environ, "PYTHONPATH": str(wd / "src")}
    dry = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "all"],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-3000:]
    jobs = re.findall(r"^rule (\w+):\n((?:    .*\n)+)", dry.stdout, flags=re.M)
    (table,) = [b for rule, b in jobs if rule == "table" and "wildcards: table=views" in b]
    assert "output: results/tables/views.md" in table
    for view in X.VIEWS:
        assert f"results/eval/mixed/npt-local/conservation-{view}" in table
