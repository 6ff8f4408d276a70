"""Encoders and codecs: NPT pooling ignores padding, vocabularies, [CLS] pooling, saved Matchers."""

from __future__ import annotations

import pytest
import torch
from toydata import tiny_bert_checkpoint

from proofmatch.models.encoders import (
    BertEncoder,
    NPTConfig,
    NPTEncoder,
    WordPieceCodec,
    WordVocab,
    pad_batch,
    plain_math,
    sinusoidal_table,
)
from proofmatch.models.matcher import Matcher, MatcherConfig, load_matcher

pytestmark = pytest.mark.usefixtures("one_thread")


def _npt(vocab_size: int = 30, positions: bool = True) -> NPTEncoder:
    torch.manual_seed(0)
    return NPTEncoder(
        NPTConfig(
            vocab_size=vocab_size,
            d_model=16,
            n_layers=2,
            n_heads=4,
            d_k=8,
            max_length=40,
            positions=positions,
        )
    ).eval()


def test_npt_pooling_ignores_padding_content_and_width():
    enc = _npt()
    short = [2, 5, 6, 7]
    long_ = [2, 8, 9, 10, 11, 12, 13, 14, 15]
    alone = enc(*pad_batch([short], 0))[0]
    ids, mask = pad_batch([short, long_], 0)
    batched = enc(ids, mask)[0]
    ids[0, len(short) :] = torch.tensor([20, 21, 22, 23, 24])  # junk where the mask is off
    junk = enc(ids, mask)[0]
    torch.testing.assert_close(batched, alone)
    torch.testing.assert_close(junk, alone)
    # ... while a real token does change the vector
    other = enc(*pad_batch([short + [20]], 0))[0]
    assert not torch.allclose(other, alone)


def test_npt_without_positions_encodes_a_bag_of_tokens():
    """Attention is permutation-equivariant and max-pooling invariant, so without the position
    table an NPT vector depends on which tokens a text holds, not on their order."""
    text, shuffled = [[2, 5, 6, 7, 8, 9]], [[2, 9, 7, 5, 8, 6]]
    bag, ordered = _npt(positions=False), _npt(positions=True)
    torch.testing.assert_close(bag(*pad_batch(shuffled, 0)), bag(*pad_batch(text, 0)))
    assert not torch.allclose(ordered(*pad_batch(shuffled, 0)), ordered(*pad_batch(text, 0)))
    assert not torch.allclose(bag(*pad_batch([[2, 5, 6, 7, 8, 10]], 0)), bag(*pad_batch(text, 0)))


def test_npt_shape_and_length_guard():
    enc = _npt()
    out = enc(*pad_batch([[2, 3], [2, 4, 5]], 0))
    assert out.shape == (2, 16) and torch.isfinite(out).all()
    with pytest.raises(ValueError, match="max_length"):
        enc(torch.ones(1, 41, dtype=torch.long), torch.ones(1, 41, dtype=torch.bool))


def test_sinusoidal_table():
    t = sinusoidal_table(10, 6)
    assert t.shape == (10, 6)
    torch.testing.assert_close(t[0], torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0]))


def test_word_vocab_min_count_order_and_roundtrip(tmp_path):
    seqs = [["$a", "is", "$a"], ["is", "b", "$A"], ["is"]]
    v = WordVocab.build(seqs, min_count=2)
    assert v.itos == ["[PAD]", "[UNK]", "[CLS]", "is", "$a"]  # b and $A seen once: dropped
    ids, mask = v.encode([["$a", "zzz"], []], max_length=8)
    assert ids.tolist() == [[2, 4, 1], [2, 0, 0]] and mask.tolist() == [
        [True] * 3,
        [True, False, False],
    ]
    assert v.ids([["is"] * 20], max_length=5) == [[2, 3, 3, 3, 3]]
    v.save(tmp_path)
    assert WordVocab.load(tmp_path).itos == v.itos


def test_plain_math_strips_the_type_prefix_only():
    assert plain_math(["Let", "$x~bold", "$", "$+"]) == ["Let", "x~bold", "$", "+"]


@pytest.fixture(scope="module")
def tiny_bert_dir(tmp_path_factory):
    """A random tiny BertForMaskedLM + WordPiece tokenizer saved like a ScratchBERT checkpoint."""
    texts = ["Let $a be a set", "Proof . Since $a is $A~bold , a set"] * 5
    d = tmp_path_factory.mktemp("bert")
    return tiny_bert_checkpoint(d, texts, vocab_size=80, layers=1, masked_lm=True)


