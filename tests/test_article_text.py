"""The article text of ``pretrain.text: corpus`` (proofmatch.data.article_text): every paragraph
of an article, linearized as its statements and proofs are, not only the statements and proofs."""

from __future__ import annotations

import pandas as pd
import pytest

from proofmatch.data import article_text as at
from proofmatch.data import corpus
from proofmatch.data.extract import extract_bytes
from proofmatch.data.linearize import linearize_pair
from proofmatch.demo.article import article_specs
from proofmatch.demo.markup import render_article
from proofmatch.demo.plan import plan_article
from proofmatch.models.mlm import paragraph_texts

SEED = 13


def _demo_articles(n: int = 12):
    """(article_id, xhtml bytes, dialect) of the first ``n`` regular demo articles."""
    for spec in article_specs(n, SEED):
        yield (
            spec.article_id,
            render_article(plan_article(spec, SEED)).encode("utf-8"),
            spec.dialect,
        )


def _concatenations(paras: list[list[str]]) -> set[tuple[str, ...]]:
    """Every run of consecutive paragraphs, joined."""
    out = set()
    for i in range(len(paras)):
        joined: list[str] = []
        for p in paras[i:]:
            joined += p
            out.add(tuple(joined))
    return out


@pytest.mark.parametrize("dialect", ["latexml", "arxmliv", "arxmliv_ltx"])
def test_corpus_text_holds_every_paragraph_of_a_demo_article(tmp_path, dialect):
    article_id, data, _ = next((a, d, k) for a, d, k in _demo_articles() if k == dialect)
    path = tmp_path / f"{article_id}.xhtml"
    path.write_bytes(data)
    paras = at.article_paragraphs(path)
    pairs = [linearize_pair(p) for p in extract_bytes(data, article_id).pairs]
    assert pairs and all(p["linearize_error"] == "" for p in pairs)
    # a statement (proof) without its title is a run of consecutive paragraphs, tokens unchanged:
    # the one linearizer read both
    runs = _concatenations(paras)
    for p in pairs:
        for side in ("statement", "proof"):
            body = tuple(p[f"{side}_tokens"][p[f"{side}_title_tokens"] :])
            assert not body or body in runs, (p["pair_id"], side)  # () : a title-only statement
    # and the article has more: paragraphs outside every statement and proof (introduction,
    # commentary, the abstract)
    paired = sum(
        len(p["statement_tokens"])
        - p["statement_title_tokens"]
        + len(p["proof_tokens"])
        - p["proof_title_tokens"]
        for p in pairs
    )
    assert sum(map(len, paras)) > paired
    in_pairs = {
        tuple(t)
        for p in pairs
        for side in ("statement", "proof")
        for t in [p[f"{side}_tokens"][p[f"{side}_title_tokens"] :]]
    }
    outside = [q for q in paras if not any(tuple(q) == t or _contains(t, q) for t in in_pairs)]
    assert outside, "no paragraph outside the statements and proofs"
    # math is read as in the pairs: typed $ tokens
    assert any(tok.startswith("$") for q in paras for tok in q)


def _contains(seq: tuple[str, ...], part: list[str]) -> bool:
    n = len(part)
    return any(list(seq[i : i + n]) == part for i in range(len(seq) - n + 1))


def test_article_text_table_keeps_the_articles_with_pairs(tmp_path):
    root = tmp_path / "xhtml"
    root.mkdir()
    ids = []
    for article_id, data, _ in _demo_articles():
        (root / f"{article_id}.xhtml").write_bytes(data)
        ids.append(article_id)
    (root / "broken.xhtml").write_bytes(b"<html><p>unclosed")
    manifest, articles = tmp_path / "manifest.parquet", tmp_path / "articles.parquet"
    corpus.write_manifest(root, 2, None, manifest, articles)
    listed, _ = corpus.read_manifest(manifest)
    kept = [a for a in listed["article_id"] if a != "broken"][:3]
    pairs = tmp_path / "pairs.parquet"
    pd.DataFrame({"article_id": [kept[0], kept[0], kept[1], kept[2], "broken"]}).to_parquet(pairs)
    out = tmp_path / "article_text.parquet"
    summary = at.article_text(manifest, pairs, out)
    table = at.read_article_text(out)
    assert list(table.columns) == ["article_id", "paragraph", "tokens"]
    assert set(table["article_id"]) == set(
        kept
    )  # only articles with pairs; the broken file is a skip
    assert summary["articles"] == 4 and summary["articles_skipped"] == 1
    assert summary["paragraphs"] == len(table) and summary["tokens"] == sum(
        map(len, table["tokens"])
    )
    for _, group in table.groupby("article_id"):
        assert group["paragraph"].tolist() == list(range(len(group)))
    # one job per manifest shard, then one table: the same rows
    parts = [tmp_path / f"shard-{k}.parquet" for k in range(2)]
    counts = [
        at.article_text(manifest, pairs, part, shard=k)["paragraphs"]
        for k, part in enumerate(parts)
    ]
    at.merge_article_text(parts, tmp_path / "merged.parquet")
    merged = at.read_article_text(tmp_path / "merged.parquet")
    assert sum(counts) == len(merged) and merged.equals(
        table.sort_values(["article_id", "paragraph"]).reset_index(drop=True)
    )
    with pytest.raises(corpus.CorpusError, match="out of range"):
        at.article_text(manifest, pairs, tmp_path / "x.parquet", shard=2)
    texts, text_ids = paragraph_texts(table)
    assert len(texts) == len(table) and text_ids[0] == f"{table['article_id'].iloc[0]}/0"


