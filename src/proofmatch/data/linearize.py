"""Linearize statement and proof fragments into one typed token list each.

A fragment is the serialized theorem or proof element written by :mod:`proofmatch.data.extract`. It is
read in document order: running text becomes :func:`proofmatch.data.views.text_tokens`, each
``<math>`` becomes :func:`proofmatch.data.mathml.math_tokens` (typed ``$`` tokens) where it stands.
Titles such as "Lemma 3.2." and "Proof." are kept, as in the reference data (the paper's LIME
figures show them); the number of tokens that come from the fragment's own title (a direct child
with class ``ltx_title`` or ``title``, LaTeXML's ``h6``) is recorded so that the filter stage can
recognise a statement that is nothing but its title.

Dropped: ``annotation``/``annotation-xml`` (TeX and content MathML restate a formula),
``script`` and ``style`` (not text), comments, and SVG drawings, of which only a ``<math>``
inside a ``foreignObject`` (a labelled diagram) is read.

A fragment that does not parse is a counted skip, not a failed job: its tokens are empty and the
row's ``linearize_error`` says why, so the filter stage can drop it with that reason. Fragments
serialized from an article that needed the HTML parser may use a namespace prefix they do not
declare (``<m:math>``); only that error is tolerated (re-parse in recovery mode, the prefix stays
part of the tag name, which :func:`proofmatch.data.mathml_names.local_name` strips).
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd
import pyarrow as pa
from lxml import etree
from tqdm import tqdm

from proofmatch.artifacts import read_parquet, write_parquet
from proofmatch.data.mathml import math_tokens, tokens_of_presentation
from proofmatch.data.mathml_names import local_name
from proofmatch.data.statements import TITLE_CLASSES
from proofmatch.data.views import text_tokens
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

DROPPED = frozenset({"annotation", "annotation-xml", "script", "style"})
INPUT_COLUMNS = ("article_id", "statement_id", "statement_xml", "proof_xml")
NEW_COLUMNS: dict[str, pa.DataType] = {
    "pair_id": pa.string(),
    "statement_tokens": pa.list_(pa.string()),
    "proof_tokens": pa.list_(pa.string()),
    "statement_title_tokens": pa.int64(),
    "proof_title_tokens": pa.int64(),
    "linearize_error": pa.string(),  # "" when both fragments parsed
}


class FragmentError(ValueError):
    """A statement or proof fragment that cannot be read (empty, or not well-formed XML)."""


def _parser(recover: bool = False) -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        recover=recover,
    )


def parse_fragment(xml: Any) -> etree._Element:
    """Parse one serialized fragment; raise :class:`FragmentError` with the parser's message."""
    if not isinstance(xml, str) or not xml.strip():
        raise FragmentError("empty or missing fragment")
    data = xml.encode("utf-8")
    parser = _parser()
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        errors = list(parser.error_log)
        message = str(exc)
    if errors and all(e.domain_name == "NAMESPACE" for e in errors):
        root = etree.fromstring(data, _parser(recover=True))
        if root is not None:
            return root
    raise FragmentError(f"not well-formed XML: {message}")


def is_title(el: etree._Element) -> bool:
    return local_name(el) == "title" or not TITLE_CLASSES.isdisjoint(
        (el.get("class") or "").split()
    )


def _svg_maths(svg: etree._Element) -> Iterator[etree._Element]:
    """``<math>`` elements inside the ``foreignObject``s of an SVG drawing, in document order."""
    for el in svg.iter():
        if local_name(el) != "math":
            continue
        ancestors = [local_name(a).lower() for a in el.iterancestors()]
        if "foreignobject" in ancestors and "math" not in ancestors:
            yield el


def _events(el: etree._Element) -> Iterator[tuple[str, Any]]:
    """("text", str) and ("math", element) items of a subtree in reading order (tails excluded)."""
    name = local_name(el)
    if name == "math":
        yield "math", el
        return
    if not name or name in DROPPED:
        return
    if name.lower() == "svg":
        for m in _svg_maths(el):
            yield "math", m
        return
    if el.text:
        yield "text", el.text
    for child in el:
        yield from _events(child)
        if child.tail:
            yield "text", child.tail


def iter_maths(root: etree._Element) -> Iterator[etree._Element]:
    """The ``<math>`` elements that linearization reads, in document order."""
    for kind, value in _events(root):
        if kind == "math":
            yield value


