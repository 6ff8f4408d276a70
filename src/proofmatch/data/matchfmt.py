"""The released MATcH dataset's text format: one file read, its names, its tokens.

The authors of the paper released their dataset (184,094 pairs, already extracted, filtered, split
and symbol-replaced) as three folders, ``mixed/``, ``unmixed/`` and ``pb/``, of UTF-8 text files
written by the reference code's ``export_dataset`` (``train/corpus_utils.py`` L626-636 of
``waylonli/MATcH``) and ``Pair.write`` / ``Statement.write`` (L96-104, L168-170). A file is

* a count line, a blank line, zero or more article lines ``<id>\\t<cat1>|<cat2>...\\t<title>``
  (sorted by id) and a blank line: the count is the number of article lines, or 0 in a split file
  written without metadata, which then starts ``0\\n\\n\\n``;
* one block per pair: the header ``<article id>|<statement id>``, a line of 12 underscores, the
  statement's lines, the 12 underscores again, the proof's lines and one blank line. A statement
  or proof line is ``text\\t<words>`` or ``math\\t<formula tokens>``; a formula token may carry a
  font, ``x____bold`` (4 underscores and MathML's ``mathvariant``).

This module reads such a file line by line (the reference readers split on blank lines, so they drop
a file's first pair when the article block is empty, and keep the whole header as the article id;
here the header is split at its first ``|``, and an older header without ``|`` is an article id
alone) and writes one byte for byte as the reference writer does. Lines map to the project's typed
tokens (:mod:`proofmatch.data.views`): a ``text`` line is tokenised as the project tokenises text,
a ``math`` line's tokens become ``$x`` and ``x____bold`` becomes ``$x~bold``; the writer joins a run
of text tokens into one ``text`` line and a run of math tokens into one ``math`` line (the project's
token lists do not keep where one formula ends and the next begins; docs/deviations.md).

Writing a file and the CSV variant are :mod:`proofmatch.data.matchfmt_write`. Every error names
the file and the line (:class:`MatchFormatError`). File names map to a split, a level and a part
(:func:`file_role`), including the probability-domain names and the misnamed
``full_pb_no_train_no_protected``. Folder-level reading (alignment of the level files, the
project's tables) is :mod:`proofmatch.data.match`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from proofmatch.data.views import FONT_SEP as FONT_SEP_TOKEN
from proofmatch.data.views import MATH_PREFIX, is_math, math_token, split_math, text_tokens

SEP = "_" * 12  # globals.py L25: the line between header, statement and proof
FONT_SEP = "____"  # corpus_utils.py L250: token____mathvariant
TEXT, MATH = "text", "math"
FAMILIES = ("mixed", "unmixed", "pb")
FILE_LEVELS = ("conservation", "partial", "full", "trans")
FILE_PARTS = ("train", "dev", "test")
MATHML_NS = "http://www.w3.org/1998/Math/MathML"


class MatchFormatError(ValueError):
    """A MATcH file that cannot be read as released; the message names the file and the line."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str):
        where = f"{path}, line {line}" if line else str(path)
        super().__init__(f"{where}: {message}")
        self.path, self.line = str(path), line


# ----------------------------------------------------------------------------- file names


@dataclass(frozen=True)
class FileRole:
    """What a released file holds: ``split`` (the project's mixed, unmixed or pr), ``level`` (a
    project level, ``partial_p``/``full_p`` for the protected ones) and ``part``; ``skip`` (a
    reason) for a file that is read by no stage: an unsplit file, or a protected copy of a level
    the project has no protected variant of."""

    split: str
    level: str
    part: str | None
    skip: str | None = None


_SPLIT_NAME = re.compile(
    rf"^(?P<family>mixed|unmixed)_(?P<level>{'|'.join(FILE_LEVELS)})(?:_(?P<part>{'|'.join(FILE_PARTS)}))?$"
)
_PB_NAME = re.compile(
    rf"^(?P<level>{'|'.join(FILE_LEVELS)})_pb(?:_(?P<part>{'|'.join(FILE_PARTS)}|no_train))?_(?P<prot>protected|no_protected)$"
)
# pb levels with a protected variant in the project (experiments.PROTECTED_LEVELS)
_PROTECTED = {"partial": "partial_p", "full": "full_p"}
UNSPLIT = "unsplit file (its split files hold the same pairs)"


