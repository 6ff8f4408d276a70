"""WordPiece tokenizer: case kept, math and text distinct, train part only, loads with transformers."""

from __future__ import annotations

import pandas as pd
import pytest

from proofmatch.artifacts import write_parquet
from proofmatch.models.tokenizer import train_tokenizer


def _frame() -> pd.DataFrame:
    train_st = ["Let", "$A", "be", "a", "set", "and", "$a", "in", "$A", "."]
    train_pf = ["Since", "$a", "in", "$A", ",", "a", "set", "A", "is", "$x~bold", "."]
    rows = [{"pair_id": f"t/{i}", "article_id": "t", "part": "train",
             "statement_tokens": train_st, "proof_tokens": train_pf} for i in range(6)]
    # a frequent word seen only outside train must not enter the vocabulary
    rows += [{"pair_id": f"d/{i}", "article_id": "d", "part": part,
              "statement_tokens": ["zebra"] * 20, "proof_tokens": ["zebra"] * 20}
             for i, part in enumerate(["dev", "test", "dev"])]
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
    for tok in (PreTrainedTokenizerFast.from_pretrained(str(tok_dir)), AutoTokenizer.from_pretrained(str(tok_dir))):
        enc = tok("Let $A be a set")
        assert tok.convert_ids_to_tokens(enc["input_ids"]) == ["[CLS]", "Let", "$A", "be", "a", "set", "[SEP]"]
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
