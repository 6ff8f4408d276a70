"""The typed tokens of a released file's ``text`` and ``math`` lines, cut out of the lines' bytes
with numpy: a few passes over the bytes of all lines at once, in place of a regular expression
and a split per line.

It takes the lines :func:`proofmatch.data.match_columns.read_columns` gives it, those whose
characters let byte operations give exactly the Python tokenisers' result
(:func:`proofmatch.data.matchfmt.segment_tokens`), each with its ``text<TAB>`` or ``math<TAB>``:

* a ``text`` line of printable ASCII with a character that is not a space (:func:`fast_text`):
  each run of ``[A-Za-z0-9_]`` is a token, each other character but the space one token;
* a ``math`` line of :data:`FAST_MATH`'s form (tokens one space apart, each ``symbol`` or
  ``symbol____font`` with no other underscore and no whitespace): ``$symbol``, ``$symbol~font``
  (``$symbol`` for the font ``normal``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# the characters Python's str.isspace (and re's \s) calls whitespace, as an RE2 class body
_WS = r"\t-\r\x1c-\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_MATH_TOKEN = rf"[^_{_WS}]+(?:____[^_{_WS}]+)?"
#: a whole ``math`` line (with its ``math<TAB>``) whose tokens this module cuts
FAST_MATH = rf"^math\t{_MATH_TOKEN}(?: {_MATH_TOKEN})*$"

_WORD = np.zeros(256, dtype=bool)  # re's \w on ASCII
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_":
    _WORD[_c] = True
_PUNCT = np.zeros(256, dtype=bool)  # re's [^\w\s] on printable ASCII
_PUNCT[33:127] = ~_WORD[33:127]
_PREFIX = 5  # len("text\t") == len("math\t")
# bytes of lines cut at once: the temporaries are about 12 bytes a byte, so a chunk's stay in
# the cache and in the heap (larger ones are fresh pages from the system each time: twice the
# CPU time, half of it in the kernel)
_CHUNK = 1 << 20
_NORMAL = np.frombuffer(b"normal", dtype=np.uint8)


def buffers(lines: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's bytes and its ``len + 1`` offsets into them (no copy)."""
    offsets = np.frombuffer(lines.buffers()[1], np.int32, len(lines) + 1, lines.offset * 4)
    data = lines.buffers()[2]
    return np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8), offsets


def fast_text(lines: pa.Array) -> np.ndarray:
    """Which lines (each with its 5-byte prefix) hold printable ASCII after the prefix, with a
    character that is not a space."""
    data, offsets = buffers(lines)
    data = data[: offsets[-1]] if len(offsets) else data
    ok = np.diff(offsets) > _PREFIX
    if not ok.any():
        return ok
    # each line's body and, between them, the next line's prefix: reduced in one call each
    bounds = np.stack([offsets[:-1] + _PREFIX, offsets[1:]], axis=1)[ok].ravel()
    bounds = bounds[:-1] if bounds[-1] == len(data) else bounds
    low = np.minimum.reduceat(data, bounds)[0::2]
    high = np.maximum.reduceat(data, bounds)[0::2]
    ok[ok] = (low >= 32) & (high <= 126) & (high > 32)
    return ok