def expected_names() -> list[str]:
    """Every released file name a folder may hold, relative to the dataset folder."""
    names = []
    for family in ("mixed", "unmixed"):
        for level in FILE_LEVELS:
            names += [f"{family}/{family}_{level}"]
            names += [f"{family}/{family}_{level}_{part}" for part in FILE_PARTS]
    for level in FILE_LEVELS:
        for prot in ("protected", "no_protected"):
            names += [f"pb/{level}_pb_{prot}"]
            names += [f"pb/{level}_pb_{part}_{prot}" for part in FILE_PARTS]
    names.append("pb/full_pb_no_train_no_protected")
    return names


def file_role(family: str, name: str) -> FileRole | None:
    """The role of file ``name`` in the released folder ``family`` (mixed, unmixed, pb); None
    when the name is not one of the release's (:func:`expected_names`).

    ``pb/{level}_pb_{part}_no_protected`` is the probability-domain split (``pr``) at that level,
    ``..._protected`` its protected level (partial_p, full_p). The authors' tree holds
    ``full_pb_no_train_no_protected`` where ``full_pb_train_no_protected`` belongs (``.gitignore``
    L134 of ``waylonli/MATcH`` at 3052529): it is read as that file."""
    if family in ("mixed", "unmixed"):
        m = _SPLIT_NAME.match(name)
        if not m or m["family"] != family:
            return None
        part = m["part"]
        return FileRole(family, m["level"], part, None if part else UNSPLIT)
    if family == "pb":
        m = _PB_NAME.match(name)
        if not m:
            return None
        level, part, prot = m["level"], m["part"], m["prot"]
        if part == "no_train":
            if (level, prot) != ("full", "no_protected"):
                return None
            part = "train"
        if part is None:
            return FileRole("pr", level, None, UNSPLIT)
        if prot == "no_protected":
            return FileRole("pr", level, part)
        if level in _PROTECTED:
            return FileRole("pr", _PROTECTED[level], part)
        why = (
            "protected copy of conservation (it maps no symbol: the same pairs as no_protected)"
            if level == "conservation"
            else f"protected {level}: the project has no protected variant of this level"
        )
        return FileRole("pr", level, part, why)
    return None


def file_name(split: str, level: str, part: str) -> str:
    """The released name (relative to the dataset folder) of ``split``'s ``part`` at ``level``:
    the inverse of :func:`file_role` (the misnamed pb file written as the authors' tree has it)."""
    if split in ("mixed", "unmixed"):
        return f"{split}/{split}_{level}_{part}"
    if split == "pr":
        inverse = {v: k for k, v in _PROTECTED.items()}
        if level in inverse:
            return f"pb/{inverse[level]}_pb_{part}_protected"
        if (level, part) == ("full", "train"):
            return "pb/full_pb_no_train_no_protected"
        return f"pb/{level}_pb_{part}_no_protected"
    raise ValueError(f"unknown split {split!r}; expected one of mixed, unmixed, pr")


# ----------------------------------------------------------------------------- one file


Segment = tuple[str, str]  # ("text" | "math", content)


@dataclass
class Pair:
    """One pair as read: ``line`` of its header, the header's article and statement ids
    (``statement_id`` None when the header has no ``|`` or names ``None``), its segments."""

    line: int
    header: str
    article_id: str
    statement_id: str | None
    statement: list[Segment]
    proof: list[Segment]


@dataclass
class MatchFile:
    """A file as read: its count line, its articles (``id -> (categories, title)``, in file order;
    empty in a file written without metadata) and its pairs."""

    path: str
    count: int
    articles: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)

    @property
    def with_metadata(self) -> bool:
        return bool(self.articles)


def split_header(header: str) -> tuple[str, str | None]:
    """``arXiv:1201.5657|S2.Thm3`` -> ``("arXiv:1201.5657", "S2.Thm3")``: split at the first
    ``|``; no ``|`` (the older form) or ``None`` (a statement without id) -> no statement id."""
    article, sep, statement = header.partition("|")
    return article, (statement if sep and statement and statement != "None" else None)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(number, line)`` without its line end, the file decoded strictly as a whole (a bad byte
    names its line): one decode and one split, the cost of a bare line scan."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise MatchFormatError(
            path, line, f"not UTF-8: byte 0x{data[exc.start]:02x} at column {column}"
        ) from None
    del data
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final line end
    return enumerate(lines, 1)


