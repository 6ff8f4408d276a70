"""No stale artifact: every setting a job reads reaches Snakemake as a param of its rule (or comes
in through an input file), so changing it reruns that job.

Structural, over every rule the workflow defines (read from Snakemake's own parse of the
Snakefile, not from a list kept here): each rule runs a script of ``workflow/scripts/`` (no
``shell:`` or ``run:`` block, which could read ``config`` unseen); the script touches the
``snakemake`` object only through its job's declared parts (input, output, params, log, wildcards,
threads, resources, rule), never ``snakemake.config`` and never the whole object handed on; every
``snakemake.params.X`` it reads is a param the rule declares; and it loads no config file. A job
thus runs on exactly the declared keys: a rule that needs a block of the config beyond single values
passes :func:`proofmatch.config.settings` of the keys it reads (``params.settings``), which holds
nothing else, so reading an undeclared key fails instead of passing unseen.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from proofmatch.config import load_config, settings
from proofmatch.evaluation import captions as CAP
from proofmatch.evaluation import report as R
from proofmatch.evaluation import scaling as S

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow/scripts"
# What a job script may read of the ``snakemake`` object Snakemake gives it.
JOB_PARTS = {"input", "output", "params", "log", "wildcards", "threads", "resources", "rule"}
# The rules that run no job of their own: targets only.
TARGETS = {"all", "search_demo"}

# Snakemake's parse of the workflow: each rule's script, params (names; values where they do not
# depend on wildcards), shell command and run block.
DUMP = r"""
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

with SnakemakeApi(OutputSettings()) as api:
    wf = api.workflow(
        resource_settings=ResourceSettings(),
        config_settings=ConfigSettings(configfiles=[Path(p).resolve() for p in sys.argv[1:]]),
        snakefile=Path("Snakefile"),
    )
    rules = {}
    for rule in wf._workflow.rules:
        params = dict(zip(rule.params._names, rule.params))
        rules[rule.name] = {
            "script": rule.script,
            "params": {k: None if callable(v) else v for k, v in params.items()},
            "shell": rule.shellcmd,
            "run": rule.run_func is not None,
        }
