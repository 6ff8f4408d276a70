"""One released MATcH file read into columns: its pairs' headers, their statement and proof tokens
as Arrow list arrays and, on request, a digest of each pair's tokens and its XHTML fragments.

The same result as :func:`proofmatch.data.matchfmt.iter_pairs` followed by
:func:`~proofmatch.data.matchfmt.segment_tokens` and :func:`~proofmatch.data.matchfmt.fragment_xml`
for every pair, at a fraction of the cost: the file is split into lines once, inside Arrow, the
pair structure (header, separators, statement and proof lines) is checked with array operations
over the lines' kinds, the statement and proof lines are put in order (all statements' lines, then
all proofs') and cut into tokens by :mod:`~proofmatch.data.match_tokens`, a few numpy passes over
their bytes, where their characters let it give exactly the Python tokenisers' result (printable
ASCII ``text`` lines; ``math`` lines of ``symbol`` and ``symbol____font`` tokens). Every other line
(non-ASCII text, a formula token with underscores of its own, odd spacing) is tokenised by the
Python functions, line by line. Each pair's statement and proof is a range of the one token array.
A level file whose statement lines are, line for line, those of its split's Conservation file
(``base``) takes that file's statement tokens instead of cutting them again. A file the array checks do not accept (any format error, a token with an ASCII
whitespace character in it, a file over 2 GiB) is read by
:func:`~proofmatch.data.matchfmt.iter_pairs` instead, which raises the error naming the file and
the line, or reads the file if it is valid after all.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from proofmatch.data.match_tokens import FAST_MATH, buffers, fast_text, tokens
from proofmatch.data.matchfmt import (
    MATH,
    MATHML_NS,
    SEP,
    MatchFormatError,
    Pair,
    fragment_xml,
    iter_pairs,
    segment_tokens,
    split_header,
)

TOKENS = pa.list_(pa.string())
_FAST_MATH = FAST_MATH.replace("^math\\t", "^")  # a math line's content of that form
_BLANK, _SEP, _TEXT, _MATH, _OTHER = range(5)
_MAX_BYTES = 2**31 - 1  # an Arrow string array's offsets
# what a file may lack, looked for in its bytes once: the work for it is then skipped
_MARKS = {"tilde": b"~", "&": b"&", "<": b"<", ">": b">"}  # what only the fragments need
# a file's fragments are made here while its tokens are cut (Arrow's kernels run outside the GIL):
# the file read with them is the first and largest, read while little else can run
_FRAGMENTS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="match-fragments")


@dataclass
class Statements:
    """A file's statements: their tokens and what a file that may repeat them compares (each
    statement's bounds among the statement lines, and those lines)."""

    tokens: pa.Array
    bounds: np.ndarray
    lines: pa.Array


@dataclass
class FileColumns:
    """A file's count line, article lines, pair headers (and each header's line number), the
    statements' and proofs' tokens (``list<string>``, one row per pair) and, when asked for, a
    digest of each pair's tokens (equal digests: equal statement and proof tokens).
    :attr:`pairs` are the headers as :class:`~proofmatch.data.matchfmt.Pair` (without segments),
    :meth:`fragments` the pairs' XHTML fragments."""

    path: str
    count: int
    articles: dict[str, tuple[list[str], str]]
    headers: list[str]
    header_lines: list[int]
    statements: pa.Array
    proofs: pa.Array
    digests: list[int] | None = None
    _headers: pa.Array | None = None  # :attr:`headers` as Arrow strings
    _lines: tuple | None = None  # what :meth:`fragments` is made from
    _xml: tuple[pa.Array, pa.Array] | Future | None = None
    _statement_lines: tuple[np.ndarray, pa.Array] | None = None  # what a base is made of

    def base(self) -> Statements | None:
        """The statements as :func:`read_columns`'s ``base`` (kept apart from this file's other
        columns); None unless read with ``digests`` by the array checks."""
        if self._statement_lines is None:
            return None
        bounds, lines = self._statement_lines
        return Statements(pa.concat_arrays([self.statements]), bounds, lines)

    @property
    def pairs(self) -> list[Pair]:
        return [
            Pair(n, h, *split_header(h), [], []) for n, h in zip(self.header_lines, self.headers)
        ]

    def article_ids(self) -> list[str]:
        """Each header's article id (:func:`~proofmatch.data.matchfmt.split_header`'s first)."""
        return pc.list_element(self._split_headers(), 0).to_pylist()

    def plain_ids(self) -> list[str] | None:
        """Each pair's ``{article}/{statement}`` when every header has a statement id (as
        :func:`~proofmatch.data.matchfmt.split_header` reads it); else None."""
        parts = self._split_headers()
        if not pc.all(pc.equal(pc.list_value_length(parts), 2)).as_py():
            return None
        article, statement = pc.list_element(parts, 0), pc.list_element(parts, 1)
        if pc.any(pc.is_in(statement, pa.array(["", "None"]))).as_py():
            return None
        return pc.binary_join_element_wise(article, statement, "/").to_pylist()

    def _split_headers(self) -> pa.Array:
        if self._headers is None:
            self._headers = pa.array(self.headers, pa.string())
        return pc.split_pattern(self._headers, "|", max_splits=1)

    def fragments(self) -> tuple[pa.Array, pa.Array]:
        """Each pair's statement and proof as :func:`~proofmatch.data.matchfmt.fragment_xml`
        writes them (made on the first call, or in their own thread while the tokens were cut when
        :func:`read_columns` was asked for them)."""
        if self._xml is None:
            self._xml = _fragments(*self._lines)
            self._lines = None
        elif isinstance(self._xml, Future):
            self._xml = self._xml.result()
        return self._xml


