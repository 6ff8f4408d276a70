"""The typed token convention shared by every stage after linearization.

A statement or proof is a flat list of string tokens. Text tokens are words and punctuation
(:func:`text_tokens`). Math tokens come from the depth-first walk of presentation MathML and carry
the prefix ``$`` so that the math vocabulary is disjoint from the text vocabulary (math ``$a`` is
not the English article ``a``, paper Appendix A). A non-normal font is a suffix: bold x is
``$x~bold`` and differs from ``$x``. A text token is never ``$`` followed by more characters:
the text tokenizer emits a lone ``$`` as punctuation, so :func:`is_math` is unambiguous.

The three input views of Table 5 (text only, math only, both) are filters over one token list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from proofmatch.experiments import VIEWS
from proofmatch.registry.checks import unknown

MATH_PREFIX = "$"
FONT_SEP = "~"
View = Literal["text", "math", "both"]

_TEXT_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def text_tokens(text: str) -> list[str]:
    """Split running text into words and single punctuation marks (case kept)."""
    return _TEXT_TOKEN.findall(text)


def math_token(symbol: str, variant: str | None = None) -> str:
    """The typed token of one math symbol; ``variant`` is MathML's ``mathvariant``."""
    if variant and variant != "normal":
        return f"{MATH_PREFIX}{symbol}{FONT_SEP}{variant}"
    return f"{MATH_PREFIX}{symbol}"


def is_math(token: str) -> bool:
    return len(token) > 1 and token[0] == MATH_PREFIX


def split_math(token: str) -> tuple[str, str | None]:
    """Inverse of :func:`math_token`: ``'$x~bold'`` -> ``('x', 'bold')``."""
    body = token[1:]
    symbol, sep, variant = body.rpartition(FONT_SEP)
    if sep and symbol:
        return symbol, variant
    return body, None


def view(tokens: Iterable[str], which: View) -> list[str]:
    """Keep the tokens of one input view (``text``, ``math`` or ``both``)."""
    if which == "both":
        return list(tokens)
    if which == "math":
        return [t for t in tokens if is_math(t)]
    if which == "text":
        return [t for t in tokens if not is_math(t)]
    raise unknown("input view", which, VIEWS)


def counts(tokens: Iterable[str]) -> tuple[int, int]:
    """(number of text tokens, number of math tokens)."""
    n_text = n_math = 0
    for t in tokens:
        if is_math(t):
            n_math += 1
        else:
            n_text += 1
    return n_text, n_math
