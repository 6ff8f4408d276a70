"""Build the XHTML+MathML corpus from LaTeX sources with LaTeXML (``corpus.source: latex``).

Beyond the paper: MREC was converted from arXiv in 2011 with LaTeXML and is not updated; this
stage turns a folder of LaTeX sources into the same kind of corpus, so today's arXiv, a textbook or
one's own articles go through the unchanged pipeline. Each article is converted as the Stacks
chapters of ``config/stacks.yaml`` were (:mod:`proofmatch.data.stacks`): XHTML with parallel presentation + content MathML and
the TeX annotation, as arXiv's LaTeXML-based HTML, no figure ever converted (the command, and how
the main file is chosen: :mod:`proofmatch.data.latexml`).

The stage's steps: the inventory of the source folder (ids, content hashes, shards:
:mod:`proofmatch.data.latex_inventory`); per shard, each article unpacked into a scratch folder
(:mod:`proofmatch.data.archives`, which also says how untrusted archives are handled), its main
file found and LaTeXML run (:mod:`proofmatch.data.latexml`), the result cached (this module); then
the converted articles assembled into a corpus (this module).

**Failures** never fail the run: each bad article is counted by reason (:data:`REASONS`) in the
conversion report, with LaTeXML's log kept per article.

**Cache**: each article's folder ``ROOT/articles/<key>/`` keeps its converted ``<key>.xhtml.gz``,
``latexml.log`` and ``status.json`` (content hash of the source, LaTeXML version and options).
A rerun reuses an article whose hash and options are unchanged (a success, a fatal LaTeXML error,
or a timeout under a limit at least as large as now) and converts only new or changed articles.

Layout under ``ROOT`` (``results/latex/<corpus>``): ``inventory.parquet``, ``shards/shard-NNN.json``,
``articles/<key>/``, ``work/`` (scratch, emptied per article), then ``xhtml/`` (the corpus the
extractor reads), ``metadata.csv`` and ``report.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from proofmatch import config
from proofmatch.artifacts import atomic_dir, atomic_path, read_json, write_csv, write_json
from proofmatch.data.archives import REASONS, ArticleError, Limits, source_stem, unpack
from proofmatch.data.corpus import read_metadata
from proofmatch.data.latex_inventory import read_inventory, write_inventory
from proofmatch.data.latexml import find_main_file, latexmlc_path, options_fingerprint, run_latexml
from proofmatch.logs import setup_logging
from proofmatch.render import write_table as write_result_table

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


def _gzip_into(src: Path, dest: Path) -> None:
    """Deterministic gzip (no name, mtime 0), written atomically."""
    with atomic_path(dest, ".gz") as tmp, open(src, "rb") as fin, open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fout:
            shutil.copyfileobj(fin, fout, _CHUNK)


# --------------------------------------------------------------------------------------------
# one article, one shard


def _reusable(
    prev: Mapping[str, Any] | None, sha256: str, fingerprint: str, limits: Limits, root: Path
) -> bool:
    if not prev or prev.get("sha256") != sha256 or prev.get("options") != fingerprint:
        return False
    if prev.get("status") == "converted":
        return (root / prev.get("xhtml", "")).is_file()
    if prev.get("reason") == "latexml_fatal":
        return True
    return prev.get("reason") == "timeout" and float(prev.get("timeout_s", 0)) >= limits.timeout_s


def convert_article(
    row: Mapping[str, Any], root: str | os.PathLike, limits: Limits, exe: str, fingerprint: str
) -> dict[str, Any]:
    """Convert one inventory row (or reuse its cached result); never raises for a bad article."""
    root = Path(root)
    key = row["key"]
    art_dir = root / "articles" / key
    status_path = art_dir / "status.json"
    prev = None
    if status_path.is_file():
        try:
            prev = read_json(status_path)
        except (OSError, ValueError):
            prev = None
    if _reusable(prev, row["sha256"], fingerprint, limits, root):
        return {**prev, "cached": True}
    shutil.rmtree(art_dir, ignore_errors=True)
    art_dir.mkdir(parents=True)
    work = root / "work" / key
    shutil.rmtree(work, ignore_errors=True)
    stem = source_stem(Path(row["path"]).name)
    result: dict[str, Any] = {
        "article_id": row["article_id"],
        "key": key,
        "status": "failed",
        "reason": None,
        "detail": None,
        "main_file": None,
        "candidates": 0,
        "log": None,
    }
    t0 = time.perf_counter()
    try:
        unpack(row["path"], row["kind"], work / "src", limits, stem)
        main, n = find_main_file(work / "src")
        result.update(main_file=main.relative_to(work / "src").as_posix(), candidates=n)
        log_path = art_dir / "latexml.log"
        result["log"] = log_path.relative_to(root).as_posix()
        out = work / "out" / f"{main.stem}.xhtml"
        result.update(run_latexml(exe, main, out, log_path, limits.timeout_s))
        xhtml = art_dir / f"{key}.xhtml.gz"
        _gzip_into(out, xhtml)
        result.update(status="converted", xhtml=xhtml.relative_to(root).as_posix())
    except ArticleError as exc:
        result.update(reason=exc.reason, detail=exc.detail)
    except Exception as exc:  # a bug must not stop the other articles; counted and logged
        log.exception("article %s: internal error", row["article_id"])
        result.update(reason="internal_error", detail=f"{type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result.update(
        seconds=round(time.perf_counter() - t0, 3),
        sha256=row["sha256"],
        options=fingerprint,
        timeout_s=limits.timeout_s,
        cached=False,
    )
    write_json(result, status_path)
    level = logging.INFO if result["status"] == "converted" else logging.WARNING
    log.log(
        level,
        "%s: %s%s (%.1f s)",
        row["article_id"],
        result["status"],
        f" [{result['reason']}: {result['detail']}]" if result["reason"] else "",
        result["seconds"],
    )
    return result


def convert_shard(
    inventory_parquet: str | os.PathLike,
    shard: int,
    root: str | os.PathLike,
    out_json: str | os.PathLike,
    limits: Limits | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Convert the articles of one shard (one at a time) and write the shard's results JSON."""
    limits = limits if isinstance(limits, Limits) else Limits.from_config(limits)
    exe = latexmlc_path()
    fingerprint = options_fingerprint(exe)
    inv, n_shards = read_inventory(inventory_parquet)
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} out of range: {inventory_parquet} has {n_shards} shards")
    rows = inv[(inv["shard"] == shard) & inv["skip"].isna()].to_dict("records")
    results = [
        convert_article(row, root, limits, exe, fingerprint)
        for row in tqdm(
            rows, desc=f"LaTeXML shard {shard}/{n_shards}", unit="article", mininterval=10
        )
    ]
    try:
        (Path(root) / "work").rmdir()  # each article's scratch folder is already gone
    except OSError:
        pass  # absent, or another shard's job is still working in it
    out = {
        "shard": shard,
        "latexml": json.loads(fingerprint)["latexml"],
        "articles": results,
        "counts": _counts(results),
    }
    write_json(out, out_json)
    log.info("shard %d: %s", shard, out["counts"])
    return out


