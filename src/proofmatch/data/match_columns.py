"""One released MATcH file read into columns: its pairs' headers, their statement and proof tokens
as Arrow list arrays and, on request, each pair's XHTML fragments and a digest of its tokens.

The same result as :func:`proofmatch.data.matchfmt.iter_pairs` followed by
:func:`~proofmatch.data.matchfmt.segment_tokens` and :func:`~proofmatch.data.matchfmt.fragment_xml`
for every pair, at a fraction of the cost: the file is split into lines once, inside Arrow, the
pair structure (header, separators, statement and proof lines) is checked with array operations
over the lines' kinds, and the lines are tokenised by Arrow's string kernels where their characters
allow it to give exactly the Python tokenisers' result:

* a ``text`` line of printable ASCII (``\\w`` and ``\\s`` of Python's ``re`` are then ``[A-Za-z0-9_]``
  and the space): each punctuation character and each run of word characters is a token;
* a ``math`` line whose tokens are ``symbol`` or ``symbol____font`` with no other underscore and
  no whitespace (Python's ``str.isspace``) in the symbol or the font: ``$symbol``, ``$symbol~font``
  (``$symbol`` for the font ``normal``).

Every other line (non-ASCII text, a formula token with underscores of its own, odd spacing) is
tokenised by the Python functions, line by line. A file the array checks do not accept (any format
error, a file over 2 GiB) is read by :func:`~proofmatch.data.matchfmt.iter_pairs` instead, which
raises the error naming the file and the line, or reads the file if it is valid after all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from proofmatch.data.matchfmt import (
    MATH,
    MATHML_NS,
    SEP,
    TEXT,
    MatchFormatError,
    Pair,
    fragment_xml,
    iter_pairs,
    segment_tokens,
    split_header,
)

TOKENS = pa.list_(pa.string())
# the characters Python's str.isspace (and re's \s) calls whitespace, as an RE2 class body
_WS = r"\t-\r\x1c-\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_FAST_TEXT = r"^ *[!-~][ -~]*$"  # printable ASCII with a character that is not a space
_PUNCT = r"([^A-Za-z0-9_ ])"  # re's [^\w\s] on printable ASCII
_MATH_TOKEN = rf"[^_{_WS}]+(?:____[^_{_WS}]+)?"
_FAST_MATH = rf"^{_MATH_TOKEN}(?: {_MATH_TOKEN})*$"
_BLANK, _SEP, _TEXT, _MATH, _OTHER = range(5)
_MAX_BYTES = 2**31 - 1  # an Arrow string array's offsets


@dataclass
class FileColumns:
    """A file's count line, article lines and pairs (:class:`~proofmatch.data.matchfmt.Pair`
    without their segments: line, header and ids), the statements' and proofs' tokens
    (``list<string>``, one row per pair) and, when asked for, a digest of each pair's tokens
    (equal digests: equal statement and proof tokens). :meth:`fragments` gives the pairs' XHTML
    fragments."""

    path: str
    count: int
    articles: dict[str, tuple[list[str], str]]
    pairs: list[Pair]
    statements: pa.Array
    proofs: pa.Array
    digests: list[int] | None = None
    _lines: tuple | None = None  # what :meth:`fragments` is made from
    _xml: tuple[pa.Array, pa.Array] | None = None

    def fragments(self) -> tuple[pa.Array, pa.Array]:
        """Each pair's statement and proof as :func:`~proofmatch.data.matchfmt.fragment_xml`
        writes them (made on the first call)."""
        if self._xml is None:
            contents, kinds, n_st, n_pr = self._lines
            xml = _line_fragments(contents, kinds)
            st, pr = _per_pair(xml, n_st, n_pr, "")
            self._xml, self._lines = (_wrap(st), _wrap(pr)), None
        return self._xml


def read_columns(path: str | os.PathLike, digests: bool = False) -> FileColumns:
    """One released file as :class:`FileColumns` (``digests``: with the pairs' digests, and what
    :meth:`FileColumns.fragments` needs kept). Raises
    :class:`~proofmatch.data.matchfmt.MatchFormatError` as ``iter_pairs`` does."""
    path = Path(path)
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    head = _head(data) if len(data) <= _MAX_BYTES else None
    lines = _lines_array(data[head[2] :]) if head else None
    del data
    layout = _layout(lines, head[3], head[1]) if lines is not None else None
    if layout is None:
        return _from_pairs(path, digests)
    pairs, seg, kinds, n_st, n_pr = layout
    contents = _contents(lines, seg)
    del lines
    joined = _line_tokens(contents, kinds)
    if joined is None:
        return _from_pairs(path, digests)
    st_text, pr_text = _per_pair(joined, n_st, n_pr, " ")
    del joined
    out = FileColumns(str(path), head[0], head[1], pairs, _split(st_text), _split(pr_text))
    if digests:
        out.digests = _digests(out.statements, out.proofs)
        out._lines = (contents, kinds, n_st, n_pr)
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
    pos, number = 0, 0
    lines: list[str] = []
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            return None
        line = data[pos:end].decode("utf-8")
        pos, number = end + 1, number + 1
        if number > 2 and line == "":
            break
        lines.append(line)
    if not lines[0].strip().isdigit() or lines[1] != "":
        return None
    articles: dict[str, tuple[list[str], str]] = {}
    for line in lines[2:]:
        fields = line.split("\t", 2)
        if len(fields) != 3 or fields[0] in articles:
            return None
        articles[fields[0]] = ([c for c in fields[1].split("|") if c], fields[2])
    count = int(lines[0])
    if articles and count != len(articles):
        return None
    return count, articles, pos, number + 1


def _lines_array(region: bytes) -> pa.Array:
    """The lines of ``region`` (valid UTF-8) as a string array, split inside Arrow."""
    offsets = pa.py_buffer(np.array([0, len(region)], dtype=np.int32))
    whole = pa.StringArray.from_buffers(1, offsets, pa.py_buffer(region))
    return pc.split_pattern(whole, "\n").flatten()


def _flags(array: pa.Array) -> np.ndarray:
    return array.to_numpy(zero_copy_only=False)


def _layout(
    lines: pa.Array, first_line: int, articles: dict
) -> tuple[list[Pair], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The pairs of the lines after the article block (``first_line`` is the first's number):
    each pair's header as a :class:`Pair` without segments, the indices and kinds of the
    statement and proof lines in file order and each pair's number of statement and proof lines;
    None unless every pair is a header, a separator, statement lines, a separator and proof lines
    (blank lines between pairs, any number, and none at the end)."""
    kind = np.full(len(lines), _OTHER, dtype=np.int8)
    kind[_flags(pc.starts_with(lines, "text\t"))] = _TEXT
    kind[_flags(pc.starts_with(lines, "math\t"))] = _MATH
    kind[_flags(pc.equal(lines, SEP))] = _SEP
    kind[_flags(pc.equal(pc.binary_length(lines), 0))] = _BLANK
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
    headers = lines.take(pa.array(starts)).to_pylist()
    pairs = []
    for number, header in zip((starts + first_line).tolist(), headers):
        article, statement = split_header(header)
        if articles and article not in articles:
            return None
        pairs.append(Pair(number, header, article, statement, [], []))
    return pairs, seg, kinds, second - starts - 2, ends - second


