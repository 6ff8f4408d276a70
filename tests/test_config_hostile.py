"""Nine malformed configs that a dry run would accept fail before any job,
each naming the key (or the file and line) and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofmatch.config import ConfigError, check_paths, load_config

REPO = Path(__file__).resolve().parents[1]

CASES = {
    "min_tokens_over_max": (
        "filter:\n  min_tokens: 600\n  max_tokens: 500\n",
        "config key filter.min_tokens",
    ),
    "unknown_language": ("filter:\n  language: klingon\n", "config key filter.language"),
    "heads_do_not_divide": (
        "pretrain:\n  hidden_size: 64\n  num_attention_heads: 3\n",
        "config key pretrain.num_attention_heads",
    ),
    "max_length_over_positions": (
        "matching:\n  max_length: 1000\n",
        "config key matching.max_length",
    ),
    "missing_mathbert_path": (
        "matching:\n  mathbert: /nonexistent/models/mathbert\n",
        "config key matching.mathbert",
    ),
    "max_depth_over_libxml2": ("extract:\n  max_depth: 100000\n", "config key extract.max_depth"),
    "missing_corpus_folder": (
        "corpus:\n  source: dir\n  dir: /nonexistent/corpus\n",
        "config key corpus.dir",
    ),
    "duplicate_key": ("filter:\n  min_tokens: 5\n  min_tokens: 6\n", "line 3, column 3: "),
    "yaml_syntax_error": ("filter:\n  min_tokens: [5\nseed: 1\n", "line 3, column 5: "),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_config_names_key_and_fix(tmp_path: Path, case: str) -> None:
    text, expect = CASES[case]
    bad = tmp_path / f"{case}.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError) as err:
        check_paths(
            load_config(REPO / "config/config.yaml", bad)
        )  # what the workflow runs before any job
    message = str(err.value)
    assert expect in message and "fix:" in message, message
    if expect.startswith("line"):
        assert f"config file {bad}, " in message, message


def test_the_valid_neighbours_still_pass(tmp_path: Path) -> None:
    ok = tmp_path / "ok.yaml"
    ok.write_text(
        "filter:\n  min_tokens: 500\n  max_tokens: 500\n  language: fr\n"
        "pretrain:\n  hidden_size: 96\n  num_attention_heads: 3\n"
        f"matching:\n  max_length: 512\n  mathbert: tbs17/MathBERT\n"
        f"corpus:\n  source: dir\n  dir: {tmp_path}\n"
    )
    check_paths(load_config(REPO / "config/config.yaml", ok))


@pytest.mark.parametrize("case", ["missing_mathbert_path", "duplicate_key"])
def test_workflow_refuses_them_before_any_job(tmp_path: Path, case: str) -> None:
    import subprocess

    from test_workflow import SNAKEMAKE, copy_workflow

    wd = copy_workflow(tmp_path)
    (wd / "bad.yaml").write_text(CASES[case][0])
    run = subprocess.run(
        SNAKEMAKE + ["all", "-n", "--configfile", "config/config.yaml", "bad.yaml"],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0
    assert CASES[case][1] in run.stdout + run.stderr, (run.stdout + run.stderr)[-2000:]
    assert not (wd / "results").exists()
