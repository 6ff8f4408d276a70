"""The config schema accepts the shipped configs and names the key and the fix for wrong values."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from proofmatch.config import ConfigError, deep_merge, load_config, validate_config

REPO = Path(__file__).resolve().parents[1]


def demo() -> dict:
    """The demo's whole config: config/config.yaml with the schema's defaults filled in."""
    return load_config(REPO / "config/config.yaml")


def leaves(tree: dict, prefix: tuple = ()) -> dict[tuple, object]:
    """Every leaf of a nested mapping by its key path (lists are leaves, as deep_merge treats them)."""
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict) and v:
            out.update(leaves(v, prefix + (k,)))
        else:
            out[prefix + (k,)] = v
    return out


def test_demo_config_validates_to_the_defaults():
    raw = yaml.safe_load((REPO / "config/config.yaml").read_text(encoding="utf-8"))
    assert demo() == validate_config(copy.deepcopy(raw)) == validate_config({})


@pytest.mark.parametrize(
    "override", ["stacks.yaml", "paper.yaml", "smoke.yaml", "stacks-built.yaml"]
)
def test_shipped_overrides_validate_and_merge_leaf_by_leaf(override):
    """Each override is merged over the demo config: its own leaves win, every other leaf is the demo's."""
    path = REPO / "config" / override
    merged = leaves(load_config(REPO / "config/config.yaml", path))
    own = leaves(yaml.safe_load(path.read_text()))
    base = leaves(demo())
    assert own, f"{override} overrides nothing"
    for key, value in own.items():
        got = merged[key]
        if (
            isinstance(value, list) and value and isinstance(value[0], dict)
        ):  # list items gain their defaults
            got = [{k: item[k] for k in given} for item, given in zip(got, value)]
        assert got == value, key
    for key, value in base.items():
        if not any(key[: len(k)] == k for k in own):
            assert merged[key] == value, key


def test_paper_config_has_the_papers_model_sizes():
    """Paper §8: ScratchBERT is BERT-base; NPT has 2 layers, 4 heads, d = 300, d_k = 128."""
    cfg = load_config(REPO / "config/config.yaml", REPO / "config/paper.yaml")
    bert = cfg["pretrain"]
    assert (bert["hidden_size"], bert["num_hidden_layers"], bert["num_attention_heads"]) == (
        768,
        12,
        12,
    )
    npt = cfg["matching"]["npt"]
    assert (npt["n_layers"], npt["n_heads"], npt["d_model"], npt["d_k"]) == (2, 4, 300, 128)


@pytest.mark.parametrize(
    "path, value, expect",
    [
        (("corpus", "source"), "web", "config key corpus.source"),
        (("corpus", "n_shards"), 0, "config key corpus.n_shards"),
        (("filter", "min_tokens"), "twenty", "config key filter.min_tokens"),
        (("replace", "partial_alpha"), 1.5, "config key replace.partial_alpha"),
        (("matching", "npt", "batch_size"), 1, "config key matching.npt.batch_size"),
        (("matching", "npt", "optimizer"), "sgd", "config key matching.npt.optimizer"),
    ],
)
def test_wrong_value_names_key_and_fix(path, value, expect):
    cfg = demo()
    node = cfg
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        validate_config(cfg)
    assert expect in str(err.value)
    assert "fix:" in str(err.value)


def test_unknown_key_lists_allowed_keys():
    cfg = demo()
    cfg["filter"]["min_token"] = 20
    with pytest.raises(ConfigError, match="min_tokens"):
        validate_config(cfg)


def test_fractions_must_sum_to_one():
    cfg = demo()
    cfg["splits"]["fractions"] = [0.5, 0.1, 0.1]
    with pytest.raises(ConfigError, match="splits.fractions"):
        validate_config(cfg)


def test_search_runs_must_be_servable():
    """An index needs a model: a run from an unset checkpoint, or one left out, is refused."""
    cfg = demo()
    cfg["fusion"]["search_runs"] = ["mathbert-local"]
    with pytest.raises(
        ConfigError, match="fusion.search_runs: mathbert-local starts from matching.mathbert"
    ):
        validate_config(cfg)
    cfg["matching"]["mathbert"] = "tbs17/MathBERT"
    validate_config(copy.deepcopy(cfg))
    cfg["report"]["leave_out"] = ["mathbert-local"]
    with pytest.raises(
        ConfigError, match="fusion.search_runs: mathbert-local is also in report.leave_out"
    ):
        validate_config(cfg)


def test_dir_source_needs_dir():
    cfg = demo()
    cfg["corpus"]["source"] = "dir"
    cfg["corpus"]["dir"] = None
    with pytest.raises(ConfigError, match="corpus.dir"):
        validate_config(cfg)


def test_deep_merge_overrides_leaves_only():
    base = {"a": {"b": 1, "c": 2}, "d": 3}
    out = deep_merge(copy.deepcopy(base), {"a": {"c": 5}})
    assert out == {"a": {"b": 1, "c": 5}, "d": 3}


def test_stacks_built_overlay_replaces_the_shared_folders():
    """config/stacks-built.yaml over stacks.yaml: the built folder instead of the default two, the rest stacks.yaml's."""
    stacks = load_config(REPO / "config/config.yaml", REPO / "config/stacks.yaml")
    built = load_config(
        REPO / "config/config.yaml", REPO / "config/stacks.yaml", REPO / "config/stacks-built.yaml"
    )
    assert built["corpus"]["dir"] == ["corpora/stacks/xhtml"]
    assert built["corpus"]["metadata"] == ["corpora/stacks/metadata.csv"]
    assert {k: v for k, v in built.items() if k != "corpus"} == {
        k: v for k, v in stacks.items() if k != "corpus"
    }