def _counts(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    counts = {"articles": 0, "converted": 0, "cached": 0, **{r: 0 for r in REASONS}}
    for r in results:
        counts["articles"] += 1
        counts["cached"] += bool(r.get("cached"))
        if r["status"] == "converted":
            counts["converted"] += 1
        else:
            counts[r["reason"]] += 1
    return counts


# --------------------------------------------------------------------------------------------
# the converted corpus


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)


def assemble_corpus(
    inventory_parquet: str | os.PathLike,
    shard_jsons: Sequence[str | os.PathLike],
    root: str | os.PathLike,
    metadata_path: str | os.PathLike | None,
    out_xhtml_dir: str | os.PathLike,
    out_metadata: str | os.PathLike,
    out_report: str | os.PathLike,
) -> dict[str, Any]:
    """The converted articles as a corpus folder + metadata table (the extractor's input) and the
    conversion report (counts by reason, one entry per article)."""
    root, out_dir = Path(root), Path(out_xhtml_dir)
    per_article = _article_results(inventory_parquet, shard_jsons)
    converted = [r for r in per_article if r["status"] == "converted"]
    with atomic_dir(out_dir) as staging:
        for r in converted:
            _link_or_copy(root / r["xhtml"], staging / f"{r['key']}.xhtml.gz")
    write_csv(_corpus_metadata(converted, metadata_path, out_dir.name), out_metadata)
    counts = _counts(per_article)
    report = {
        "counts": counts,
        "reasons": REASONS,
        "with_latexml_errors": sum(bool(r.get("errors")) for r in converted),
        "converted_now": sum(
            r["status"] == "converted" and not r.get("cached") for r in per_article
        ),
        "latexml_seconds": round(
            sum(float(r.get("seconds", 0)) for r in per_article if not r.get("cached")), 1
        ),
        "articles": per_article,
    }
    write_json(report, out_report)
    failed = {k: v for k, v in counts.items() if k in REASONS and v}
    log.info(
        "converted %d of %d articles (%d reused from the cache); failures: %s",
        counts["converted"],
        counts["articles"],
        counts["cached"],
        failed or "none",
    )
    return report


def _article_results(
    inventory_parquet: str | os.PathLike, shard_jsons: Sequence[str | os.PathLike]
) -> list[dict[str, Any]]:
    """One result per inventory article, in inventory order: its shard's, or a failure with the
    inventory's skip reason; an article in no given shard file is an error (a shard is missing)."""
    inv, n_shards = read_inventory(inventory_parquet)
    results: dict[str, dict[str, Any]] = {}
    for path in shard_jsons:
        for r in read_json(path)["articles"]:
            results[r["article_id"]] = r
    per_article = []
    for row in inv.to_dict("records"):
        if isinstance(row["skip"], str):
            per_article.append(
                {
                    "article_id": row["article_id"],
                    "key": row["key"],
                    "status": "failed",
                    "reason": row["skip"],
                    "detail": row["detail"],
                    "cached": False,
                }
            )
        elif row["article_id"] in results:
            per_article.append(results[row["article_id"]])
        else:
            raise ValueError(
                f"article {row['article_id']!r} of {inventory_parquet} is in no shard result "
                f"({len(shard_jsons)} of {n_shards} shard files given)"
            )
    return per_article


