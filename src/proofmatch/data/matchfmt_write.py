"""The released MATcH format written: one file byte for byte as the reference writer, and the CSV
variant its BERT scripts read (written, and read back to check it).

Apart from :mod:`proofmatch.data.matchfmt` (the format, its names and the reader) because only the
export writes; the import reads alone."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from proofmatch.artifacts import atomic_path
from proofmatch.data.matchfmt import SEP, MatchFormatError, Pair, Segment

# ----------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class OutPair:
    """A pair to write: its header's two ids and its two sides as segments."""

    article_id: str
    statement_id: str | None
    statement: Sequence[Segment]
    proof: Sequence[Segment]


def _one_line(value: str) -> str:
    return " ".join(str(value).split())


def format_file(
    pairs: Iterable[OutPair],
    articles: dict[str, tuple[Sequence[str], str]] | None,
) -> Iterator[str]:
    """The text of one file, as the reference writer emits it (``export_dataset``, L626-636:
    ``"{count}\\n\\n"``, the sorted article lines, ``"\\n"``, each ``Pair.write``). ``articles``
    None writes no article block and a count of 0, as the reference's split files without
    metadata (``len(newmetadata)`` of an empty dict); else the articles of the pairs written,
    their count first."""
    pairs = list(pairs)
    if articles is None:
        yield "0\n\n\n"
    else:
        ids = {p.article_id for p in pairs}
        missing = sorted(ids - set(articles))
        if missing:
            raise ValueError(f"article {missing[0]!r} has a pair but no metadata")
        yield f"{len(ids)}\n\n"
        for aid in sorted(ids):
            cats, title = articles[aid]
            yield f"{aid}\t{'|'.join(cats)}\t{_one_line(title)}\n"
        yield "\n"
    for p in pairs:
        lines = [f"{p.article_id}|{p.statement_id}\n", f"{SEP}\n"]
        lines += [f"{k}\t{c}\n" for k, c in p.statement]
        lines.append(f"{SEP}\n")
        lines += [f"{k}\t{c}\n" for k, c in p.proof]
        lines.append("\n")
        yield "".join(lines)


def write_file(
    path: str | os.PathLike,
    pairs: Iterable[OutPair],
    articles: dict[str, tuple[Sequence[str], str]] | None,
) -> None:
    """Write one file atomically (UTF-8, LF, no BOM): :func:`format_file`."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            for chunk in format_file(pairs, articles):
                f.write(chunk)


# ----------------------------------------------------------------------------- CSV variant


CSV_COLUMNS = ("theory", "proof", "meta")


def csv_text(pairs: Iterable[Pair | OutPair], only: str | None = None) -> str:
    """The CSV the reference's ``convert_to_csv.py`` makes of a file's pairs (pandas 1.x
    ``to_csv``): header ``,theory,proof,meta``, every index 0, each side's segment contents joined
    by one space (``only``: ``text`` or ``math`` keeps one type and puts ``""`` for the others,
    as ``--text_only``/``--math_only``), ``meta`` the header; minimal quoting, LF."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["", *CSV_COLUMNS])

    def side(segments: Sequence[Segment]) -> str:
        return " ".join(c if only is None or k == only else "" for k, c in segments)

    for p in pairs:
        header = p.header if isinstance(p, Pair) else f"{p.article_id}|{p.statement_id}"
        writer.writerow(["0", side(p.statement), side(p.proof), header.strip()])
    return buf.getvalue()


def read_csv(path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of a CSV made by ``convert_to_csv.py`` (``theory``, ``proof``, ``meta``; the
    text/math typing is not in it); an error names the file and the row's line."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatchFormatError(path, None, f"not UTF-8 at byte {exc.start}") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None or [h for h in header[1:]] != list(CSV_COLUMNS):
        raise MatchFormatError(path, 1, f"expected the header ',theory,proof,meta', got {header!r}")
    rows = []
    for row in reader:
        if len(row) != 4:
            raise MatchFormatError(path, reader.line_num, f"expected 4 fields, got {len(row)}")
        rows.append(dict(zip(CSV_COLUMNS, row[1:])))
    return rows