def tokens(
    lines: pa.Array, is_math: np.ndarray, marks: dict[str, bool], at: np.ndarray | None = None
) -> tuple[pa.Array, np.ndarray]:
    """The tokens of ``lines`` (:func:`fast_text` text lines and :data:`FAST_MATH` math lines,
    ``is_math`` telling which is which), in order, and the offsets into them of the lines ``at``
    (every line's ``len + 1`` offsets when None; sorted). ``marks``: what the lines may hold (a
    ``____`` font, the font ``normal``)."""
    data, offsets = buffers(lines)
    at = np.arange(len(lines) + 1) if at is None else at
    out = np.empty(int(offsets[-1] - offsets[0]), np.uint8)  # the tokens are fewer bytes
    token_offsets, line_offsets = [np.zeros(1, np.int32)], np.zeros(len(at), np.int32)
    size = n_tokens = first = 0
    while first < len(lines):  # chunks of at most _CHUNK bytes of lines (or of one longer line)
        last = int(np.searchsorted(offsets, offsets[first] + _CHUNK, side="right")) - 1
        last = max(last, first + 1)
        o = offsets[first : last + 1].astype(np.int64)
        kept, begin, starts = _cut(
            data[o[0] : o[-1]], o - o[0], is_math[first:last], marks, out[size:]
        )
        end = "right" if last == len(lines) else "left"  # the end offset goes in the last chunk
        here = slice(np.searchsorted(at, first), np.searchsorted(at, last, side=end))
        line_offsets[here] = np.searchsorted(starts, o[at[here] - first] - o[0]) + n_tokens
        token_offsets.append(begin + size)
        size, n_tokens, first = size + kept, n_tokens + len(begin), last
    values = pa.StringArray.from_buffers(
        n_tokens,
        pa.py_buffer(np.concatenate(token_offsets)),
        pa.py_buffer(out[:size]),
    )
    return values, line_offsets


def _previous(mask: np.ndarray) -> np.ndarray:
    out = np.empty_like(mask)
    out[0] = False
    out[1:] = mask[:-1]
    return out


def _cut(
    b: np.ndarray, o: np.ndarray, is_math: np.ndarray, marks: dict[str, bool], out: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray]:
    """The tokens of the lines ``b[o[i]:o[i+1]]`` (see :func:`tokens`): their bytes, one after
    the other, written to the start of ``out``, their number of bytes, each token's end (its
    offset after the first) and where each token starts in ``b``. The
    bytes are a copy of the lines' with the prefixes blanked, ``$`` on the blank before each
    math token and ``~`` on the first ``_`` of each ``____``, less the blanks and the other
    three ``_``.

    Why this is long: one pass of array operations over the bytes, each step reading the
    masks of the step before; split up, the masks would be passed around instead."""
    b = b.copy()
    b[(o[:-1, None] + np.arange(_PREFIX)).ravel()] = 32
    in_math = np.repeat(is_math, np.diff(o))
    blank = b == 32
    word = ((b | 32) - 97 < 26) | (b - 48 < 10) | (b == 95)
    word &= ~in_math
    punct = ~(word | blank | in_math)  # the text lines are printable ASCII
    symbol = in_math & ~blank  # a byte of a math token
    dollar = np.zeros_like(symbol)  # the blank before each math token
    dollar[:-1] = symbol[1:] & ~symbol[:-1]
    b += dollar.view(np.uint8) << 2  # " " + 4 == "$"
    keep = ~blank | dollar
    if marks["font"]:
        underscore = symbol & (b == 95)  # only as the 4 of a font's ____ in these lines
        more = underscore & _previous(underscore)
        keep &= ~more
        tilde = np.flatnonzero(underscore & ~more)
        if marks["normal"] and len(tilde):
            after = np.zeros(len(b) + 11, bool)  # a blank or the end of a line
            after[: len(b)] = blank
            after[o[1:]] = True
            hit = after[tilde + 10]
            pad = np.concatenate([b, np.zeros(11, np.uint8)])
            for k, c in enumerate(_NORMAL):
                hit &= pad[tilde + 4 + k] == c
            keep[(tilde[hit, None] + np.arange(10)).ravel()] = False
            tilde = tilde[~hit]
        b[tilde] = ord("~")
    starts = np.flatnonzero(punct | (word & ~_previous(word)) | dollar)
    place = np.cumsum(keep.view(np.uint8), dtype=np.int32)
    kept = int(place[-1]) if len(place) else 0
    np.compress(keep, b, out=out[:kept])
    ends = np.empty(len(starts), np.int32)
    ends[:-1] = place[starts[1:]] - 1
    ends[-1:] = kept
    return kept, ends, starts