def _segment(path: Path, n: int, line: str) -> Segment:
    if line.startswith("text\t"):
        kind, content = TEXT, line[5:]
    elif line.startswith("math\t"):
        kind, content = MATH, line[5:]
    else:
        raise MatchFormatError(
            path, n, f"expected 'text<TAB>...' or 'math<TAB>...', got {line[:40]!r}"
        )
    if not content.strip():
        raise MatchFormatError(path, n, f"empty {kind} line")
    return kind, content


def _read_head(
    path: Path, lines: Iterator[tuple[int, str]]
) -> tuple[int, dict[str, tuple[list[str], str]]]:
    """A file's count line and article block, read from ``lines`` (left at the first pair's
    lines): the count and the articles (``id -> (categories, title)``)."""
    first = next(lines, None)
    if first is None:
        raise MatchFormatError(path, None, "empty file (expected a count line)")
    n, line = first
    if not line.strip().isdigit():
        raise MatchFormatError(path, n, f"expected the count line (an integer), got {line[:40]!r}")
    count = int(line)
    nxt = next(lines, None)
    if nxt is None:
        raise MatchFormatError(path, n, "ends after its count line (truncated?)")
    if nxt[1] != "":
        raise MatchFormatError(path, nxt[0], "expected a blank line after the count line")
    articles: dict[str, tuple[list[str], str]] = {}
    for n, line in lines:
        if line == "":
            break
        fields = line.split("\t", 2)
        if len(fields) != 3:
            raise MatchFormatError(
                path,
                n,
                f"expected an article line '<id><TAB><categories><TAB><title>', got {line[:60]!r}",
            )
        if fields[0] in articles:
            raise MatchFormatError(path, n, f"article {fields[0]!r} listed twice")
        articles[fields[0]] = ([c for c in fields[1].split("|") if c], fields[2])
    else:
        raise MatchFormatError(path, None, "ends inside its article block (truncated?)")
    if articles and count != len(articles):
        raise MatchFormatError(
            path,
            1,
            f"the count line says {count} articles but {len(articles)} article lines follow",
        )
    return count, articles


def iter_pairs(path: str | os.PathLike, head: dict | None = None) -> Iterator[Pair]:
    """The pairs of one released file in order, read line by line; ``head`` (a dict), when
    given, receives ``count`` and ``articles`` once the article block is read.

    Raises :class:`MatchFormatError` (file and line) for: a count line that is not an integer, an
    article line without its three fields, a count that disagrees with the article lines, a header
    whose article is not among them, a pair without its separator or with a third one, a line
    that is neither ``text`` nor ``math``, an empty statement or proof, and a file that ends inside
    its article block or inside a pair (truncated)."""
    path = Path(path)
    lines = _lines(path)
    count, articles = _read_head(path, lines)
    if head is not None:
        head.update(count=count, articles=articles)

    pair: Pair | None = None
    section = 0  # 0: expect a separator after the header; 1: statement; 2: proof
    for n, line in lines:
        if pair is None:
            if line == "":
                continue  # tolerate extra blank lines between pairs
            if line == SEP:
                raise MatchFormatError(path, n, "a separator line where a header was expected")
            article, statement = split_header(line)
            if articles and article not in articles:
                raise MatchFormatError(
                    path, n, f"header {line!r}: article {article!r} is not in the article lines"
                )
            pair, section = Pair(n, line, article, statement, [], []), 0
            continue
        if line == SEP:
            if section == 2:
                raise MatchFormatError(
                    path, n, f"a third separator in the pair whose header is line {pair.line}"
                )
            if section == 1 and not pair.statement:
                raise MatchFormatError(path, n, f"empty statement (pair at line {pair.line})")
            section += 1
            continue
        if section == 0:
            raise MatchFormatError(
                path,
                n,
                f"expected the separator line (12 underscores) after the header at line {pair.line}",
            )
        if line == "":
            if section == 1:
                raise MatchFormatError(
                    path,
                    n,
                    f"blank line inside the statement of the pair at line {pair.line} "
                    "(its proof separator is missing)",
                )
            if not pair.proof:
                raise MatchFormatError(path, n, f"empty proof (pair at line {pair.line})")
            yield pair
            pair = None
            continue
        if line[:5] == "text\t":
            kind = TEXT
        elif line[:5] == "math\t":
            kind = MATH
        else:
            _segment(path, n, line)  # raises, naming the line
        content = line[5:]
        if not content or content.isspace():
            _segment(path, n, line)
        (pair.statement if section == 1 else pair.proof).append((kind, content))
    if pair is not None:
        if section < 2 or not pair.proof:
            raise MatchFormatError(
                path, None, f"ends inside the pair whose header is line {pair.line} (truncated?)"
            )
        yield pair  # a missing final blank line is tolerated


