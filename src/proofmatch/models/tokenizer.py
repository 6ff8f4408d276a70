"""WordPiece tokenizer of ScratchBERT, trained on the training part of one split family.

The pairs are already tokenized (``proofmatch.data.views``): text words, and math symbols typed with a
``$`` prefix and an optional ``~font`` suffix. The tokenizer therefore only splits on whitespace
(no BERT basic tokenizer, no punctuation splitting, no lowercasing) so that

* case is kept: the reference lowercased everything and merged the variables ``A`` and ``a``;
* a math token stays one pre-token (``$x~bold`` is never cut at ``~``), and WordPiece cuts a rare
  one only into sub-words whose first piece starts with ``$``, so math and text never share a
  first piece: math ``$a`` and the English article ``a`` stay distinct ids.

The input string of every encoder is ``" ".join(tokens)`` (:func:`to_text`). Only the ``train``
part is read: dev and test text must not shape the vocabulary.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import pandas as pd

from proofmatch.artifacts import atomic_dir
from proofmatch.data.splits import read_part

log = logging.getLogger(__name__)

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def to_text(tokens: Sequence[str]) -> str:
    """The string an encoder's tokenizer sees for one token list."""
    return " ".join(tokens)


def _texts(df: pd.DataFrame) -> Iterator[str]:
    for column in ("statement_tokens", "proof_tokens"):
        for tokens in df[column]:
            yield to_text(tokens)


# First code point of the private-use plane used to train continuation characters (below).
_PRIVATE_USE = 0xF0000


def _continuation_table(texts: Iterable[str]) -> tuple[dict[str, str], list[str]]:
    """A private-use stand-in for every character found after the first of a word, and every
    character of the words (WordPiece's alphabet holds each character alone, wherever it occurs).

    ``tokenizers``' WordPiece trainer numbers its ``##c`` pieces in the order of a hash map, which is
    seeded per process: two trainings on the same data give different ids and, where merge counts
    tie, different vocabularies (1,954 entries on the demo: 14 differ between two processes, 250 ids).
    Training plain BPE on words whose later characters are distinct characters gives the same
    merges as WordPiece's (a continuation character is a symbol of its own either way) with every
    id fixed by sorted characters, so the same data give the same tokenizer. Stand-ins skip code
    points the data use themselves.
    """
    used: set[str] = set()
    later: set[str] = set()
    for text in texts:
        for word in text.split():
            used.update(word)
            later.update(word[1:])
    table: dict[str, str] = {}
    code = _PRIVATE_USE
    for char in sorted(later):
        while chr(code) in used:
            code += 1
        if code > 0x10FFFD:
            raise ValueError(
                f"{len(later)} distinct continuation characters: more than the private-use planes hold"
            )
        table[char] = chr(code)
        code += 1
    return table, sorted(used)


def build_tokenizer(texts: Callable[[], Iterator[str]], vocab_size: int, min_frequency: int):
    """Train a whitespace-pre-tokenized, case-preserving WordPiece ``tokenizers.Tokenizer``.

    ``texts`` is called twice (the characters first, then the training pass). The merges are
    learned by ``tokenizers``' BPE trainer as WordPiece's trainer learns them, on words whose
    continuation characters are stand-ins (:func:`_continuation_table`); the pieces are then
    written back as WordPiece's (``##`` before a continuation piece).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    table, alphabet = _continuation_table(texts())
    back = {v: k for k, v in table.items()}
    to_later = str.maketrans(table)

    def mapped(text: str) -> str:
        return " ".join(w[0] + w[1:].translate(to_later) for w in text.split())

    bpe = Tokenizer(models.BPE(unk_token="[UNK]"))
    bpe.normalizer = None
    bpe.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=alphabet,
        show_progress=False,
    )
    bpe.train_from_iterator((mapped(t) for t in texts()), trainer=trainer)
    vocab: dict[str, int] = {}
    for piece, _ in sorted(bpe.get_vocab().items(), key=lambda kv: kv[1]):
        if piece not in SPECIAL_TOKENS and piece[0] in back:
            piece = "##" + "".join(back[c] for c in piece)
        elif piece not in SPECIAL_TOKENS:
            piece = piece[0] + "".join(back[c] for c in piece[1:])
        vocab[piece] = len(vocab)

    tok = Tokenizer(
        models.WordPiece(
            vocab=vocab,
            unk_token="[UNK]",
            continuing_subword_prefix="##",
            max_input_chars_per_word=100,
        )
    )
    tok.normalizer = None  # keep case and accents exactly as linearized
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def wrap_fast(tok, model_max_length: int | None = None):
    """A ``transformers`` fast tokenizer around a trained ``tokenizers.Tokenizer``."""
    from transformers import PreTrainedTokenizerFast

    kwargs = {"model_max_length": model_max_length} if model_max_length else {}
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        **kwargs,
    )


def train_tokenizer(
    data_parquet: str | os.PathLike, out_dir: str | os.PathLike, vocab_size: int, min_frequency: int
) -> None:
    """Train WordPiece on the train part (statements and proofs) and save it as ``out_dir`` (the
    folder is replaced as a whole).

    ``out_dir`` gets ``tokenizer.json`` (the raw ``tokenizers`` file) and the
    ``PreTrainedTokenizerFast.save_pretrained`` files, so both
    ``PreTrainedTokenizerFast.from_pretrained(out_dir)`` and ``AutoTokenizer`` load it.
    """
    train = read_part(data_parquet, "train")
    if train.empty:
        raise ValueError(f"{data_parquet}: no rows with part == 'train'")
    tok = build_tokenizer(lambda: _texts(train), vocab_size, min_frequency)
    with atomic_dir(out_dir) as staging:
        wrap_fast(tok).save_pretrained(str(staging))
        tok.save(str(staging / "tokenizer.json"))  # the raw file replaces the wrapper's copy
    log.info(
        "tokenizer: %d train pairs, vocabulary %d -> %s", len(train), tok.get_vocab_size(), out_dir
    )


def load_tokenizer(tokenizer_dir: str | os.PathLike):
    """Load a tokenizer saved by :func:`train_tokenizer` (or any local/hub BERT tokenizer, or a
    folder with only a ``vocab.txt``: a lower-casing WordPiece tokenizer over it)."""
    from transformers import AutoTokenizer, BertTokenizerFast

    folder = Path(str(tokenizer_dir))
    local = folder.is_dir()
    if local and not any(
        (folder / f).exists() for f in ("tokenizer.json", "tokenizer_config.json")
    ):
        if (folder / "vocab.txt").is_file():
            # the released ScratchBERT: a hand-copied WordPiece vocab.txt and no tokenizer
            # config; the reference loads it with do_lower_case=True (waylonli/MATcH,
            # train/neural_model_bert.py L448)
            return BertTokenizerFast.from_pretrained(
                str(folder), do_lower_case=True, local_files_only=True
            )
    return AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=local)


# ---------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", help="replaced-split Parquet (its train part is read)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--config", default="config/config.yaml", help="config file")
    parser.add_argument("--vocab-size", type=int, help="overrides tokenizer.vocab_size")
    parser.add_argument("--min-frequency", type=int, help="overrides tokenizer.min_frequency")
    parser.add_argument("--log", help="log file")


def main(args: argparse.Namespace) -> int:
    from proofmatch.config import load_config
    from proofmatch.logs import setup_logging

    setup_logging(args.log)
    cfg = load_config(args.config)["tokenizer"]
    train_tokenizer(
        args.data,
        args.out,
        vocab_size=args.vocab_size or cfg["vocab_size"],
        min_frequency=args.min_frequency or cfg["min_frequency"],
    )
    return 0