def read_columns(
    path: str | os.PathLike,
    digests: bool = False,
    fragments: bool = False,
    base: Statements | None = None,
) -> FileColumns:
    """One released file as :class:`FileColumns` (``digests``: with the pairs' digests, and what
    :meth:`FileColumns.fragments` needs kept; ``fragments``: with the fragments made). ``base``:
    the statements of a file read before (:meth:`FileColumns.base`) that this file's may repeat,
    line for line (the level files of a split): they are then ``base``'s, not tokenised again. Raises
    :class:`~proofmatch.data.matchfmt.MatchFormatError` as ``iter_pairs`` does."""
    path = Path(path)
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    marks = {"font": b"____" in data}
    marks["normal"] = marks["font"] and b"____normal" in data
    if digests:
        marks.update((name, mark in data) for name, mark in _MARKS.items())
    head = _head(data) if len(data) <= _MAX_BYTES else None
    lines = _lines_array(memoryview(data)[head[2] :]) if head else None
    del data
    layout = _layout(lines, head[1]) if lines is not None else None
    if layout is None:
        return _from_pairs(path, digests)
    starts, seg, kinds, n_st, n_pr = layout
    header_array = lines.take(pa.array(starts))
    headers = header_array.to_pylist()
    final, bounds = _final_order(kinds, n_st, n_pr)
    order, in_order = np.empty_like(seg), np.empty_like(kinds)
    order[final], in_order[final] = seg, kinds
    ordered = lines.take(pa.array(order))
    n = len(starts)
    # what the fragments are made of (kept with the digests), and made of meanwhile when asked for
    shapes = (lines, seg, kinds, final, bounds, marks, n) if digests else None
    del lines
    xml = _FRAGMENTS.submit(_fragments, *shapes) if shapes and fragments else None
    bounds = bounds.to_numpy()
    split = int(bounds[n])  # the statements' lines, then the proofs'
    key = (bounds[: n + 1], ordered.slice(0, split))
    same = base is not None and np.array_equal(key[0], base.bounds)
    same = same and key[1].equals(base.lines)
    first = split if same else 0
    at = np.maximum(bounds - first, 0)
    line_tokens = _line_tokens(ordered.slice(first), in_order[first:], marks, at)
    if line_tokens is None:
        if xml is not None:
            wait([xml])  # discarded: the Python reader's own fragments replace these
        return _from_pairs(path, digests)
    values, token_bounds = line_tokens
    token_bounds = pa.array(token_bounds)
    statements = (
        base.tokens if same else pa.ListArray.from_arrays(token_bounds.slice(0, n + 1), values)
    )
    proofs = pa.ListArray.from_arrays(token_bounds.slice(n), values)
    out = FileColumns(
        str(path), head[0], head[1], headers, (starts + head[3]).tolist(), statements, proofs
    )
    out._headers = header_array
    if digests:
        out.digests = _digests(statements, proofs)
        out._statement_lines = (key[0], pa.concat_arrays([key[1]]))
        out._xml, out._lines = (xml, None) if xml is not None else (None, shapes)
    return out


