"""``proofmatch results stamp|adopt`` (proofmatch.results_tree): what adopt refuses, before it
runs Snakemake. The move itself (a smoke run's results copied into a fresh checkout, made current
by ``snakemake --touch``, its records carried along) is tested on the smoke run in
tests/test_workflow.py."""

from __future__ import annotations

import pytest
from test_workflow import copy_workflow

from proofmatch import results_tree as RT
from proofmatch.artifacts import write_json
from proofmatch.cli import main
from proofmatch.config import load_config


@pytest.fixture
def checkout(tmp_path):
    """A copy of the workflow with a stamp written as ``stamp`` would (no run needed)."""
    wd = copy_workflow(tmp_path)
    (wd / "results").mkdir()
    write_json(
        {
            "code": RT.code_files(wd),
            "configfiles": ["config/config.yaml"],
            "config": load_config(wd / "config/config.yaml"),
        },
        wd / RT.STAMP,
    )
    return wd


def test_code_files_cover_what_jobs_run(checkout):
    files = RT.code_files(checkout)
    assert "Snakefile" in files and "workflow/rules/tables.smk" in files
    assert "workflow/scripts/report_table.py" in files and "src/proofmatch/config.py" in files
    assert not any("__pycache__" in f or f.endswith(".pyc") for f in files)
    assert not any(f.startswith(("tests/", "docs/", "config/")) for f in files)


def test_adopt_refuses_changed_code_naming_the_file(checkout, capsys):
    script = checkout / "workflow/scripts/report_table.py"
    script.write_text(script.read_text() + "\n# changed\n")
    with pytest.raises(RT.ResultsError, match=r"1 file\(s\): workflow/scripts/report_table.py"):
        RT.adopt(checkout)
    (checkout / "src/proofmatch/new.py").write_text("")
    assert main(["results", "adopt", "--root", str(checkout)]) == 1
    assert "src/proofmatch/new.py" in capsys.readouterr().err


def test_adopt_refuses_another_config_naming_the_key(checkout):
    (checkout / "more.yaml").write_text("report:\n  resamples: 2000\n")
    with pytest.raises(RT.ResultsError, match=r"key\(s\) report.resamples;"):
        RT.adopt(checkout, ["more.yaml"])


def test_adopt_without_a_stamp_says_how_to_make_one(tmp_path):
    wd = copy_workflow(tmp_path)
    with pytest.raises(RT.ResultsError, match="run `proofmatch results stamp` in the checkout"):
        RT.adopt(wd)


def test_changed_lists_nested_keys():
    assert RT.changed({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"b": 1, "c": 3}, "e": None}) == [
        "a.c",
        "d",
        "e",
    ]
