"""The config schema is the one source of truth: every key documented with a default,
config/README.md generated from it, config/config.yaml the demo's choices at their defaults, and
the defaults filled in by the one validation."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from proofmatch.config import (
    ConfigError,
    default,
    load_config,
    schema,
    schema_keys,
    validate_config,
)
from proofmatch.config_readme import schema_markdown

REPO = Path(__file__).resolve().parents[1]


def test_config_readme_is_generated_from_the_schema():
    readme = (REPO / "config/README.md").read_text(encoding="utf-8")
    assert readme == schema_markdown(), (
        "config/README.md is stale: run `proofmatch config --readme config/README.md`"
    )


def test_every_key_has_a_description_and_a_default():
    keys = schema_keys()
    assert len(keys) > 80
    for path, s, required in keys:
        assert s.get("description"), f"{path} has no description"
        assert required or "default" in s, f"{path} has no default"
        if s.get("type") == "object":
            assert s["default"] == {}, (
                f"{path}: an object's default is {{}} (its keys have their own)"
            )
    # only the two keys of a transfer corpus that name it have no default
    assert [p for p, _, required in keys if required] == [
        "transfer.corpora[].name",
        "transfer.corpora[].source",
    ]


def test_every_key_is_in_the_readme():
    readme = (REPO / "config/README.md").read_text(encoding="utf-8")
    for path, s, _ in schema_keys():
        if s.get("type") != "object":
            assert f"| `{path}` " in readme, path


def test_defaults_are_the_demo_config():
    """config/config.yaml holds the demo's choices, each a schema key at its default, so an empty
    config is the demo; it mirrors no more than that: a key added to the schema needs no line here."""
    demo = yaml.safe_load((REPO / "config/config.yaml").read_text(encoding="utf-8"))
    assert load_config(REPO / "config/config.yaml") == validate_config({})
    paths = {path for path, _, _ in schema_keys()}

    def leaves(tree: dict, prefix: str = "") -> dict[str, object]:
        out: dict[str, object] = {}
        for k, v in tree.items():
            key = f"{prefix}{k}"
            out.update(leaves(v, key + ".") if isinstance(v, dict) and v else {key: v})
        return out

    chosen = leaves(demo)
    assert set(chosen) <= paths, sorted(set(chosen) - paths)
    assert {k: v for k, v in chosen.items() if v != default(k)} == {}
    assert len(chosen) < len(paths) / 2, "config/config.yaml mirrors the schema's defaults again"


def test_validation_fills_defaults_in_place_and_keeps_given_values():
    cfg = {"filter": {"min_tokens": 5}, "transfer": {"corpora": [{"name": "x", "source": "demo"}]}}
    out = validate_config(cfg)
    assert out is cfg  # the workflow's config object itself is completed
    assert cfg["filter"] == {"language": "en", "min_tokens": 5, "max_tokens": 500}
    assert cfg["transfer"]["corpora"][0]["latex"]["timeout_s"] == 600
    assert cfg["transfer"]["corpora"][0]["n_shards"] is None
    # defaults are copies: filling one config never changes another or the schema
    cfg["replace"]["protected"].append("Q")
    assert validate_config({})["replace"]["protected"] == ["P", "E", "V", "σ", "ρ"]
    assert "Q" not in str(schema())


@pytest.mark.parametrize("source", ["dir", "latex"])
def test_dir_and_latex_sources_need_a_folder(source):
    with pytest.raises(
        ConfigError, match="config key corpus.dir: None is not of type 'string'.*required when"
    ):
        validate_config({"corpus": {"source": source}})
    with pytest.raises(ConfigError, match=r"transfer.corpora.0.dir"):
        validate_config({"transfer": {"corpora": [{"name": "t", "source": source}]}})
    assert validate_config({"corpus": {"source": source, "dir": "x"}})["corpus"]["dir"] == "x"


def test_every_error_is_reported_at_once():
    with pytest.raises(ConfigError) as err:
        validate_config({"seed": -1, "filter": {"min_tokens": "many"}, "decode": {"topk": 0}})
    text = str(err.value)
    for key in ("config key seed", "config key filter.min_tokens", "config key decode.topk"):
        assert key in text


def test_cli_prints_the_merged_config_and_writes_the_readme(tmp_path, capsys):
    from proofmatch import cli

    assert (
        cli.main(["config", str(REPO / "config/config.yaml"), str(REPO / "config/smoke.yaml")]) == 0
    )
    printed = yaml.safe_load(capsys.readouterr().out)
    expected = copy.deepcopy(load_config(REPO / "config/config.yaml", REPO / "config/smoke.yaml"))
    assert printed == expected and printed["matching"]["npt"]["epochs"] == 2
    assert cli.main(["config", "--readme", str(tmp_path / "README.md")]) == 0
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == schema_markdown()


def test_default_of_a_key_is_the_schemas():
    demo = validate_config({})
    assert default("filter.min_tokens") == demo["filter"]["min_tokens"] == 20
    assert default("replace.protected") == demo["replace"]["protected"]
    assert default("transfer.corpora[].latex.timeout_s") == 600
    with pytest.raises(KeyError, match="no config key"):
        default("filter.min_token")
    with pytest.raises(KeyError, match="no config key"):
        default("transfer.corpora[].name")  # required, no default