def test_bert_encoder_cls_pooling_from_mlm_checkpoint(tiny_bert_dir):
    from transformers import BertModel

    enc = BertEncoder.from_checkpoint(tiny_bert_dir).eval()
    codec = WordPieceCodec.load(tiny_bert_dir)
    ids, mask = codec.encode([["Let", "$a"], ["Proof", ".", "Since", "$a", "is", "a", "set"]], 32)
    assert ids[0, 0] == codec.tokenizer.cls_token_id
    out = enc(ids, mask)
    ref = BertModel.from_pretrained(str(tiny_bert_dir), add_pooling_layer=False)(
        input_ids=ids, attention_mask=mask.long()
    ).last_hidden_state[:, 0]
    torch.testing.assert_close(out, ref)
    alone = enc(*codec.encode([["Let", "$a"]], 32))[0]
    torch.testing.assert_close(out[0], alone, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kind", ["npt", "bert"])
def test_matcher_save_and_load_roundtrip(kind, tiny_bert_dir, tmp_path):
    seqs_s = [["Let", "$a", "be", "a", "set"], ["$A~bold"]]
    seqs_p = [["Proof", ".", "$a", "is"], ["Since", "a", "set"]]
    torch.manual_seed(1)
    if kind == "npt":
        vocab = WordVocab.build(seqs_s + seqs_p, min_count=1)
        npt = NPTConfig(
            vocab_size=len(vocab),
            d_model=16,
            n_layers=1,
            n_heads=2,
            d_k=8,
            max_length=20,
            positions=False,
        )
        m = Matcher(
            MatcherConfig("npt", "bilinear", "both", 20, npt=npt.to_dict()), NPTEncoder(npt), vocab
        )
    else:
        enc = BertEncoder.from_checkpoint(tiny_bert_dir)
        cfg = MatcherConfig("specter", "distance", "math", 32, bert=enc.config_dict())
        m = Matcher(cfg, enc, WordPieceCodec.load(tiny_bert_dir))
    m.save_pretrained(tmp_path / "run" / "model")
    loaded = load_matcher(tmp_path / "run", device="cpu")
    assert loaded.config == m.config
    for a, b in zip(m.factors(seqs_s, seqs_p), loaded.factors(seqs_s, seqs_p)):
        assert a.dtype == b.dtype and (a == b).all()


def test_bert_mean_pooling_ignores_padding():
    """Mean pooling averages real tokens only: extra padding leaves the vector unchanged."""
    torch.manual_seed(0)
    cfg = dict(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    enc = BertEncoder.from_config(cfg, pooling="mean").eval()
    ids = torch.tensor([[2, 7, 8, 9, 3, 0, 0], [2, 7, 8, 9, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0, 0]])
    short = enc(ids[:, :5], mask[:, :5])
    long_ = enc(ids, mask)
    assert torch.allclose(short, long_, atol=1e-5)
    # BertEncoder trusts its pooling: the schema's, or a saved config.json's, checked there
    with pytest.raises(ValueError, match="unknown pooling 'max'; expected one of cls, mean"):
        MatcherConfig("scratchbert", "bilinear", "both", 16, pooling="max")


@pytest.mark.parametrize("w_init", ["identity", "bilinear", "zeros"])
def test_bilinear_starts(w_init):
    """The three starts of W: zeros gives equal scores (the first in-batch loss is exactly
    log B); bilinear is nn.Bilinear's U(±1/√d) with zero mean; identity adds I to it."""
    import math

    from proofmatch.models.losses import local_loss
    from proofmatch.models.matcher import bilinear_start

    torch.manual_seed(0)
    d = 64
    W, b = (t.detach() for t in bilinear_start(d, w_init))
    bound = 1 / math.sqrt(d)
    off = W.detach() - (torch.eye(d) if w_init == "identity" else 0)
    if w_init == "zeros":
        assert not W.any() and float(b) == 0.0
        S, P = (
            torch.rand(8, d) + 2.0,
            torch.rand(8, d) + 2.0,
        )  # pooled vectors share a positive part
        scores = (S @ W) @ P.T + b
        assert torch.isclose(local_loss(scores), torch.tensor(math.log(8.0)))
    else:
        assert off.abs().max() <= bound and abs(float(off.mean())) < 0.01 and abs(float(b)) <= bound
        assert off.std() > bound / 3  # noise, not a constant
    config = MatcherConfig("npt", "bilinear", "both", 16, npt=None, w_init=w_init)
    assert config.w_init == w_init
    # bilinear_start trusts its w_init (the schema's, or a saved config.json's, checked here)
    with pytest.raises(ValueError, match="unknown w_init 'ones'; expected one of identity"):
        MatcherConfig("npt", "bilinear", "both", 16, w_init="ones")
