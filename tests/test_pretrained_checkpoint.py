"""``pretrain.checkpoint``: a BERT masked-LM folder in the released ScratchBERT layout
(config.json, pytorch_model.bin or model.safetensors, a hand-copied lower-case vocab.txt) in place
of the tokenizer and MLM jobs."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_workflow import copy_workflow
from toydata import toy_pairs, train_params

from proofmatch.models.encoders import BertEncoder
from proofmatch.models.train import train_run

REPO = Path(__file__).resolve().parents[1]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>", "<T>"]


def released_layout(folder: Path, safetensors: bool = False) -> Path:
    """A tiny ``BertForMaskedLM`` saved as the reference's Trainer saved ScratchBERT: its
    config.json, its state dict as pytorch_model.bin (``bert.*`` and ``cls.*``, no pooler), and a
    vocab.txt copied in by hand (the special tokens first, lower-case words)."""
    from transformers import BertConfig, BertForMaskedLM

    words = ["lemma", "proof", "let", "be", "the", "of", "and", ".", ",", "$", "~", "bold"]
    words += [f"w{i}" for i in range(60)] + list("abcdefghijklmnopqrstuvwxyz") + list("αβγδεζηθλμ")
    vocab = SPECIAL + sorted(set(words), key=words.index)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    model = BertForMaskedLM(cfg)
    cfg.architectures = ["BertForMaskedLM"]
    cfg.to_json_file(str(folder / "config.json"))
    if safetensors:
        model.save_pretrained(str(folder), safe_serialization=True)
        (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    else:
        state = {k: v for k, v in model.state_dict().items() if "pooler" not in k}
        torch.save(state, folder / "pytorch_model.bin")
    return folder


def test_loads_the_released_layout(tmp_path):
    folder = released_layout(tmp_path / "model_files")
    state = torch.load(folder / "pytorch_model.bin", weights_only=True)
    enc = BertEncoder.from_checkpoint(folder, "mean")
    assert torch.equal(
        enc.bert.embeddings.word_embeddings.weight, state["bert.embeddings.word_embeddings.weight"]
    )
    from proofmatch.models.tokenizer import load_tokenizer

    tok = load_tokenizer(folder)
    assert tok.convert_ids_to_tokens(tok("Lemma W3")["input_ids"]) == [
        "[CLS]",
        "lemma",
        "w3",
        "[SEP]",
    ]
    assert tok.pad_token_id == 0
    both = BertEncoder.from_checkpoint(released_layout(tmp_path / "st", safetensors=True), "mean")
    assert both.dim == 32


class _Boom:
    def __reduce__(self):
        return (print, ("unpickled code ran",))


def test_a_pickle_with_code_is_refused(tmp_path, capsys):
    folder = released_layout(tmp_path / "evil")
    with open(folder / "pytorch_model.bin", "wb") as f:
        pickle.dump({"bert.x": _Boom()}, f)
    with pytest.raises(pickle.UnpicklingError):
        BertEncoder.from_checkpoint(folder)
    assert "unpickled code ran" not in capsys.readouterr().out


def test_scratchbert_fine_tunes_from_it(tmp_path):
    folder = released_layout(tmp_path / "model_files")
    data = tmp_path / "toy.parquet"
    toy_pairs(n_articles=8, pairs_per_article=4).to_parquet(data)
    params = train_params("scratchbert", epochs=1, batch_size=8, max_length=32, pooling="mean")
    res = train_run(
        data,
        tmp_path / "run",
        "scratchbert",
        "local",
        "both",
        params,
        seed=0,
        pretrained_dir=folder,
    )
    assert res["dev_mrr"] > 0
    saved = json.loads((tmp_path / "run" / "model" / "config.json").read_text())
    assert saved["plain_math"]  # a vocabulary without typed math tokens: math loses its "$"


def test_dry_run_plans_no_tokenizer_or_mlm_job(tmp_path):
    (tmp_path / "wd").mkdir()
    wd = copy_workflow(tmp_path / "wd")
    released_layout(wd / "model_files")
    (wd / "ckpt.yaml").write_text("pretrain:\n  checkpoint: model_files\n")
    (wd / "bad.yaml").write_text("pretrain:\n  checkpoint: nowhere\n")

    def plan(override: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "all"]
            + ["--configfile", "config/config.yaml", override],
            cwd=wd,
            capture_output=True,
            text=True,
            timeout=300,
        )

    dry = plan("ckpt.yaml")
    out = dry.stdout + dry.stderr
    assert dry.returncode == 0, out[-3000:]
    assert "rule pretrain_scratchbert:" not in out and "rule train_tokenizer:" not in out
    assert "model_files" in out  # the ScratchBERT runs read it
    bad = plan("bad.yaml")
    assert bad.returncode != 0 and "pretrain.checkpoint: nowhere" in bad.stdout + bad.stderr


def test_pretrain_text_corpus_needs_xhtml():
    from proofmatch.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match="pretrain.text: corpus needs the articles' XHTML"):
        validate_config({"corpus": {"source": "match", "dir": "x"}, "pretrain": {"text": "corpus"}})
    with pytest.raises(ConfigError, match="transfer.corpora.0.source: match"):
        validate_config({"transfer": {"corpora": [{"name": "m", "source": "match", "dir": "x"}]}})
