"""Every paragraph of every article as typed tokens: ScratchBERT's MLM text under
``pretrain.text: corpus`` (:mod:`proofmatch.models.pretrain`).

The articles are those of the dataset: every manifest article with at least one pair in the
filtered pairs (``results/data/pairs.parquet``), whatever part its pairs went to, so the text of
dev and test articles is in it too (docs/deviations.md, "Pretraining text"). Each article is read
as extraction reads it (:func:`proofmatch.data.extract.parse_article_bytes`: bounded read, text
checks, HTML entities, hardened parser) and each paragraph is linearized by the one linearizer
of statements and proofs (:func:`proofmatch.data.linearize.linearize_element`), so a paragraph
of a statement gives here exactly the tokens it gives in the statement.

A paragraph (:func:`paragraphs`) is an outermost element whose ``class`` has the token
``ltx_para`` (LaTeXML) or ``para`` (2011 arXMLiv), with its running text and display equations,
or an XHTML ``p`` outside any such element (an abstract's). Paragraphs inside statements and
proofs are paragraphs like any other; titles (section headings, "Lemma 3.2.", "Proof."), the
document title and the bibliography are not paragraphs. A paragraph without tokens is left out.
A file that does not read is a counted skip (the log says which and why), as in extraction.
The workflow reads one manifest shard per job (``shard``) and concatenates the shards
(:func:`merge_article_text`).

The table (:data:`ARTICLE_TEXT_SCHEMA`) has one row per paragraph: ``article_id``,
``paragraph`` (its index among the article's kept paragraphs, in document order) and ``tokens``.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from lxml import etree
from tqdm import tqdm

from proofmatch import config
from proofmatch.artifacts import read_parquet, read_table, write_parquet
from proofmatch.data import corpus
from proofmatch.data.extract import parse_article_bytes
from proofmatch.data.linearize import linearize_element
from proofmatch.data.mathml_names import local_name
from proofmatch.data.statements import _MATH_TAGS, _inline_entities
from proofmatch.data.xmlsafe import SkipFile, is_html_path, read_bounded
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

#: Class tokens of a paragraph division (LaTeXML ``div.ltx_para``, 2011 arXMLiv ``div.para``).
PARAGRAPH_CLASSES = frozenset({"ltx_para", "para"})
ARTICLE_TEXT_SCHEMA = pa.schema(
    [
        ("article_id", pa.string()),
        ("paragraph", pa.int64()),
        ("tokens", pa.list_(pa.string())),
    ]
)


def is_paragraph(element: etree._Element) -> bool:
    """A paragraph division (:data:`PARAGRAPH_CLASSES`) or an XHTML ``p``."""
    if not isinstance(element.tag, str):
        return False
    return local_name(element) == "p" or not PARAGRAPH_CLASSES.isdisjoint(
        (element.get("class") or "").split()
    )


def paragraphs(root: etree._Element) -> Iterator[etree._Element]:
    """The article's outermost paragraphs in document order (formulas are not searched)."""
    walker = etree.iterwalk(root, events=("start",))
    for _event, element in walker:
        if element.tag in _MATH_TAGS:
            walker.skip_subtree()
        elif is_paragraph(element):
            yield element
            walker.skip_subtree()


def paragraph_tokens(root: etree._Element) -> list[list[str]]:
    """The tokens of each paragraph of a parsed article that has any."""
    out = []
    for element in paragraphs(root):
        tokens, _ = linearize_element(element)
        if tokens:
            out.append(tokens)
    return out


def article_paragraphs(
    path: str | os.PathLike,
    *,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
) -> list[list[str]]:
    """The paragraph tokens of one article file; may raise :class:`SkipFile`."""
    data = read_bounded(path, int(max_file_mb * 2**20))
    root, _parser, _replaced, unknown = parse_article_bytes(
        data, max_depth=max_depth, allow_html=is_html_path(path)
    )
    if unknown:  # entity references left as nodes: their text, as the pairs keep it
        _inline_entities(root)
    return paragraph_tokens(root)