# ---------------------------------------------------------------- the text ScratchBERT's MLM reads

PRETRAIN = dict(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_length=32,
    mlm_probability=0.2,
    epochs=1,
    batch_size=8,
    learning_rate=2e-3,
    eval_every_steps=5,
    warmup_fraction=0.1,
)


@pytest.mark.usefixtures("one_thread")
def test_pretraining_reads_the_article_text_under_corpus(tmp_path):
    import torch
    from toydata import toy_pairs

    from proofmatch.artifacts import write_parquet
    from proofmatch.models import pretrain as pt
    from proofmatch.models.mlm import packed_chunks
    from proofmatch.models.params import PretrainParams, typed_params
    from proofmatch.models.tokenizer import train_tokenizer

    pairs = toy_pairs(n_articles=12, pairs_per_article=5, seed=4)
    write_parquet(pairs, tmp_path / "data.parquet")
    train_tokenizer(tmp_path / "data.parquet", tmp_path / "tok", vocab_size=150, min_frequency=2)
    # every article's statements and proofs (dev and test too) and one more paragraph each
    rows = []
    for aid, group in pairs.groupby("article_id"):
        paras = [
            t
            for s, p in zip(group["statement_tokens"], group["proof_tokens"])
            for t in (s[2:], p[2:])
        ]
        paras.append(["Let", "w1", "be", "the", "$a", "of", "w2", "."])
        rows += [{"article_id": aid, "paragraph": i, "tokens": t} for i, t in enumerate(paras)]
    table = pd.DataFrame(rows)
    write_parquet(table, tmp_path / "text.parquet", at.ARTICLE_TEXT_SCHEMA)

    p = typed_params(PretrainParams, PRETRAIN)
    rt = pt.runtime.Runtime(torch.device("cpu"))
    by_pairs = pt.build_pretraining(
        tmp_path / "data.parquet", tmp_path / "tok", tmp_path / "a", rt, p, seed=1
    )
    by_text = pt.build_pretraining(
        tmp_path / "data.parquet",
        tmp_path / "tok",
        tmp_path / "b",
        rt,
        p,
        seed=1,
        text_parquet=tmp_path / "text.parquet",
    )
    texts, _ = paragraph_texts(table)
    assert by_text.train_chunks == packed_chunks(by_text.tokenizer, texts, p.max_length)
    assert len(by_text.train_chunks) > len(by_pairs.train_chunks)  # all articles, extra paragraphs
    assert by_text.dev_chunks == by_pairs.dev_chunks  # the dev part validates either way
    assert by_text.fingerprint["text"] == "corpus" and "text" not in by_pairs.fingerprint
    assert by_text.fingerprint["train_ids"] != by_pairs.fingerprint["train_ids"]

    with pytest.raises(ValueError, match="article text"):
        pt.pretrain(
            tmp_path / "data.parquet",
            tmp_path / "tok",
            tmp_path / "c",
            dict(PRETRAIN, text="corpus"),
            seed=1,
        )
    pt.pretrain(
        tmp_path / "data.parquet",
        tmp_path / "tok",
        tmp_path / "d",
        dict(PRETRAIN, text="corpus"),
        seed=1,
        text_parquet=tmp_path / "text.parquet",
    )
    metrics = pd.read_json(tmp_path / "d" / pt.METRICS_FILE, typ="series")
    assert metrics["train_chunks"] == len(by_text.train_chunks)