def read_file(path: str | os.PathLike) -> MatchFile:
    """One released file whole (:func:`iter_pairs`)."""
    head: dict = {}
    pairs = list(iter_pairs(path, head))
    return MatchFile(str(path), head["count"], head["articles"], pairs)


# ----------------------------------------------------------------------------- tokens


def math_file_token(token: str) -> str:
    """A formula token of a ``math`` line as the project's typed token: ``x`` -> ``$x``,
    ``x____bold`` -> ``$x~bold`` (split at the last ``____``, as the reference NPT does)."""
    symbol, sep, font = token.rpartition(FONT_SEP)
    if sep and symbol and font:
        return math_token(symbol, font)
    return math_token(token)


# the last ``____`` of a token, with a symbol before it and a font after it
_FONT = re.compile(r"(?<=\S)____(?=(?:(?!____)[^ ])+(?: |$))")


def _math_line(content: str) -> list[str]:
    """A ``math`` line's typed tokens (:func:`math_file_token` of each), by string operations on
    the whole line where its spacing is the writer's (one space between tokens)."""
    if "  " in content or content[0] == " " or content[-1] == " " or "____normal" in content:
        return [math_file_token(t) for t in content.split(" ") if t]
    if FONT_SEP in content:
        content = _FONT.sub(FONT_SEP_TOKEN, content)
    return (MATH_PREFIX + content.replace(" ", " " + MATH_PREFIX)).split(" ")


def segment_tokens(segments: Iterable[Segment]) -> list[str]:
    """The typed token list of a statement's or proof's segments."""
    out: list[str] = []
    for kind, content in segments:
        if kind == TEXT:
            out += text_tokens(content)
        else:
            out += _math_line(content)
    return out


def file_math_token(token: str) -> str:
    """Inverse of :func:`math_file_token`: ``$x~bold`` -> ``x____bold``."""
    symbol, font = split_math(token)
    return f"{symbol}{FONT_SEP}{font}" if font else symbol


def token_segments(tokens: Sequence[str], where: str = "") -> list[Segment]:
    """A typed token list as segments: each run of text tokens one ``text`` line, each run of math
    tokens one ``math`` line. A token that cannot be written so that it reads back the same (it
    holds whitespace, or a math symbol holds ``____``) raises ``ValueError`` naming ``where``."""
    out: list[Segment] = []
    run: list[str] = []
    kind = None
    for tok in tokens:
        tok = str(tok)
        k = MATH if is_math(tok) else TEXT
        if k == MATH:
            written = file_math_token(tok)
            symbol = split_math(tok)[0]
            if FONT_SEP in symbol or not symbol or any(c.isspace() for c in written):
                raise ValueError(
                    f"{where}: math token {tok!r} cannot be written in the MATcH format"
                )
        else:
            written = tok
            if text_tokens(tok) != [tok]:
                raise ValueError(
                    f"{where}: text token {tok!r} cannot be written in the MATcH format"
                )
        if k != kind and run:
            out.append((kind, " ".join(run)))
            run = []
        kind = k
        run.append(written)
    if run:
        out.append((kind, " ".join(run)))
    return out


def fragment_xml(segments: Iterable[Segment], tag: str = "div") -> str:
    """An XHTML fragment whose text nodes are the ``text`` lines and whose ``<math>`` elements hold
    the ``math`` lines' tokens (one ``mi`` each, its font as ``mathvariant``): what the search
    pages show, and what Table 2 counts the text lines' words from."""
    parts = [f"<{tag}>"]
    for kind, content in segments:
        if kind == TEXT:
            parts.append(f"<span>{escape(content)}</span>")
        elif FONT_SEP not in content:
            items = escape(content).replace(" ", "</mi><mi>")
            parts.append(f'<math xmlns="{MATHML_NS}"><mi>{items}</mi></math>')
        else:
            items = []
            for tok in content.split(" "):
                symbol, font = split_math(math_file_token(tok))
                attr = f' mathvariant="{escape(font)}"' if font else ""
                items.append(f"<mi{attr}>{escape(symbol)}</mi>")
            parts.append(f'<math xmlns="{MATHML_NS}">{"".join(items)}</math>')
    parts.append(f"</{tag}>")
    return "".join(parts)
