"""The project's demo corpus: a deterministic generator of LaTeXML / arXMLiv XHTML articles.

Why a generator and not a download: the pipeline needs a corpus that every checkout can build in
seconds, that exercises every extraction skip and every pair filter, and that is hard enough for
the models to be worth comparing. The text is produced from small templates written for this
project (``demo_data/<lang>.yaml``); nothing is copied from real papers.

What the output looks like (one article per file, ``out_dir/xhtml/<article_id>.xhtml[.gz]``):

* three markup dialects, as real converters produced them:
  ``latexml`` (LaTeXML 0.8 / ar5iv: ``div.ltx_theorem.ltx_theorem_<kind>`` with a run-in
  ``h6.ltx_title_theorem``, sibling ``div.ltx_proof`` titled "Proof." and ending in ∎, math as
  ``<math alttext=...><semantics>`` presentation + ``annotation-xml`` Content MathML (ids and
  xrefs) + ``annotation application/x-tex``, Unicode math alphabets ℝ 𝐱 𝒜 with
  ``ltx_font_mathcaligraphic``), ``arxmliv`` (2011 arXMLiv as inferred from LaTeXML's source of
  the period: unprefixed classes ``theorem lemma`` / ``proof``, ``m:``-prefixed MathML,
  ``mathvariant`` attributes, no alttext and no TeX annotation, and some formulas in Content
  MathML only) and ``arxmliv_ltx`` (2011 arXMLiv as real articles of that era have it: every
  statement ``div class="theorem ltx_thm"``, its kind only in the title
  ``h6 class="title bold theorem-title"`` "Theorem 2.1.", MathML in a default namespace with
  ``semantics``: presentation + ``annotation-xml`` Content MathML + TeX annotation; about a
  fifth of the articles, :data:`proofmatch.demo.article.ARXMLIV_LTX_SHARE`);
* per-article notation (which letter is the random variable, the group, the domain), shared by
  statements and proofs, so symbol replacement changes something and a model can learn from it;
* proofs that restate their statement only partly, padded with the article's other facts, so a
  TF-IDF baseline lands in the 20-60 MRR range instead of near 100 (see ``tests/test_demo.py``);
* work for every filter: non-English articles (fr, de, ru), omitted and reference-only proofs,
  too short and too long pairs, title-only statements and proofs, theorem-like elements without
  a proof (definitions, remarks, examples, lemmas followed by a comment, a main theorem proved
  later), and a fixed set of hostile files (:data:`proofmatch.demo.hostile.HOSTILE`) for the
  extraction skip counters;
  a few arXMLiv articles use the MathML DTD's named entities (``&nbsp;``, ``&InvisibleTimes;``)
  and one repeats its theorem ids in every section (duplicate statement ids).

Everything is a pure function of ``(n_articles, seed)``: ``random.Random`` seeded with strings,
gzip with ``mtime=0``, no clock, no set iteration. Same arguments, same bytes.

This module writes the corpus and its metadata; the steps before it, in the order they run:
:mod:`~proofmatch.demo.article` (who each article is), :mod:`~proofmatch.demo.content` and
:mod:`~proofmatch.demo.plan` (its text, from the template language of
:mod:`~proofmatch.demo.templates`), :mod:`~proofmatch.demo.markup` (its XHTML, formulas by the
TeX-subset converter :mod:`~proofmatch.texmath.convert`) and :mod:`~proofmatch.demo.hostile`.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import logging
from pathlib import Path

from proofmatch import config
from proofmatch.artifacts import atomic_path, write_text
from proofmatch.demo.article import Spec, article_specs
from proofmatch.demo.hostile import HOSTILE, hostile_files
from proofmatch.demo.markup import render_article
from proofmatch.demo.plan import plan_article
from proofmatch.logs import setup_logging

log = logging.getLogger(__name__)

METADATA_COLUMNS = ("article_id", "file", "title", "primary_category", "categories")


def _write_bytes(data: bytes, path: Path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def generate(
    out_dir: str | Path,
    n_articles: int = config.default("corpus.demo.n_articles"),
    seed: int = config.default("corpus.demo.seed"),
) -> None:
    """Write the demo corpus: ``out_dir/xhtml/<article_id>.xhtml[.gz]`` and ``out_dir/metadata.csv``.

    ``n_articles`` regular articles (one of them, a survey, has no theorem) plus the
    :data:`HOSTILE` files, all listed in the metadata. Stale ``demo-*`` files of an earlier run
    with other arguments are removed, so the folder always holds exactly one corpus.
    """
    if n_articles < 12:
        raise ValueError(
            f"n_articles must be at least 12 (got {n_articles}): fewer cannot cover the categories and dialects"
        )
    out = Path(out_dir)
    xhtml = out / "xhtml"
    xhtml.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, str]] = []
    written: set[str] = set()
    specs = article_specs(n_articles, seed)
    for spec in specs:
        article = plan_article(spec, seed)
        data = render_article(article).encode("utf-8")
        name = f"{spec.article_id}.xhtml" + (".gz" if spec.gz else "")
        _write_bytes(
            gzip.compress(data, compresslevel=6, mtime=0) if spec.gz else data, xhtml / name
        )
        written.add(name)
        rows.append(_metadata_row(spec, name, article.title))
    # Hostile files start from valid articles of their own (seed + 1), independent of n_articles.
    donor_spec = article_specs(1, seed + 1)[0]
    donor = plan_article(
        Spec(**{**donor_spec.__dict__, "article_id": "demo-bad", "gz": False}), seed + 1
    )
    fr_spec = Spec(
        index=0,
        article_id="demo-bad-fr",
        lang="fr",
        primary="math.AP",
        categories=["math.AP"],
        dialect="latexml",
        gz=False,
    )
    donor_fr = plan_article(fr_spec, seed + 1)
    for kind, data in hostile_files(seed, donor, donor_fr).items():
        suffix, _ = HOSTILE[kind]
        spec = donor_fr if kind == "latin1" else donor
        aid = f"demo-bad-{kind}"
        name = aid + suffix
        _write_bytes(data, xhtml / name)
        written.add(name)
        rows.append(_metadata_row(spec.spec, name, spec.title, article_id=aid))
    for stale in sorted(xhtml.glob("demo-*")):
        if stale.name not in written and stale.is_file():
            stale.unlink()
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=METADATA_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(buf.getvalue(), out / "metadata.csv")
    log.info("demo corpus: %d articles + %d hostile files -> %s", len(specs), len(HOSTILE), out)


def _metadata_row(
    spec: Spec, file_name: str, title: str, article_id: str | None = None
) -> dict[str, str]:
    return {
        "article_id": article_id or spec.article_id,
        "file": f"xhtml/{file_name}",
        "title": title,
        "primary_category": spec.primary,
        "categories": " ".join(spec.categories),
    }


# ============================================================================================
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", help="output folder (gets xhtml/ and metadata.csv)")
    config.add_option(
        parser,
        "--articles",
        key="corpus.demo.n_articles",
        type=int,
        help="number of regular articles (at least 12)",
    )
    config.add_option(
        parser, "--seed", key="corpus.demo.seed", type=int, help="seed of the generator"
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    try:
        generate(args.out_dir, n_articles=args.articles, seed=args.seed)
    except ValueError as exc:
        log.error("%s", exc)
        return 2
    return 0
