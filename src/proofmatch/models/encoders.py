"""Encoders that turn a padded batch of token ids into one vector per statement or proof.

One interface, :class:`Encoder`: ``forward(input_ids, attention_mask) -> [B, d]``. Each encoder is
paired with a *codec* that maps token lists (``proofmatch.data.views``) to ids:

* NPT (paper §8: "We use l=2 self-attentive layers with 4 heads to obtain contextualized
  embeddings of dimension d=300. The query and key vectors have size d_k=128. We construct a
  vector representation for the text with a max-pooling layer"): post-LN layers, FFN width d and
  dropout 0.1 and frozen sinusoidal positions as in the reference code, max-pooling over the
  **non-padding** positions only (the reference max-pooled over pad zeros too, so a short text's
  vector depended on how long the other texts of its batch were). Its codec is
  :class:`WordVocab`, a word-level vocabulary of the training split (min count 2): the tokens are
  already split and typed, and the paper gives NPT a vocabulary customized to the data; WordPiece
  would cut rare symbols into pieces that a model without pre-training cannot relate.
* BERT (ScratchBERT, MathBERT, SPECTER-style): ``transformers.BertModel`` from a checkpoint, pooled
  by the final hidden state of ``[CLS]`` (the paper names no pooling) or the mean over tokens
  (``matching.bert.pooling``; SPECTER-style: ``matching.specter.pooling``). ScratchBERT is pretrained with MLM only, which never
  trains BERT's pooler (dense + tanh over [CLS]), so ``pooler_output`` would start from random
  weights (a reference bug); [CLS] is also SPECTER's document vector, but SPECTER's SciBERT [CLS]
  was pretrained (next-sentence prediction) and an MLM-only ScratchBERT's is not. Its codec is
  :class:`WordPieceCodec` over ``" ".join(tokens)``.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from proofmatch.artifacts import verify, write_json
from proofmatch.data.views import MATH_PREFIX, is_math
from proofmatch.models.params import Pooling
from proofmatch.models.tokenizer import to_text

PAD, UNK, CLS = "[PAD]", "[UNK]", "[CLS]"


# ---------------------------------------------------------------- codecs (token lists -> ids)


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists into ``(ids [B, L], mask [B, L] bool)``: at least one row, each with at
    least one id."""
    ids = [torch.as_tensor(r, dtype=torch.long) for r in rows]
    return (
        pad_sequence(ids, batch_first=True, padding_value=pad_id),
        pad_sequence([torch.ones(len(r), dtype=torch.bool) for r in ids], batch_first=True),
    )