def _head(data: bytes) -> tuple[int, dict, int, int] | None:
    """The count line and article block of a valid file: ``(count, articles, the byte offset of
    the line after the block, that line's number)``; None when they are not as released or the
    file is not UTF-8 (:func:`iter_pairs` then names the error)."""
    whole = pa.StringArray.from_buffers(
        1, pa.py_buffer(np.array([0, len(data)], dtype=np.int32)), pa.py_buffer(data)
    )
    try:
        whole.validate(full=True)  # UTF-8, as strict as Python's decoder
    except pa.ArrowInvalid:
        return None
    first = data.find(b"\n")
    if first < 0 or data[first + 1 : first + 2] != b"\n":
        return None
    count = data[:first].decode("utf-8")
    if not count.strip().isdigit():
        return None
    start = first + 2
    end = start - 1 if data[start : start + 1] == b"\n" else data.find(b"\n\n", start)
    if end < 0:
        return None
    articles = _articles(data[start:end])
    if articles is None or (articles and int(count) != len(articles)):
        return None
    return int(count), articles, end + 2, 4 + len(articles)


@lru_cache(maxsize=8)
def _articles(block: bytes) -> dict[str, tuple[list[str], str]] | None:
    """The articles of an article block (its lines, without the blank line after them); None
    when a line is not an article line or an id repeats. Cached: the level files of a split
    have the same block."""
    articles: dict[str, tuple[list[str], str]] = {}
    if not block:
        return articles
    for line in block.decode("utf-8").split("\n"):
        fields = line.split("\t", 2)
        if len(fields) != 3 or fields[0] in articles:
            return None
        articles[fields[0]] = ([c for c in fields[1].split("|") if c], fields[2])
    return articles


def _lines_array(region: bytes | memoryview) -> pa.Array:
    """The lines of ``region`` (valid UTF-8) as a string array, split inside Arrow."""
    offsets = pa.py_buffer(np.array([0, len(region)], dtype=np.int32))
    whole = pa.StringArray.from_buffers(1, offsets, pa.py_buffer(region))
    return pc.split_pattern(whole, "\n").flatten()


def _flags(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False)


def _kinds(lines: pa.Array) -> np.ndarray:
    """Each line's kind: blank, separator, ``text``, ``math`` or other (a header)."""
    kind = np.full(len(lines), _OTHER, dtype=np.int8)
    kind[_flags(pc.starts_with(lines, "text\t"))] = _TEXT
    kind[_flags(pc.starts_with(lines, "math\t"))] = _MATH
    kind[_flags(pc.equal(lines, SEP))] = _SEP
    offsets = np.frombuffer(lines.buffers()[1], np.int32, len(lines) + 1, lines.offset * 4)
    kind[np.diff(offsets) == 0] = _BLANK
    return kind


