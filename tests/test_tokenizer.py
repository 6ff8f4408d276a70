"""WordPiece tokenizer: case kept, math and text distinct, train part only, loads with transformers."""

from __future__ import annotations

import pandas as pd
import pytest

from proofmatch.artifacts import write_parquet
from proofmatch.models.tokenizer import train_tokenizer


def _frame() -> pd.DataFrame:
    train_st = ["Let", "$A", "be", "a", "set", "and", "$a", "in", "$A", "."]
    train_pf = ["Since", "$a", "in", "$A", ",", "a", "set", "A", "is", "$x~bold", "."]
    rows = [
        {
            "pair_id": f"t/{i}",
            "article_id": "t",
            "part": "train",
            "statement_tokens": train_st,
            "proof_tokens": train_pf,
        }
        for i in range(6)
    ]
    # a frequent word seen only outside train must not enter the vocabulary
    rows += [
        {
            "pair_id": f"d/{i}",
            "article_id": "d",
            "part": part,
            "statement_tokens": ["zebra"] * 20,
            "proof_tokens": ["zebra"] * 20,
        }
        for i, part in enumerate(["dev", "test", "dev"])
    ]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tok")
    write_parquet(_frame(), d / "data.parquet")
    train_tokenizer(d / "data.parquet", d / "out", vocab_size=120, min_frequency=2)
    return d / "out"


def test_files_and_transformers_loading(tok_dir):
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    assert (tok_dir / "tokenizer.json").exists() and (tok_dir / "tokenizer_config.json").exists()
    for tok in (
        PreTrainedTokenizerFast.from_pretrained(str(tok_dir)),
        AutoTokenizer.from_pretrained(str(tok_dir)),
    ):
        enc = tok("Let $A be a set")
        assert tok.convert_ids_to_tokens(enc["input_ids"]) == [
            "[CLS]",
            "Let",
            "$A",
            "be",
            "a",
            "set",
            "[SEP]",
        ]
        assert tok.pad_token == "[PAD]" and tok.mask_token == "[MASK]" and tok.unk_token == "[UNK]"


def test_case_kept_and_math_text_distinct(tok_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    pieces = [tok.tokenize(w) for w in ["$A", "$a", "A", "a"]]
    assert pieces == [["$A"], ["$a"], ["A"], ["a"]]
    ids = tok.convert_tokens_to_ids([p[0] for p in pieces])
    assert len(set(ids)) == 4 and tok.unk_token_id not in ids
    # a math token is one pre-token: it is never cut at its font separator into a text piece
    bold = tok.tokenize("$x~bold")
    assert bold[0].startswith("$") and all(p.startswith("##") for p in bold[1:])


def test_train_part_only(tok_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    assert "zebra" not in tok.get_vocab()


def test_missing_column_is_a_clear_error(tmp_path):
    write_parquet(_frame().drop(columns=["proof_tokens"]), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="proof_tokens"):
        train_tokenizer(tmp_path / "bad.parquet", tmp_path / "out", 120, 2)


def _words_frame(n: int = 300) -> pd.DataFrame:
    """Many pairs of made-up words, so merge counts tie (where the library's trainer is random)."""
    import random

    rng = random.Random(0)
    stems = [f"w{i}" for i in range(400)] + ["$x", "$α", "$y~bold", "\\sum"]
    words = lambda: [rng.choice(stems) + rng.choice(["", "ab", "cd", "ef", "ß"]) for _ in range(30)]  # noqa: E731
    return pd.DataFrame(
        [
            {
                "pair_id": f"a/{i}",
                "article_id": "a",
                "part": "train",
                "statement_tokens": words(),
                "proof_tokens": words(),
            }
            for i in range(n)
        ]
    )


def test_same_data_same_tokenizer_in_separate_processes(tmp_path):
    """Two trainings in two processes write byte-identical tokenizer.json files (the library's
    WordPiece trainer numbers its ## pieces in a per-process hash order: ids and, on ties, pieces
    would differ)."""
    import subprocess
    import sys

    write_parquet(_words_frame(), tmp_path / "data.parquet")
    code = (
        "import sys; from proofmatch.models.tokenizer import train_tokenizer; "
        "train_tokenizer(sys.argv[1], sys.argv[2], vocab_size=500, min_frequency=2)"
    )
    for name in ("a", "b"):
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "data.parquet"), str(tmp_path / name)],
            check=True,
        )
    assert (tmp_path / "a/tokenizer.json").read_bytes() == (
        tmp_path / "b/tokenizer.json"
    ).read_bytes()


def test_pieces_are_wordpiece_pieces(tmp_path):
    """The vocabulary is shaped as the library WordPiece trainer's: the same characters alone and
    ## continuation characters, the same size, the same whole words (merges of tied counts may be
    taken in another order); a word cuts into a first piece plus ## pieces."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from proofmatch.models.tokenizer import SPECIAL_TOKENS, _texts, build_tokenizer

    df = pd.DataFrame(
        [
            {
                "pair_id": "p/0",
                "article_id": "p",
                "part": "train",
                "statement_tokens": ["lemma"] * 9 + ["lemmas"] * 5 + ["$x"] * 7,
                "proof_tokens": ["proof"] * 8 + ["proofs"] * 3 + ["$y"] * 2,
            }
        ]
    )
    ours = build_tokenizer(lambda: _texts(df), vocab_size=200, min_frequency=2)
    ref = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    ref.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    ref.train_from_iterator(
        _texts(df),
        trainers.WordPieceTrainer(
            vocab_size=200, min_frequency=2, special_tokens=SPECIAL_TOKENS, show_progress=False
        ),
    )

    def short(vocab):
        return {p for p in vocab if len(p.removeprefix("##")) == 1}

    assert short(ours.get_vocab()) == short(ref.get_vocab()) and len(ours.get_vocab()) == len(
        ref.get_vocab()
    )
    assert {"lemma", "lemmas", "proof", "proofs", "$x"} <= set(ours.get_vocab()) & set(
        ref.get_vocab()
    )
    assert ours.get_vocab()["[PAD]"] == 0 and "##s" in ours.get_vocab() and "s" in ours.get_vocab()
    assert ours.encode("lemmas proofs $x").tokens == ["[CLS]", "lemmas", "proofs", "$x", "[SEP]"]
    assert ours.encode("proofx").tokens == ["[CLS]", "proof", "##x", "[SEP]"]