def _contents(lines: pa.Array, seg: np.ndarray) -> pa.Array:
    """The lines ``seg`` without their first 5 bytes (``text<TAB>`` or ``math<TAB>``)."""
    mask = np.zeros(len(lines), dtype=bool)
    mask[seg] = True
    chosen = lines.filter(pa.array(mask))
    n = len(chosen)
    offsets = np.frombuffer(chosen.buffers()[1], np.int32, n + 1, chosen.offset * 4)
    data = np.frombuffer(chosen.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    keep = np.ones(len(data), dtype=bool)
    starts = offsets[:-1] - offsets[0]
    for k in range(5):
        keep[starts + k] = False
    new_offsets = (offsets - offsets[0]) - 5 * np.arange(n + 1, dtype=np.int32)
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(new_offsets.astype(np.int32)), pa.py_buffer(data[keep])
    )


def _line_tokens(contents: pa.Array, kinds: np.ndarray) -> pa.Array | None:
    """Each line's typed tokens joined by spaces (runs of them, at the ends too), in the lines'
    order; None when a line is empty or blank (a format error) or a token holds an ASCII
    whitespace character (which the final split at whitespace would cut)."""
    text, math = np.flatnonzero(kinds == _TEXT), np.flatnonzero(kinds == _MATH)
    parts, order = [], []
    for rows, pattern, tokenise, kind in (
        (text, _FAST_TEXT, _text_tokens, TEXT),
        (math, _FAST_MATH, _math_tokens, MATH),
    ):
        lines = contents.filter(pa.array(kinds == (_TEXT if kind == TEXT else _MATH)))
        fast = _flags(pc.match_substring_regex(lines, pattern))
        if fast.all():
            parts.append(tokenise(lines))
            order.append(rows)
            continue
        parts.append(tokenise(lines.filter(pa.array(fast))))
        order.append(rows[fast])
        slow = []
        for content in lines.filter(pa.array(~fast)).to_pylist():
            if not content or content.isspace():
                return None
            tokens = segment_tokens([(kind, content)])
            if any(c in token for token in tokens for c in "\t\v\f\r"):
                return None
            slow.append(" ".join(tokens))
        parts.append(pa.array(slow, pa.string()))
        order.append(rows[~fast])
    return _in_order(parts, order)


def _in_order(parts: list[pa.Array], order: list[np.ndarray]) -> pa.Array:
    """``parts`` concatenated, row ``order[i][j]`` being ``parts[i][j]``."""
    where = np.concatenate(order)
    inverse = np.empty(len(where), dtype=np.int64)
    inverse[where] = np.arange(len(where))
    return pa.concat_arrays(parts).take(pa.array(inverse))


