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
    "n_shards_over_the_wildcard": ("corpus:\n  n_shards: 1001\n", "config key corpus.n_shards"),
    "nan_fraction": ("splits:\n  fractions: [.nan, 0.5, 0.5]\n", "config key splits.fractions.0"),
    "inf_alpha": ("replace:\n  partial_alpha: .inf\n", "config key replace.partial_alpha"),
    "nan_learning_rate": (
        "pretrain:\n  learning_rate: .nan\n",
        "config key pretrain.learning_rate",
    ),
    "huge_max_file_mb": ("extract:\n  max_file_mb: 1.0e+13\n", "config key extract.max_file_mb"),
    "missing_metadata_file": (
        "corpus:\n  source: dir\n  dir: .\n  metadata: /nonexistent/metadata.csv\n",
        "config key corpus.metadata: file /nonexistent/metadata.csv does not exist",
    ),
    "alias_bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
        )
        + "seed: *i\n",
        "expand to more than",
    ),
    "long_value": ("seed: " + "9" * 100_000 + "x\n", "config key seed"),
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
    assert len(message) < 2000, message[:2000]  # a value is quoted by a short prefix at most
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


def test_non_utf8_config_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"filter:\n  language: caf\xe9\n")
    with pytest.raises(ConfigError) as err:
        load_config(REPO / "config/config.yaml", bad)
    assert f"config file {bad}, line 2, column 16: byte 0xe9 is not UTF-8" in str(err.value)


def test_check_config_names_what_snakemake_would_not(tmp_path: Path, capsys) -> None:
    """Snakemake reads a --configfile before the workflow's own check: `proofmatch check-config`
    names the file and line of a YAML error or non-UTF-8 bytes there."""
    from proofmatch import cli

    bad = tmp_path / "bad.yaml"
    bad.write_text(CASES["yaml_syntax_error"][0])
    assert cli.main(["check-config", str(REPO / "config/config.yaml"), str(bad)]) == 2
    assert f"config file {bad}, line 3, column 5" in capsys.readouterr().err
    assert cli.main(["check-config", str(REPO / "config/config.yaml")]) == 0
