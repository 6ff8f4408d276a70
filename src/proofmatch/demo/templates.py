"""The demo's template language and its per-language files (``demo_data/<lang>.yaml``).

A template is text written for this project with four kinds of marks: ``[[a|b]]`` alternatives
(:func:`choose_alternatives`), ``@role`` notation (:func:`substitute_roles`: the article's symbol
for the random variable, the group, ...), ``{slot}`` placeholders (:func:`fill_slots`: a
hypothesis, a fact, a reference...) and the TeX of ``$inline$`` and ``$$display$$`` formulas,
``\\ref`` and ``\\cite`` (:func:`split_pieces`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

import yaml

from proofmatch.texmath.lexer import TexError

LANGUAGES = ("en", "fr", "de", "ru")


@cache
def load_language(lang: str) -> dict[str, Any]:
    """The templates of one language (``demo_data/<lang>.yaml``), roles resolved from English."""
    if lang not in LANGUAGES:
        raise ValueError(f"no demo templates for language {lang!r}; have {LANGUAGES}")
    text = (
        resources.files("proofmatch.demo")
        .joinpath("demo_data", f"{lang}.yaml")
        .read_text(encoding="utf-8")
    )
    data = yaml.safe_load(text)
    if lang != "en":
        english = load_language("en")["categories"]
        for cat in data["categories"].values():
            cat["roles"] = english[cat.pop("roles_from")]["roles"]
    return data


_ROLE = re.compile(r"@([A-Za-z]+)")
_ALT = re.compile(r"\[\[(.*?)\]\]")
_SLOT = re.compile(
    r"\{(hyp2?|concl2?|hypm|conclm|fact2?|factm|intro|ref|cite|step|term|termsym|sec|self|topic2?|Topic)\}"
)
_DISPLAY_SLOT = re.compile(r"\$\$\{(hypm|conclm|factm)\}\$\$")
_INLINE_MATH = re.compile(r"(?<!\$)\$([^$]+)\$(?!\$)")
_RELATION = re.compile(
    r"[=<>]|\\(?:le|ge|ne|in|to|subset|subseteq|sim|ll|gg|cong|equiv|mid|nmid|hookrightarrow)(?![A-Za-z])"
)
_PIECE = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\ref\{([^}]*)\}|\\cite\{([^}]*)\}(?:\[([^\]]*)\])?")
_COMMAND_END = re.compile(r"\\[A-Za-z]+$")


def choose_alternatives(template: str, rng: random.Random) -> str:
    """Each ``[[a|b|...]]`` replaced by one of its alternatives."""
    return _ALT.sub(lambda m: rng.choice(m.group(1).split("|")), template)


def substitute_roles(text: str, notation: dict[str, str]) -> str:
    """Replace ``@role`` by the article's TeX symbol (a space after ``\\cmd`` before a letter)."""

    def sub(m: re.Match[str]) -> str:
        try:
            value = notation[m.group(1)]
        except KeyError:
            raise TexError(f"unknown notation role @{m.group(1)} in {text!r}") from None
        if _COMMAND_END.search(value) and text[m.end() : m.end() + 1].isalpha():
            value += " "
        return value

    return _ROLE.sub(sub, text)


def fill_slots(template: str, slots: dict[str, Callable[[], str]]) -> str:
    """Fill ``{slot}`` placeholders (``$${xm}$$`` gets raw TeX, ``{xm}`` inline math)."""

    def display(m: re.Match[str]) -> str:
        return f"$${slots[m.group(1) + '_tex']()}$$"

    def inline(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in slots:
            raise KeyError(f"template slot {{{name}}} has no value here: {template!r}")
        return slots[name]()

    return _SLOT.sub(inline, _DISPLAY_SLOT.sub(display, template))


def main_formula(text: str) -> str | None:
    """The TeX of a realized fact's main formula: its longest inline formula with a relation
    (``E|X| < \\infty``, not a lone ``X``), so that "we obtain {factm}" reads as mathematics."""
    formulas = [m.group(1) for m in _INLINE_MATH.finditer(text) if _RELATION.search(m.group(1))]
    return max(formulas, key=len) if formulas else None


def split_pieces(text: str) -> list[tuple[str, ...]]:
    """A realized paragraph as pieces: ``(text,)``, ``(math, tex)``, ``(display, tex)``,
    ``(ref, anchor)``, ``(cite, key, extra)``."""
    pieces: list[tuple[str, ...]] = []
    pos = 0
    for m in _PIECE.finditer(text):
        if m.start() > pos:
            pieces.append(("text", text[pos : m.start()]))
        if m.group(1) is not None:
            pieces.append(("display", m.group(1).strip()))
        elif m.group(2) is not None:
            pieces.append(("math", m.group(2).strip()))
        elif m.group(3) is not None:
            pieces.append(("ref", m.group(3)))
        else:
            pieces.append(("cite", m.group(4), m.group(5) or ""))
        pos = m.end()
    if pos < len(text):
        pieces.append(("text", text[pos:]))
    return pieces