def text_table(
    items: Sequence[tuple[str, str]],
    *,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
) -> tuple[pa.Table, Counter]:
    """(paragraph table, skips by reason) of (article_id, path) items, in order."""
    ids: list[str] = []
    index: list[int] = []
    tokens: list[list[str]] = []
    skipped: Counter = Counter()
    for article_id, path in tqdm(items, desc="article text", unit="file", mininterval=5):
        try:
            paras = article_paragraphs(path, max_file_mb=max_file_mb, max_depth=max_depth)
        except SkipFile as skip:
            log.warning("skipped %s (%s): %s", path, skip.reason, skip.detail)
            skipped[skip.reason] += 1
            continue
        ids += [article_id] * len(paras)
        index += range(len(paras))
        tokens += paras
    table = pa.table(
        {
            "article_id": pa.array(ids, pa.string()),
            "paragraph": pa.array(index, pa.int64()),
            "tokens": pa.array(tokens, pa.list_(pa.string())),
        },
        schema=ARTICLE_TEXT_SCHEMA,
    )
    return table, skipped


def article_text(
    manifest_path: str | os.PathLike,
    pairs_path: str | os.PathLike,
    out_parquet: str | os.PathLike,
    max_file_mb: float = config.default("extract.max_file_mb"),
    max_depth: int = config.default("extract.max_depth"),
    shard: int | None = None,
) -> dict[str, Any]:
    """Write the paragraphs of every manifest article (of manifest shard ``shard``; None: all
    shards) that has a pair in ``pairs_path``."""
    manifest, n_shards = corpus.read_manifest(manifest_path)
    if shard is not None:
        if not 0 <= shard < n_shards:
            raise corpus.CorpusError(
                f"shard {shard} out of range: manifest {manifest_path} has {n_shards} shards"
            )
        manifest = manifest[manifest["shard"] == shard]
    kept = set(read_parquet(pairs_path, columns=["article_id"])["article_id"])
    part = manifest[manifest["article_id"].isin(kept)].sort_values("article_id")
    items = list(zip(part["article_id"], part["path"]))
    table, skipped = text_table(items, max_file_mb=max_file_mb, max_depth=max_depth)
    write_parquet(table, out_parquet, ARTICLE_TEXT_SCHEMA)
    summary = {
        "articles": len(items),
        "articles_skipped": sum(skipped.values()),
        "paragraphs": table.num_rows,
        "tokens": _tokens(table),
        "manifest_articles": len(manifest),
    }
    log.info(
        "article text%s: %d of %d manifest articles (those with pairs), %d skipped, %d paragraphs, %d tokens",
        "" if shard is None else f" shard {shard}",
        summary["articles"],
        summary["manifest_articles"],
        summary["articles_skipped"],
        summary["paragraphs"],
        summary["tokens"],
    )
    return summary


def _tokens(table: pa.Table) -> int:
    return int(pc.sum(pc.list_value_length(table["tokens"])).as_py() or 0)


def merge_article_text(shards: Sequence[str | os.PathLike], out_parquet: str | os.PathLike) -> None:
    """Concatenate shard tables (their articles are disjoint) into one, sorted by article."""
    tables = [
        read_table(path).select(ARTICLE_TEXT_SCHEMA.names).cast(ARTICLE_TEXT_SCHEMA)
        for path in shards
    ]
    table = pa.concat_tables(tables) if tables else ARTICLE_TEXT_SCHEMA.empty_table()
    table = table.sort_by([("article_id", "ascending"), ("paragraph", "ascending")])
    write_parquet(table, out_parquet, ARTICLE_TEXT_SCHEMA)
    log.info(
        "article text: %d shards, %d articles, %d paragraphs, %d tokens -> %s",
        len(tables),
        len(pc.unique(table["article_id"])),
        table.num_rows,
        _tokens(table),
        out_parquet,
    )


def read_article_text(path: str | os.PathLike) -> pd.DataFrame:
    """The paragraph table, checked for its columns."""
    df = read_parquet(path)
    missing = [c for c in ARTICLE_TEXT_SCHEMA.names if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: not an article text table (lacks {missing})")
    return df


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifest", required=True, help="manifest.parquet from `proofmatch manifest`"
    )
    parser.add_argument(
        "--shard", type=int, default=None, help="only this manifest shard (default: every article)"
    )
    parser.add_argument(
        "--pairs", required=True, help="filtered pairs (results/data/pairs.parquet): their articles"
    )
    parser.add_argument(
        "--out", required=True, help="output Parquet (results/data/article_text.parquet)"
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    article_text(args.manifest, args.pairs, args.out, shard=args.shard)
    return 0