def _layout(
    lines: pa.Array, articles: dict
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The pairs of the lines after the article block: each pair's header line, the statement and
    proof lines and their kinds (in file order) and each pair's number of statement and proof
    lines; None unless every pair is a header (of an article among ``articles``, when there are),
    a separator, statement lines, a separator and proof lines (blank lines between pairs, any
    number, and none at the end)."""
    kind = _kinds(lines)
    filled = kind != _BLANK
    before = np.concatenate([[False], filled[:-1]])
    after = np.concatenate([filled[1:], [False]])
    starts, ends = np.flatnonzero(filled & ~before), np.flatnonzero(filled & ~after)
    seps = np.flatnonzero(kind == _SEP)
    n = len(starts)
    if n == 0 or len(seps) != 2 * n or (kind[starts] == _SEP).any():
        return None
    second = seps[1::2]
    if not (
        (seps[0::2] == starts + 1).all() and (second >= starts + 3).all() and (second < ends).all()
    ):
        return None
    segment = filled & (kind != _SEP)
    segment[starts] = False
    seg = np.flatnonzero(segment)
    kinds = kind[seg]
    if ((kinds != _TEXT) & (kinds != _MATH)).any():
        return None
    if articles:
        heads = lines.take(pa.array(starts))
        ids = pc.list_element(pc.split_pattern(heads, "|", max_splits=1), 0)
        if not pc.all(pc.is_in(ids, pa.array(list(articles), pa.string()))).as_py():
            return None
    return starts, seg, kinds, second - starts - 2, ends - second


def _contents(lines: pa.Array, rows: np.ndarray) -> pa.Array:
    """The lines ``rows`` without their first 5 bytes (``text<TAB>`` or ``math<TAB>``)."""
    mask = np.zeros(len(lines), dtype=bool)
    mask[rows] = True
    chosen = lines.filter(pa.array(mask))
    return pc.utf8_slice_codeunits(chosen, 5)


def _line_tokens(
    lines: pa.Array, kinds: np.ndarray, marks: dict[str, bool], at: np.ndarray
) -> tuple[pa.Array, np.ndarray] | None:
    """The tokens of statement and proof ``lines`` (of ``kinds``, each with its prefix): the
    token array and the offsets into it of the lines ``at``. The lines
    :mod:`~proofmatch.data.match_tokens` cuts are cut there, the others tokenised by Python, line by
    line. None when a line is empty or blank (a format error) or a token holds an ASCII
    whitespace character (which the Python reader's split at whitespace would cut)."""
    is_math = kinds == _MATH
    fast = _flags(pc.match_substring_regex(lines, FAST_MATH))  # text lines fail at once
    fast[~is_math] = fast_text(lines.filter(pa.array(~is_math)))
    if fast.all():
        return tokens(lines, is_math, marks, at)
    values, offsets = tokens(lines.filter(pa.array(fast)), is_math[fast], marks)
    slow = []
    for line in lines.filter(pa.array(~fast)).to_pylist():
        kind, content = line[:4], line[5:]
        if not content or content.isspace():
            return None
        found = segment_tokens([(kind, content)])
        if any(c in token for token in found for c in "\t\v\f\r"):
            return None
        slow.append(found)
    merged = _in_order(
        [pa.ListArray.from_arrays(pa.array(offsets), values), pa.array(slow, TOKENS)],
        [np.flatnonzero(fast), np.flatnonzero(~fast)],
    )
    return merged.values, merged.offsets.to_numpy()[at]


def _final_order(
    kinds: np.ndarray, n_st: np.ndarray, n_pr: np.ndarray
) -> tuple[np.ndarray, pa.Array]:
    """Where each statement or proof line (in file order) goes: every statement's lines first,
    in file order, then every proof's; and the line bounds of each statement, then of each
    proof, in that order (``2 n + 1`` offsets)."""
    n = len(n_st)
    first = np.concatenate([[0], np.cumsum(n_st + n_pr)])[:-1]
    in_statement = np.zeros(len(kinds) + 1, dtype=np.int64)
    np.add.at(in_statement, first, 1)
    np.add.at(in_statement, first + n_st, -1)
    in_statement = np.cumsum(in_statement[:-1]).astype(bool)
    final = np.empty(len(kinds), dtype=np.int64)
    n_st_lines = int(in_statement.sum())
    final[in_statement] = np.arange(n_st_lines)
    final[~in_statement] = n_st_lines + np.arange(len(kinds) - n_st_lines)
    bounds = np.concatenate([[0], np.cumsum(n_st), n_st_lines + np.cumsum(n_pr)]).astype(np.int32)
    assert len(bounds) == 2 * n + 1
    return final, pa.array(bounds)


def _fragments(
    lines: pa.Array,
    seg: np.ndarray,
    kinds: np.ndarray,
    final: np.ndarray,
    bounds: pa.Array,
    marks: dict[str, bool],
    n: int,
) -> tuple[pa.Array, pa.Array]:
    """The ``n`` pairs' statement and proof fragments, from the file's ``lines``, the statement and
    proof lines among them (``seg``), their ``kinds``, ``final`` order and ``bounds``
    (:func:`_final_order`)."""
    by_kind = {k: _contents(lines, seg[kinds == k]) for k in (_TEXT, _MATH)}
    parts, order = _math_fragments(by_kind[_MATH], final[kinds == _MATH], marks)
    parts.append(_text_fragments(by_kind[_TEXT], marks))
    order.append(final[kinds == _TEXT])
    xml = pc.binary_join(pa.ListArray.from_arrays(bounds, _in_order(parts, order)), "")
    return _wrap(xml.slice(0, n)), _wrap(xml.slice(n))


def _in_order(parts: list[pa.Array], order: list[np.ndarray]) -> pa.Array:
    """``parts`` concatenated, row ``order[i][j]`` being ``parts[i][j]``."""
    where = np.concatenate(order)
    inverse = np.empty(len(where), dtype=np.int64)
    inverse[where] = np.arange(len(where))
    return pa.concat_arrays(parts).take(pa.array(inverse))


def _escape(lines: pa.Array, marks: dict[str, bool]) -> pa.Array:
    """``xml.sax.saxutils.escape`` of each line."""
    for char, entity in (("&", "&amp;"), (">", "&gt;"), ("<", "&lt;")):
        if marks[char]:
            lines = pc.replace_substring(lines, char, entity)
    return lines


def _text_fragments(lines: pa.Array, marks: dict[str, bool]) -> pa.Array:
    return pc.binary_join_element_wise("<span>", _escape(lines, marks), "</span>", "")


def _math_fragments(
    lines: pa.Array, rows: np.ndarray, marks: dict[str, bool]
) -> tuple[list[pa.Array], list[np.ndarray]]:
    """The ``<math>`` elements of ``math`` lines (at ``rows``), in parts: the parts and the rows
    of each."""
    fast = _flags(pc.match_substring_regex(lines, _FAST_MATH))
    if fast.all():
        return [_math_elements(lines, marks)], [rows]
    slow = lines.filter(pa.array(~fast)).to_pylist()
    return [
        _math_elements(lines.filter(pa.array(fast)), marks),
        pa.array([fragment_xml([(MATH, c)], "")[2:-3] for c in slow], pa.string()),
    ], [rows[fast], rows[~fast]]


def _math_elements(lines: pa.Array, marks: dict[str, bool]) -> pa.Array:
    """:func:`~proofmatch.data.matchfmt.fragment_xml`'s ``<math>`` of lines of
    :data:`_FAST_MATH`'s form: one ``mi`` a token, its font (unless ``normal``) as
    ``mathvariant``; a line with ``____`` and a ``~`` is made by ``fragment_xml`` itself."""
    tilde = np.zeros(len(lines), dtype=bool)
    if marks["tilde"] and marks["font"]:
        tilde = _flags(pc.and_(pc.match_substring(lines, "____"), pc.match_substring(lines, "~")))
    if tilde.any():
        quick = _math_elements(lines.filter(pa.array(~tilde)), marks)
        odd = lines.filter(pa.array(tilde)).to_pylist()
        slow = pa.array([fragment_xml([(MATH, c)], "")[2:-3] for c in odd], pa.string())
        return _in_order([quick, slow], [np.flatnonzero(~tilde), np.flatnonzero(tilde)])
    items = _escape(lines, marks)
    if marks["normal"]:
        items = pc.replace_substring_regex(items, "____normal( |$)", r"\1")
    if marks["font"]:  # on the bare tokens (a ``<`` is escaped: this one marks a font's mi)
        items = pc.replace_substring_regex(items, "([^ _]+)____([^ _]+)", r'<mathvariant="\2">\1')
    items = pc.binary_join_element_wise(
        f'<math xmlns="{MATHML_NS}"><mi>',
        pc.replace_substring(items, " ", "</mi><mi>"),
        "</mi></math>",
        "",
    )
    return pc.replace_substring(items, "<mi><", "<mi ") if marks["font"] else items


def _wrap(fragments: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise("<div>", fragments, "</div>", "")


def _digests(statements: pa.Array, proofs: pa.Array) -> list[int]:
    """A hash of each pair's tokens: of the bytes of its statement's and its proof's tokens and
    of each token's length (equal hashes: equal tokens, up to a collision)."""
    columns = []
    for lists in (statements, proofs):
        lists = lists.cast(TOKENS)  # pa.array of empty lists may be typed otherwise
        data, offsets = buffers(lists.values)
        first = lists.offsets.to_numpy()
        offsets = offsets[first[0] : first[-1] + 1]  # the values these lists hold, copied once
        ends = (offsets[first - first[0]] - offsets[0]).tolist()
        lengths = memoryview(np.diff(offsets).astype(np.int32).tobytes())
        text = memoryview(data[offsets[0] : offsets[-1]].tobytes())
        first = ((first - first[0]) * 4).tolist()
        columns.append(
            [
                (text[ends[k] : ends[k + 1]], lengths[first[k] : first[k + 1]])
                for k in range(len(lists))
            ]
        )
    return [hash(pair) for pair in zip(*columns)]


def _from_pairs(path: Path, digests: bool) -> FileColumns:
    """:class:`FileColumns` of a file read by :func:`iter_pairs` (which raises its format error)."""
    head: dict = {}
    pairs = list(iter_pairs(path, head))
    st = [segment_tokens(p.statement) for p in pairs]
    pr = [segment_tokens(p.proof) for p in pairs]
    out = FileColumns(
        str(path),
        head["count"],
        head["articles"],
        [p.header for p in pairs],
        [p.line for p in pairs],
        pa.array(st, TOKENS),
        pa.array(pr, TOKENS),
    )
    if digests:
        out._xml = (
            pa.array([fragment_xml(p.statement) for p in pairs], pa.string()),
            pa.array([fragment_xml(p.proof) for p in pairs], pa.string()),
        )
        out.digests = _digests(out.statements, out.proofs)
    return out


__all__ = ["FileColumns", "MatchFormatError", "Statements", "read_columns"]
