"""The tables a MATcH read writes besides the replaced splits: ``pairs.parquet``'s rows (each pair
once, with an XHTML fragment of its lines) and the corpus's articles and manifest.

Apart from :mod:`proofmatch.data.match` (which walks the folder and the files) because these are
the XHTML route's tables, filled from what the release holds."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from proofmatch.artifacts import write_parquet
from proofmatch.data.corpus import ARTICLES_SCHEMA, MANIFEST_SCHEMA
from proofmatch.data.extract import PAIRS_SCHEMA as EXTRACT_SCHEMA
from proofmatch.data.match_columns import FileColumns
from proofmatch.data.matchfmt import MatchFormatError

# the extraction's columns, then what linearization and filtering add
PAIRS_COLUMNS = pa.schema(
    [
        *EXTRACT_SCHEMA,
        ("pair_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("statement_title_tokens", pa.int64()),
        ("proof_title_tokens", pa.int64()),
    ]
)


def new_pairs(
    cols: FileColumns,
    start: int,
    ids: list[str],
    articles: list[str],
    rel: str,
    known: dict[str, tuple[int, str, int]],
    position: int,
) -> pa.Table:
    """The rows of ``pairs.parquet`` of a Conservation file's pairs ``start``... (``ids``, of
    ``articles``) not read before (a pair is in the files of several splits: it must be the same
    pair each time). ``known``: each pair read before, its digest, file and line."""
    digests, lines = cols.digests, cols.header_lines
    for k, pid in enumerate(ids, start):
        if pid in known and known[pid][0] != digests[k]:
            _digest, where, line = known[pid]
            raise MatchFormatError(
                rel,
                lines[k],
                f"pair {pid!r} differs from the pair of that id in {where}, line {line}",
            )
    keep = [k for k, pid in enumerate(ids, start) if pid not in known]
    kept_ids = ids if len(keep) == len(ids) else [ids[k - start] for k in keep]
    articles = articles if len(keep) == len(ids) else [articles[k - start] for k in keep]
    known.update(zip(kept_ids, ((digests[k], rel, lines[k]) for k in keep)))
    n = len(keep)
    rows = pa.array(keep, pa.int64())

    def take(column: pa.Array) -> pa.Array:  # every pair new (a first split's): a slice
        return column.slice(start, n) if n == len(ids) else column.take(rows)

    statement_xml, proof_xml = cols.fragments() if n else (pa.array([], pa.string()),) * 2
    return pa.table(
        {
            "article_id": articles,
            "statement_id": [pid.removeprefix(f"{a}/") for pid, a in zip(kept_ids, articles)],
            "kind": [""] * n,
            "position": list(range(position, position + n)),
            "statement_xml": take(statement_xml),
            "proof_xml": take(proof_xml),
            "pair_id": kept_ids,
            "statement_tokens": take(cols.statements),
            "proof_tokens": take(cols.proofs),
            "statement_title_tokens": [0] * n,
            "proof_title_tokens": [0] * n,
        },
        schema=PAIRS_COLUMNS,
    )


def write_articles(
    articles: dict[str, tuple[list[str], str]], article_file: dict[str, str], out: Path
) -> list[str]:
    """``corpus/articles.parquet`` and ``manifest.parquet`` of the articles with pairs; returns
    their ids. Files without article lines: the headers' ids are the articles."""
    articles = articles or {aid: ([], "") for aid in article_file}
    missing = sorted(set(article_file) - set(articles))
    if missing:
        raise MatchFormatError(
            article_file[missing[0]], None, f"article {missing[0]!r} has pairs but no article line"
        )
    used = sorted(article_file)
    write_parquet(
        pa.table(
            {
                "article_id": used,
                "title": [articles[a][1] for a in used],
                "categories": [articles[a][0] for a in used],
                "primary_category": [(articles[a][0] or [None])[0] for a in used],
                "chapter": pa.nulls(len(used), pa.string()),
            },
            schema=ARTICLES_SCHEMA,
        ),
        out / "corpus" / "articles.parquet",
        ARTICLES_SCHEMA,
    )
    manifest_schema = MANIFEST_SCHEMA.with_metadata({"n_shards": "1", "skipped": "[]"})
    write_parquet(
        pa.table(
            {
                "article_id": used,
                "path": [article_file[a] for a in used],
                "bytes": [0] * len(used),
                "shard": [0] * len(used),
            },
            schema=MANIFEST_SCHEMA,
        ),
        out / "corpus" / "manifest.parquet",
        manifest_schema,
    )
    return used