def _corpus_metadata(
    converted: Sequence[dict[str, Any]], metadata_path: str | os.PathLike | None, folder: str
) -> pd.DataFrame:
    """The corpus's metadata table: one row per converted article, its file in ``folder`` and,
    where ``metadata_path`` has the article, its title and categories."""
    meta = read_metadata(metadata_path).set_index("article_id") if metadata_path else None
    rows = []
    for r in converted:
        m = (
            meta.loc[r["article_id"]]
            if meta is not None and r["article_id"] in meta.index
            else None
        )
        rows.append(
            {
                "article_id": r["article_id"],
                "file": f"{folder}/{r['key']}.xhtml.gz",
                "title": m["title"] if m is not None else None,
                "categories": " ".join(m["categories"]) if m is not None else "",
                "primary_category": m["primary_category"] if m is not None else "",
            }
        )
    return pd.DataFrame(
        rows, columns=["article_id", "file", "title", "categories", "primary_category"]
    )


CONVERSION_COLUMNS = {
    "articles": "Articles",
    "converted": "Converted",
    "cached": "Reused (cache)",
    **{r: r.replace("_", " ").capitalize().replace("Latexml", "LaTeXML") for r in REASONS},
}

# The conversion table's caption: its .md and .tex files and the HTML report (rule params ``caption``).
CONVERSION_CAPTION = (
    "LaTeX sources converted to XHTML+MathML with LaTeXML: articles converted and failures by "
    "reason (" + "; ".join(f"{CONVERSION_COLUMNS[k]}: {v}" for k, v in REASONS.items()) + ")."
)


def conversion_table(
    reports: Mapping[str, str | os.PathLike | Mapping[str, Any]], out_prefix: str | os.PathLike
) -> pd.DataFrame:
    """One row per LaTeX corpus: articles, converted, reused, failures by reason (md, tex, csv)."""
    rows = []
    for name, rep in reports.items():
        data = dict(rep) if isinstance(rep, Mapping) else read_json(rep)
        counts = data["counts"]
        rows.append(
            [
                name,
                *(int(counts.get(k, 0)) for k in CONVERSION_COLUMNS),
                int(data.get("with_latexml_errors", 0)),
            ]
        )
    df = pd.DataFrame(
        rows, columns=["Corpus", *CONVERSION_COLUMNS.values(), "Converted with LaTeXML errors"]
    )
    out = str(out_prefix)
    write_result_table(
        df,
        f"{out}.md",
        f"{out}.tex",
        f"{out}.csv",
        caption=CONVERSION_CAPTION,
        label=Path(out).name,
    )
    return df


def convert_corpus(
    src_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    metadata: str | os.PathLike | None = None,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """The whole stage in one process (the CLI): inventory, one shard, corpus + report in ``out_dir``."""
    out = Path(out_dir)
    write_inventory(src_dir, 1, metadata, out / "inventory.parquet")
    convert_shard(
        out / "inventory.parquet", 0, out, out / "shards" / "shard-000.json", limits or Limits()
    )
    return assemble_corpus(
        out / "inventory.parquet",
        [out / "shards" / "shard-000.json"],
        out,
        metadata,
        out / "xhtml",
        out / "metadata.csv",
        out / "report.json",
    )


# --------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "src_dir", help="folder of article sources: sub-folders, .tar.gz, .tar, .gz or .tex"
    )
    parser.add_argument(
        "--out", required=True, help="output folder (xhtml/, metadata.csv, report.json, cache)"
    )
    parser.add_argument(
        "--metadata", default=None, help="CSV/TSV/Parquet: article_id, title, categories[, file]"
    )
    config.add_option(
        parser,
        "--timeout-s",
        key="corpus.latex.timeout_s",
        type=float,
        help="per-article time limit",
    )
    config.add_option(
        parser,
        "--max-archive-mb",
        key="corpus.latex.max_archive_mb",
        type=float,
        help="most unpacked megabytes of one article",
    )
    config.add_option(
        parser,
        "--max-files",
        key="corpus.latex.max_files",
        type=int,
        help="most files in one article",
    )
    parser.add_argument("--log", default=None, help="also log to this file")


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    report = convert_corpus(
        args.src_dir,
        args.out,
        args.metadata,
        Limits(args.timeout_s, args.max_archive_mb, args.max_files),
    )
    print(json.dumps(report["counts"], indent=2))
    return 0
