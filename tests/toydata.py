"""A seeded toy corpus in the replaced-split format, shared by the training tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def toy_pairs(
    n_articles: int = 24,
    pairs_per_article: int = 6,
    seed: int = 0,
    n_symbols: int = 20,
    fractions: tuple[float, float, float] = (0.7, 0.15, 0.15),
) -> pd.DataFrame:
    """A seeded toy corpus in the replaced-split format with a learnable signal, for the
    training, pretraining and resume tests: each statement holds 3 of ``n_symbols`` math symbols among text
    words, and its proof repeats them among distractor symbols; pairs of one article share topic
    words (same-article proofs are harder negatives). Math ``$a`` and text ``a`` both occur."""
    rng = np.random.default_rng(seed)
    letters = "abcdefghijklmnopqrstuvwxyzαβγδεζηθλμνξπρστφχψω"
    symbols = [f"${c}" if i % 3 else f"${c}~bold" for i, c in enumerate(letters[:n_symbols])]
    glue = ["Let", "be", "a", "the", "of", "and", "then", "is", "for", "all", ",", "."]
    words = [f"w{i}" for i in range(60)]
    shuffle = lambda xs: [str(xs[i]) for i in rng.permutation(len(xs))]  # noqa: E731
    rows = []
    for a in range(n_articles):
        topic = list(rng.choice(words, 3, replace=False))
        for k in range(pairs_per_article):
            syms = list(rng.choice(symbols, 3, replace=False))
            st = shuffle(list(rng.choice(glue + topic, 6)) + syms)
            pf = shuffle(
                list(rng.choice(glue + topic, 12)) + syms * 2 + list(rng.choice(symbols, 2))
            )
            u = rng.random()
            part = (
                "train"
                if u < fractions[0]
                else "dev"
                if u < fractions[0] + fractions[1]
                else "test"
            )
            rows.append(
                {
                    "pair_id": f"toy{a:03d}/s{k}",
                    "article_id": f"toy{a:03d}",
                    "part": part,
                    "statement_tokens": ["Lemma", "."] + st,
                    "proof_tokens": ["Proof", "."] + pf,
                }
            )
    return pd.DataFrame(rows)


def train_params(encoder: str, **fields: Any):
    """The :class:`~proofmatch.models.params.TrainParams` of an ``encoder`` run under the schema's
    defaults (the demo config), with ``fields`` (flat TrainParams names) replaced: a test states
    what it changes, and every other value comes from the one place that holds defaults."""
    from proofmatch.config import validate_config
    from proofmatch.models.params import TrainParams

    return TrainParams.from_config(validate_config({})["matching"], encoder).replaced(**fields)


def tiny_bert_checkpoint(
    folder, texts: list[str], vocab_size: int, layers: int = 2, masked_lm: bool = False
):
    """A tiny random ``BertModel`` (``layers`` of 16) with a WordPiece tokenizer trained on
    ``texts``, saved in ``folder`` as a pretrained checkpoint is: the stand-in the tests load.
    ``masked_lm``: a ``BertForMaskedLM`` instead, saved as a ScratchBERT checkpoint is."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertModel

    from proofmatch.models.tokenizer import build_tokenizer, wrap_fast

    fast = wrap_fast(build_tokenizer(lambda: iter(texts), vocab_size=vocab_size, min_frequency=1))
    fast.save_pretrained(str(folder))
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(fast),
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        pad_token_id=fast.pad_token_id,
    )
    (BertForMaskedLM if masked_lm else BertModel)(cfg).save_pretrained(str(folder))
    return folder