def _text_tokens(lines: pa.Array) -> pa.Array:
    """``re.findall(r"\\w+|[^\\w\\s]")`` of printable-ASCII lines, joined by spaces: a space on
    each side of every punctuation character (the final split drops the runs)."""
    return pc.replace_substring_regex(lines, _PUNCT, r" \1 ")


def _math_tokens(lines: pa.Array) -> pa.Array:
    """The typed tokens of ``math`` lines of :data:`_FAST_MATH`'s form, joined by spaces."""
    if pc.any(pc.match_substring(lines, "____normal")).as_py():
        lines = pc.replace_substring_regex(lines, "____normal( |$)", r"\1")
    lines = pc.replace_substring(lines, "____", "~")
    return pc.binary_join_element_wise("$", pc.replace_substring(lines, " ", " $"), "")


def _split(joined: pa.Array) -> pa.Array:
    """Space-joined token strings as token lists."""
    return pc.ascii_split_whitespace(pc.ascii_trim(joined, " "))


def _line_fragments(contents: pa.Array, kinds: np.ndarray) -> pa.Array:
    """Each line's part of :func:`~proofmatch.data.matchfmt.fragment_xml`, in the lines' order."""
    escaped = contents
    if pc.any(pc.match_substring_regex(contents, "[&<>]")).as_py():
        escaped = pc.replace_substring(escaped, "&", "&amp;")
        escaped = pc.replace_substring(escaped, ">", "&gt;")
        escaped = pc.replace_substring(escaped, "<", "&lt;")
    text = np.flatnonzero(kinds == _TEXT)
    math = np.flatnonzero(kinds == _MATH)
    fonts = _flags(pc.match_substring(contents.take(pa.array(math)), "____"))
    plain, fonted = math[~fonts], math[fonts]
    quick = _flags(pc.match_substring_regex(contents.take(pa.array(fonted)), _FAST_MATH))
    quick &= ~_flags(pc.match_substring(contents.take(pa.array(fonted)), "~"))
    math_open = f'<math xmlns="{MATHML_NS}">'
    items = pc.replace_substring(escaped.take(pa.array(plain)), " ", "</mi><mi>")
    with_fonts = pc.replace_substring_regex(
        escaped.take(pa.array(fonted[quick])), "____normal( |$)", r"\1"
    )
    with_fonts = pc.replace_substring(with_fonts, " ", "</mi><mi>")
    with_fonts = pc.replace_substring_regex(
        pc.binary_join_element_wise("<mi>", with_fonts, "</mi>", ""),
        "<mi>([^<]+)____([^<]+)</mi>",
        r'<mi mathvariant="\2">\1</mi>',
    )
    slow = fonted[~quick]
    parts = [
        pc.binary_join_element_wise("<span>", escaped.take(pa.array(text)), "</span>", ""),
        pc.binary_join_element_wise(math_open + "<mi>", items, "</mi></math>", ""),
        pc.binary_join_element_wise(math_open, with_fonts, "</math>", ""),
        pa.array(
            [
                fragment_xml([(MATH, c)], "")[2:-3]
                for c in contents.take(pa.array(slow)).to_pylist()
            ],
            pa.string(),
        ),
    ]
    return _in_order(parts, [text, plain, fonted[quick], slow])


def _per_pair(
    per_line: pa.Array, n_st: np.ndarray, n_pr: np.ndarray, sep: str
) -> tuple[pa.Array, pa.Array]:
    """The strings of the lines (in file order) joined by ``sep`` per pair: the statements' and
    the proofs'."""
    first = np.concatenate([[0], np.cumsum(n_st + n_pr)])
    offsets = np.empty(2 * len(n_st) + 1, dtype=np.int32)
    offsets[0:-1:2] = first[:-1]
    offsets[1::2] = first[:-1] + n_st
    offsets[-1] = first[-1]
    both = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), per_line), sep)
    return both.take(pa.array(np.arange(0, len(both), 2))), both.take(
        pa.array(np.arange(1, len(both), 2))
    )


def _wrap(fragments: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise("<div>", fragments, "</div>", "")


def _digests(statements: pa.Array, proofs: pa.Array) -> list[int]:
    """A hash of each pair's tokens: no token holds a line end, so joining them at line ends
    loses nothing."""
    return [
        hash(pair)
        for pair in zip(
            pc.binary_join(statements, "\n").to_pylist(), pc.binary_join(proofs, "\n").to_pylist()
        )
    ]


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
        pairs,
        pa.array(st, TOKENS),
        pa.array(pr, TOKENS),
    )
    if digests:
        out._xml = (
            pa.array([fragment_xml(p.statement) for p in pairs], pa.string()),
            pa.array([fragment_xml(p.proof) for p in pairs], pa.string()),
        )
        out.digests = [hash(("\n".join(s), "\n".join(p))) for s, p in zip(st, pr)]
    for p in pairs:
        p.statement, p.proof = [], []
    return out


__all__ = ["FileColumns", "MatchFormatError", "read_columns"]