def linearize_element(root: etree._Element, presented: bool = False) -> tuple[list[str], int]:
    """(tokens, number of tokens from the root's own title children) of a parsed fragment.

    ``presented=True`` says that every math is already a :func:`proofmatch.data.mathml.presentation`
    copy (symbol replacement swaps them in), which spares a second copy per formula.
    """
    tokens: list[str] = []
    of_math = tokens_of_presentation if presented else math_tokens

    def consume(events: Iterator[tuple[str, Any]]) -> None:
        for kind, value in events:
            tokens.extend(text_tokens(value) if kind == "text" else of_math(value))

    name = local_name(root)
    if name == "math" or name.lower() == "svg" or name in DROPPED:
        consume(_events(root))
        return tokens, 0
    n_title = 0
    if root.text:
        tokens.extend(text_tokens(root.text))
    for child in root:
        before = len(tokens)
        consume(_events(child))
        if is_title(child):
            n_title += len(tokens) - before
        if child.tail:
            tokens.extend(text_tokens(child.tail))
    return tokens, n_title


def fragment_tokens(xml: Any) -> tuple[list[str], int]:
    """(tokens, title token count) of one serialized fragment; may raise :class:`FragmentError`."""
    return linearize_element(parse_fragment(xml))


def linearize_fragment(xml: str) -> list[str]:
    """Typed tokens of one serialized statement or proof fragment."""
    return fragment_tokens(xml)[0]


def linearize_pair(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row plus pair_id, statement/proof tokens, their title token counts and linearize_error."""
    out = dict(row)
    out["pair_id"] = f"{row['article_id']}/{row['statement_id']}"
    errors = []
    for side in ("statement", "proof"):
        try:
            tokens, n_title = fragment_tokens(row[f"{side}_xml"])
        except FragmentError as exc:
            tokens, n_title = [], 0
            errors.append(f"{side}: {exc}")
        out[f"{side}_tokens"] = tokens
        out[f"{side}_title_tokens"] = n_title
    out["linearize_error"] = "; ".join(errors)
    return out


def linearize_frame(df: pd.DataFrame) -> pd.DataFrame:
    """All input columns plus :data:`NEW_COLUMNS` (input columns of the same name are replaced)."""
    missing = [c for c in INPUT_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(
            f"extracted pairs lack column(s) {missing}; expected at least {list(INPUT_COLUMNS)}"
        )
    new: dict[str, list[Any]] = {c: [] for c in NEW_COLUMNS}
    records = df[list(INPUT_COLUMNS)].to_dict("records")
    for rec in tqdm(records, desc="linearize", unit="pair", mininterval=5):
        res = linearize_pair(rec)
        for c in NEW_COLUMNS:
            new[c].append(res[c])
    out = df.drop(columns=[c for c in NEW_COLUMNS if c in df.columns]).reset_index(drop=True)
    for c in NEW_COLUMNS:
        out[c] = pd.Series(new[c], dtype=object)
    return out


def linearize_shard(in_parquet: str | os.PathLike, out_parquet: str | os.PathLike) -> None:
    """Linearize one extracted shard; write it atomically with typed token columns."""
    df = read_parquet(in_parquet)
    out = linearize_frame(df)
    failed = out["linearize_error"] != ""
    log.info(
        "%s: %d pairs linearized, %d with a fragment that does not parse",
        in_parquet,
        len(out),
        int(failed.sum()),
    )
    for pid, err in out.loc[failed, ["pair_id", "linearize_error"]].head(5).itertuples(index=False):
        log.info("  %s: %s", pid, err)
    input_schema = pa.Schema.from_pandas(
        df.drop(columns=[c for c in NEW_COLUMNS if c in df.columns]), preserve_index=False
    )
    schema = pa.schema([*input_schema, *(pa.field(n, t) for n, t in NEW_COLUMNS.items())])
    table = pa.Table.from_pandas(out, schema=schema, preserve_index=False)
    write_parquet(table, out_parquet)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "in_parquet", help="extracted pairs of one shard (results/extract/shard-N.parquet)"
    )
    parser.add_argument(
        "--out", required=True, help="output Parquet (results/linearize/shard-N.parquet)"
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    linearize_shard(args.in_parquet, args.out)
    return 0