print("RULES=" + json.dumps(rules, default=repr))
"""


def parsed_rules(*configs: str, cwd: Path = REPO) -> dict[str, dict]:
    done = subprocess.run(
        [sys.executable, "-c", DUMP, "config/config.yaml", *configs],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RULES=")]
    return json.loads(line.removeprefix("RULES="))


@pytest.fixture(scope="module")
def rules() -> dict[str, dict]:
    return parsed_rules()


def branch_rules(tree: ast.AST) -> dict[ast.AST, str]:
    """Nodes inside an ``if rule == "name":`` branch of a script that several rules share
    (``convert_latex.py``), with the rule that branch serves."""
    owner = {}
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if (
            isinstance(node, ast.If)
            and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name)
            and test.left.id == "rule"
            and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant)
        ):
            for stmt in node.body:
                for inner in ast.walk(stmt):
                    owner[inner] = test.comparators[0].value
    return owner


def script_reads(path: Path, rule: str | None = None) -> tuple[set[str], list[str]]:
    """The params a job script reads (``snakemake.params.X``) when it runs for ``rule`` (a branch
    ``if rule == "other":`` is not), and what it does that a job must not (reads
    ``snakemake.config`` or any part beyond :data:`JOB_PARTS`, hands the whole object on, reads the
    params as a whole, loads a config file)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    owner = branch_rules(tree)
    params, bad = set(), []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Name) and node.id == "snakemake":
            up = parent.get(node)
            if not (isinstance(up, ast.Attribute) and up.attr in JOB_PARTS):
                bad.append(f"{where}: snakemake.{getattr(up, 'attr', '')} (not a declared part)")
            elif up.attr == "params":
                attr = parent.get(up)
                if not isinstance(attr, ast.Attribute):
                    bad.append(f"{where}: snakemake.params read as a whole")
                elif owner.get(node, rule) == rule:
                    params.add(attr.attr)
        if isinstance(node, ast.Name) and node.id in {"load_config", "load_yaml", "config"}:
            bad.append(f"{where}: {node.id}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "config/" in node.value or node.value.endswith((".yaml", ".yml")):
                bad.append(f"{where}: reads {node.value!r}")
    return params, bad


def test_every_job_reads_settings_only_through_its_declared_params(rules):
    assert len(rules) > 30 and {"findings", "seeds_table", "train_matcher"} <= set(rules)
    problems = []
    for name, rule in sorted(rules.items()):
        if rule["shell"]:
            problems.append(f"{name}: shell command (a script reads only declared params)")
        if not rule["script"]:
            if name not in TARGETS:  # a run: block could read the config unseen
                problems.append(f"{name}: no script")
            continue
        script = (REPO / "workflow/rules" / rule["script"]).resolve()
        assert script.parent == SCRIPTS, (name, script)
        used, bad = script_reads(script, name)
        problems += [f"{name}: {b}" for b in bad]
        undeclared = used - set(rule["params"])
        if undeclared:
            problems.append(f"{name}: {script.name} reads undeclared params {sorted(undeclared)}")
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_script_that_reads_the_config(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(
        "x = snakemake.config['report']['resamples']\n"
        "f(snakemake)\n"
        "y = snakemake.params.n + len(snakemake.params)\n"
        "if rule == 'other':\n    w = snakemake.params.m\n"
        "z = load_config('config/config.yaml')\n"
    )
    used, bad = script_reads(script)
    assert used == {"n"} and script_reads(script, "other")[0] == {"n", "m"}
    assert sorted(bad) == [
        "job.py:1: snakemake.config (not a declared part)",
        "job.py:2: snakemake. (not a declared part)",
        "job.py:3: snakemake.params read as a whole",
        "job.py:6: load_config",
        "job.py:6: reads 'config/config.yaml'",
    ]


def test_settings_hold_only_the_declared_keys():
    config = load_config(REPO / "config/config.yaml")
    part = settings(config, ["seed", "splits.pr_category", "report"])
    assert part == {
        "seed": config["seed"],
        "splits": {"pr_category": config["splits"]["pr_category"]},
        "report": config["report"],
    }
    part["report"]["resamples"] = -1  # a copy: the job cannot change the config
    assert config["report"]["resamples"] != -1
    with pytest.raises(KeyError):
        settings(config, ["report.nosuch"])


def test_the_table_jobs_read_the_same_from_their_settings_as_from_the_config():
    """The tables, findings, seeds and scaling jobs run on :func:`tables.job_settings` alone: what
    they plan and caption from it equals what the whole config gives (an undeclared key would fail
    with KeyError here)."""
    for extra in ((), ("config/smoke.yaml",), ("config/stacks.yaml",)):
        config = load_config(REPO / "config/config.yaml", *(REPO / e for e in extra))
        part = CAP.job_settings(config)
        for inputs in (R.findings_inputs, R.seeds_inputs, S.scaling_inputs):
            assert inputs(part) == inputs(config), (extra, inputs)
        for name in ("table3", "table4", "table5", "table6", "table7", "baselines", "findings"):
            assert CAP.table_caption(name, part) == CAP.table_caption(name, config), (extra, name)


def test_a_changed_resamples_reaches_the_findings_and_seeds_jobs(tmp_path):
    """``report.resamples`` 1000 -> 2000 changes the params of findings, seeds and scaling (so
    Snakemake reruns them; on a finished run, tests/test_workflow.py plans them)."""
    (tmp_path / "r.yaml").write_text("report:\n  resamples: 2000\n")
    before = parsed_rules()
    after = parsed_rules(str(tmp_path / "r.yaml"))
    for name in ("findings", "seeds_table", "scaling_table", "table", "paper_comparison"):
        assert before[name]["params"] != after[name]["params"], name
    assert before["train_matcher"]["params"] == after["train_matcher"]["params"]