class WordVocab:
    """Word-level vocabulary of NPT: ``[PAD]``=0, ``[UNK]``=1, ``[CLS]``=2, then by frequency.

    Every sequence starts with ``[CLS]`` so that a view with no token (the math view of a
    statement without formulas) still has one position to max-pool over.
    """

    FILE = "vocab.json"

    def __init__(self, itos: Sequence[str]):
        if list(itos[:3]) != [PAD, UNK, CLS]:
            raise ValueError("a WordVocab must start with [PAD], [UNK], [CLS]")
        self.itos = list(itos)
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("duplicate tokens in vocabulary")

    @classmethod
    def build(cls, sequences: Iterable[Sequence[str]], min_count: int) -> WordVocab:
        """Tokens seen at least ``min_count`` times, most frequent first (ties by token: deterministic)."""
        counts = Counter(t for seq in sequences for t in seq)
        kept = sorted(
            (t for t, c in counts.items() if c >= min_count and t not in (PAD, UNK, CLS)),
            key=lambda t: (-counts[t], t),
        )
        return cls([PAD, UNK, CLS, *kept])

    def __len__(self) -> int:
        return len(self.itos)

    pad_id = 0

    def ids(self, sequences: Sequence[Sequence[str]], max_length: int) -> list[list[int]]:
        """Id lists, ``[CLS]`` first, truncated to ``max_length`` (unknown tokens -> ``[UNK]``)."""
        unk, cls_ = self.stoi[UNK], self.stoi[CLS]
        get = self.stoi.get
        return [[cls_, *(get(t, unk) for t in seq[: max_length - 1])] for seq in sequences]

    def encode(
        self, sequences: Sequence[Sequence[str]], max_length: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ids ``[B, L]`` and a bool mask."""
        return pad_batch(self.ids(sequences, max_length), self.pad_id)

    def save(self, out_dir: str | os.PathLike) -> None:
        write_json({"itos": self.itos}, Path(out_dir) / self.FILE)

    @classmethod
    def load(cls, model_dir: str | os.PathLike) -> WordVocab:
        return cls(json.loads((Path(model_dir) / cls.FILE).read_text())["itos"])


def plain_math(tokens: Sequence[str]) -> list[str]:
    """Drop the ``$`` type prefix (for an external checkpoint such as MathBERT, whose vocabulary
    was not built on typed tokens: ``$x`` would cost two word pieces ``$``, ``x`` per symbol)."""
    return [t[len(MATH_PREFIX) :] if is_math(t) else t for t in tokens]


class WordPieceCodec:
    """``" ".join(tokens)`` through a ``transformers`` tokenizer, ``[CLS] ... [SEP]``, padded."""

    def __init__(self, tokenizer, plain: bool = False):
        self.tokenizer = tokenizer
        self.plain = plain

    @property
    def pad_id(self) -> int:
        return int(self.tokenizer.pad_token_id)

    def ids(self, sequences: Sequence[Sequence[str]], max_length: int) -> list[list[int]]:
        texts = [to_text(plain_math(s) if self.plain else s) for s in sequences]
        return self.tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]

    def encode(
        self, sequences: Sequence[Sequence[str]], max_length: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return pad_batch(self.ids(sequences, max_length), self.pad_id)

    def save(self, out_dir: str | os.PathLike) -> None:
        self.tokenizer.save_pretrained(str(out_dir))

    @classmethod
    def load(cls, model_dir: str | os.PathLike, plain: bool = False) -> WordPieceCodec:
        from proofmatch.models.tokenizer import load_tokenizer

        return cls(load_tokenizer(model_dir), plain=plain)


# ---------------------------------------------------------------- encoders


class Encoder(nn.Module):
    """``forward(input_ids [B, L], attention_mask [B, L] bool) -> [B, dim]``."""

    dim: int

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError


@dataclass
class NPTConfig:
    """Hyper-parameters of the NPT encoder, saved with the model (``config.json``). The shape has
    no defaults: a run sets it from its params (config ``matching.npt``; the paper's §8 values are
    ``config/paper.yaml``'s). The defaults left are those of the reference code, what a model
    saved before its key existed was built with."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_k: int
    max_length: int
    d_ff: int | None = None  # None: d_model (the reference did not widen the FFN)
    dropout: float = 0.1
    # Dropout on the attention probabilities (the reference's 0.1). On a CPU it dominates a step's
    # cost (one random draw per query-key pair), so the demo config turns it off.
    attention_dropout: float = 0.1
    # The reference code adds a fixed sinusoidal position table to the word embeddings (the paper
    # names none). Without it the encoder sees a bag of tokens in context: a token's input no
    # longer depends on where it stands, and on a corpus of a few thousand pairs that learns
    # faster and ends higher.
    positions: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def sinusoidal_table(n_positions: int, dim: int) -> torch.Tensor:
    """The fixed sin/cos position table of Vaswani et al. (2017), ``[n_positions, dim]``."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]
    rate = torch.exp(-math.log(10000.0) * (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    table = torch.zeros(n_positions, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * rate)
    table[:, 1::2] = torch.cos(pos * rate)[:, : dim // 2]
    return table.float()


class SelfAttentionLayer(nn.Module):
    """Post-LN transformer layer whose query/key size ``d_k`` per head is independent of ``d_model``."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_k: int,
        d_ff: int,
        dropout: float,
        attention_dropout: float,
    ):
        super().__init__()
        self.n_heads, self.d_k, self.attention_dropout = n_heads, d_k, attention_dropout
        self.q = nn.Linear(d_model, n_heads * d_k)
        self.k = nn.Linear(d_model, n_heads * d_k)
        self.v = nn.Linear(d_model, n_heads * d_k)
        self.out = nn.Linear(n_heads * d_k, d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        heads = lambda t: t.view(b, n, self.n_heads, self.d_k).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        # keys at pad positions are hidden from every query; a query always sees its [CLS] key
        attn = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask[:, None, None, :],
            dropout_p=self.attention_dropout if self.training else 0.0,
        )
        x = self.norm1(x + self.drop(self.out(attn.transpose(1, 2).reshape(b, n, -1))))
        return self.norm2(x + self.drop(self.ff(x)))


class NPTEncoder(Encoder):
    """Self-attentive encoder trained from scratch, max-pooled over real tokens (paper §8)."""

    def __init__(self, config: NPTConfig):
        super().__init__()
        self.config = config
        self.dim = config.d_model
        d_ff = config.d_ff or config.d_model
        self.embed = nn.Embedding(config.vocab_size, config.d_model, padding_idx=0)
        self.register_buffer(
            "positions", sinusoidal_table(config.max_length, config.d_model), persistent=False
        )
        self.drop = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(
            SelfAttentionLayer(
                config.d_model,
                config.n_heads,
                config.d_k,
                d_ff,
                config.dropout,
                config.attention_dropout,
            )
            for _ in range(config.n_layers)
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask.bool()
        n = input_ids.shape[1]
        if n > self.config.max_length:
            raise ValueError(f"sequence length {n} exceeds NPT max_length {self.config.max_length}")
        x = self.embed(input_ids)
        if self.config.positions:
            x = x + self.positions[:n].to(x.dtype)
        x = self.drop(x)
        for layer in self.layers:
            x = layer(x, mask)
        return x.masked_fill(~mask[:, :, None], float("-inf")).max(dim=1).values


def _bert_from_bin(folder: Path):
    """A BERT encoder from a folder with ``config.json`` and a ``pytorch_model.bin`` state dict
    (the released ScratchBERT: a ``BertForMaskedLM``'s ``bert.*`` and ``cls.*`` weights, no
    pooler). The file is read with ``weights_only=True``: tensors only, never arbitrary pickled
    code. The MLM head is dropped; every encoder weight must be there."""
    from transformers import BertConfig, BertModel

    bin_file = folder / "pytorch_model.bin"
    if not bin_file.is_file():
        raise FileNotFoundError(f"{folder}: no model.safetensors or pytorch_model.bin")
    state = torch.load(bin_file, map_location="cpu", weights_only=True)
    if not isinstance(state, dict):
        raise ValueError(f"{bin_file}: not a state dict")
    bert = BertModel(BertConfig.from_pretrained(str(folder)), add_pooling_layer=False)
    own = {k.removeprefix("bert."): v for k, v in state.items() if not k.startswith("cls.")}
    own = {k: v for k, v in own.items() if not k.startswith("pooler.")}
    missing, unexpected = bert.load_state_dict(own, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(
            f"{bin_file}: not this BERT's weights: missing {missing[:3]}, unexpected {unexpected[:3]}"
        )
    return bert


class BertEncoder(Encoder):
    """A ``BertModel`` without pooler; the text vector is the last hidden state of ``[CLS]``
    (``pooling="cls"``, SPECTER's choice; the paper names no pooling and the reference code used
    ``pooler_output``) or the mean over real tokens (``"mean"``). An MLM-only checkpoint never trains ``[CLS]`` (no next-sentence task): a small,
    briefly pretrained one gives nearly the same ``[CLS]`` vector for every input, and matching
    cannot start from there, so the demo config pools by the mean."""

    def __init__(self, bert, pooling: Pooling = "cls", normalize: bool = False):
        super().__init__()
        self.bert = bert
        self.pooling = pooling
        self.normalize = normalize  # L2-normalised vectors: W = I scores their cosine
        self.dim = bert.config.hidden_size

    @classmethod
    def from_checkpoint(
        cls, path: str | os.PathLike, pooling: Pooling = "cls", normalize: bool = False
    ) -> BertEncoder:
        """Load pretrained weights (a local folder, e.g. ScratchBERT, or a hub id, e.g. MathBERT).

        An MLM checkpoint (``BertForMaskedLM``) loads fine: its ``bert.*`` weights are the encoder.
        """
        from transformers import BertModel

        local = Path(str(path)).is_dir()
        if local:
            verify(path)  # a ScratchBERT folder against the digest written with it
            if not (Path(path) / "model.safetensors").exists():
                return cls(_bert_from_bin(Path(path)), pooling)
        bert = BertModel.from_pretrained(str(path), add_pooling_layer=False, local_files_only=local)
        return cls(bert, pooling, normalize)

    @classmethod
    def from_config(
        cls, config: dict, pooling: Pooling = "cls", normalize: bool = False
    ) -> BertEncoder:
        """An untrained encoder of the given architecture (weights are loaded afterwards)."""
        from transformers import BertConfig, BertModel

        bert = BertModel(BertConfig.from_dict(config), add_pooling_layer=False)
        return cls(bert, pooling, normalize)

    def train_top(self, layers: int | None) -> None:
        """Train only the top ``layers`` transformer layers (embeddings and the layers below
        frozen: their gradients are never computed); None trains every weight."""
        if layers is None:
            return
        n = self.bert.config.num_hidden_layers
        if not 0 <= layers <= n:
            raise ValueError(f"train_layers {layers} outside 0..{n} (the checkpoint's layers)")
        for p in self.bert.parameters():
            p.requires_grad_(False)
        for layer in self.bert.encoder.layer[n - layers :]:
            for p in layer.parameters():
                p.requires_grad_(True)

    def config_dict(self) -> dict:
        """The architecture as plain JSON data (no local path: the saved model is relocatable)."""
        cfg = json.loads(self.bert.config.to_json_string(use_diff=False))
        cfg.pop("_name_or_path", None)
        return cfg

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask.long())
        if self.pooling == "cls":
            vec = out.last_hidden_state[:, 0]
        else:
            mask = attention_mask.to(out.last_hidden_state.dtype).unsqueeze(-1)
            vec = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return F.normalize(vec, dim=-1) if self.normalize else vec
