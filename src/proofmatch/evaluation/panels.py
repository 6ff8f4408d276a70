"""Figure 2's panels: one explained pair (:class:`Explanation`) and their drawing as highlighted text.

Rendering (matplotlib, Agg): each token is drawn as text with a coloured box, orange for
support of "match", blue for "mismatch", opacity proportional to ``|weight| / max |weight|`` of the
panel; lines are wrapped to the figure width and the proof starts on a new line. One panel per
pair and model (:mod:`proofmatch.evaluation.figure` explains them), each with a title and the
model's P(match) and LIME's local fit R². A math token is printed as the symbol it stands for:
``F[script]`` as ℱ, ``Q[double-struck]`` as ℚ (:func:`math_symbol`: Unicode's mathematical
alphanumerics, drawn with STIX where the text font lacks them). A colour scale under the panels
says what the colours mean.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from proofmatch.artifacts import atomic_path

MATCH_RGB = (1.0, 0.50, 0.05)  # orange
MISMATCH_RGB = (0.12, 0.47, 0.71)  # blue
FONTS = ["DejaVu Sans", "STIXGeneral"]  # STIX (matplotlib's own) has every math alphanumeric
_VARIANT = re.compile(r"^(?P<symbol>.+)\[(?P<variant>[a-z-]+)\]$")
# Unicode's older letterlike symbols stand where the mathematical alphanumerics have holes
_LETTERLIKE = {"script": "SCRIPT", "double-struck": "DOUBLE-STRUCK", "fraktur": "BLACK-LETTER"}


def math_symbol(shown: str) -> str:
    """A drawn math token (``F[script]``, :func:`proofmatch.scoring.tokens.display_token`) as the
    symbol it stands for (ℱ); a letter in a variant Unicode has no symbol for, or any other
    token, as it is."""
    m = _VARIANT.match(shown)
    if not m or len(m["symbol"]) != 1 or not m["symbol"].isascii() or not m["symbol"].isalpha():
        return shown
    letter, variant = m["symbol"], m["variant"]
    case = "CAPITAL" if letter.isupper() else "SMALL"
    style = (
        variant.upper()
        .replace("-", " ")
        .replace("DOUBLE STRUCK", "DOUBLE-STRUCK")
        .replace("SANS SERIF", "SANS-SERIF")
    )
    for name in (
        f"MATHEMATICAL {style} {case} {letter.upper()}",
        f"{_LETTERLIKE.get(variant, '?')} {case} {letter.upper()}",
    ):
        try:
            symbol = unicodedata.lookup(name)
        except KeyError:
            continue
        if ord(symbol) in _glyphs():
            return symbol
    return shown


@functools.cache
def _glyphs() -> frozenset[int]:
    """The characters the drawing's fonts (:data:`FONTS`) have: a symbol none of them has stays
    written as its token, rather than drawn as an empty box."""
    from matplotlib import font_manager, ft2font

    chars: set[int] = set()
    for family in FONTS:
        path = font_manager.findfont(
            font_manager.FontProperties(family=family), fallback_to_default=False
        )
        chars |= set(ft2font.FT2Font(path).get_charmap())
    return frozenset(chars)


@dataclass
class Explanation:
    """LIME weights of one pair under one model, in token order (statement, then proof)."""

    title: str
    tokens: list[str]  # display strings
    is_math: list[bool]
    weights: np.ndarray  # > 0 supports "match"
    n_statement: int
    p_match: float
    r2: float
    pair_id: str = ""


# one drawn string: kind ("title", "meta" or "token"), x and y in pixels (y downwards), text,
# LIME weight (tokens), whether it is drawn in italics (a math token not drawn as a symbol)
_Item = tuple[str, float, float, str, float, bool]


@dataclass(frozen=True)
class _Page:
    """The drawing's measures in pixels, from its width (inches), font size (points) and dpi."""

    width_in: float
    fontsize: float
    dpi: int

    @property
    def margin(self) -> float:
        return 0.25 * self.dpi

    @property
    def gap(self) -> float:  # between two tokens
        return 0.6 * self.fontsize / 72 * self.dpi

    @property
    def line_h(self) -> float:
        return 2.1 * self.fontsize / 72 * self.dpi

    @property
    def width_px(self) -> float:
        return self.width_in * self.dpi


def _panel_items(
    panel: Explanation, y: float, page: _Page, measure: Callable[[str, str], float]
) -> tuple[list[_Item], float]:
    """One panel from height ``y``: its title, its P(match) line and its tokens wrapped to the
    page (the proof on a new line); returns the items and the height of its last line."""
    items: list[_Item] = [("title", page.margin, y, panel.title, 0.0, False)]
    y += page.line_h
    items.append(
        (
            "meta",
            page.margin,
            y,
            f"P(match) = {panel.p_match:.3f}   LIME R² = {panel.r2:.2f}   "
            f"largest |weight| = {float(np.max(np.abs(panel.weights))):.3f}   "
            "(orange: supports match, blue: supports mismatch)",
            0.0,
            False,
        )
    )
    y += 1.3 * page.line_h
    x = page.margin
    for i, (s, math_tok, w) in enumerate(zip(panel.tokens, panel.is_math, panel.weights)):
        symbol = math_symbol(s) if math_tok else s
        italic = math_tok and symbol == s  # a mathematical alphanumeric carries its own style
        width = measure(symbol, "italic" if italic else "normal")
        if i == panel.n_statement or (
            x > page.margin and x + width + page.gap > page.width_px - page.margin
        ):
            x, y = page.margin, y + page.line_h * (1.5 if i == panel.n_statement else 1.0)
        items.append(("token", x, y, symbol, float(w), italic))
        x += width + page.gap
    return items, y


def _layout(
    plt: Any, panels: Sequence[Explanation], page: _Page
) -> tuple[list[list[_Item]], float]:
    """Pass 1: measure every token's width on a probe figure and lay the panels out; returns
    each panel's items and the drawing's height in pixels."""
    probe = plt.figure(figsize=(page.width_in, 2), dpi=page.dpi)
    renderer = probe.canvas.get_renderer()

    def measure(s: str, style: str) -> float:
        t = probe.text(
            0, 0, s, fontsize=page.fontsize, fontstyle=style, parse_math=False, fontfamily=FONTS
        )
        w = t.get_window_extent(renderer).width
        t.remove()
        return w

    layout, y = [], page.margin
    for panel in panels:
        items, y = _panel_items(panel, y, page, measure)
        layout.append(items)
        y += 2.0 * page.line_h
    plt.close(probe)
    return layout, y - page.line_h + SCALE_LINES * page.line_h + page.margin


def _draw_item(fig: Any, item: _Item, scale: float, page: _Page, height_px: float) -> None:
    """One title, P(match) line or token (a box coloured by its weight's sign, opacity by its size)."""
    kind, x, y, s, w, math_tok = item
    fx, fy = x / page.width_px, 1.0 - y / height_px
    if kind == "title":
        fig.text(
            fx, fy, s, fontsize=page.fontsize + 2, fontweight="bold", va="center", parse_math=False
        )
    elif kind == "meta":
        fig.text(fx, fy, s, fontsize=page.fontsize - 1, color="0.35", va="center", parse_math=False)
    else:
        rgb = MATCH_RGB if w > 0 else MISMATCH_RGB
        alpha = min(1.0, abs(w) / scale)
        fig.text(
            fx,
            fy,
            s,
            fontsize=page.fontsize,
            va="center",
            fontstyle="italic" if math_tok else "normal",
            fontfamily=FONTS,
            parse_math=False,
            bbox={"boxstyle": "square,pad=0.15", "facecolor": (*rgb, alpha), "edgecolor": "none"},
        )


SCALE_LINES = 3.0  # lines of height the colour scale takes under the panels


def _colour_scale(fig: Any, page: _Page, height_px: float) -> None:
    """Under the panels: the colours from "supports mismatch" to "supports match", each panel's
    colour scaled by its own largest |weight| (given in its line)."""
    from matplotlib.colors import LinearSegmentedColormap

    cmap = LinearSegmentedColormap.from_list("lime", [MISMATCH_RGB, (1, 1, 1), MATCH_RGB])
    h = 0.5 * page.line_h / height_px
    bottom = (page.margin + 0.9 * page.line_h) / height_px
    ax = fig.add_axes([page.margin / page.width_px, bottom, 0.42, h])
    ax.imshow(np.linspace(-1, 1, 256)[None, :], aspect="auto", cmap=cmap, extent=(-1, 1, 0, 1))
    ax.set_yticks([])
    ax.set_xticks([-1, 0, 1])
    labels = ax.set_xticklabels(
        ["−1: supports mismatch", "0", "+1: supports match"], fontsize=page.fontsize - 2
    )
    labels[0].set_horizontalalignment("left")  # inside the figure's margin
    labels[-1].set_horizontalalignment("right")
    ax.set_title(
        "LIME weight ÷ the panel's largest |weight| (colour, and its strength)",
        fontsize=page.fontsize - 1,
        loc="left",
    )


def draw_panels(
    panels: Sequence[Explanation],
    out_png: str | os.PathLike,
    out_pdf: str | os.PathLike,
    width_in: float = 11.0,
    fontsize: float = 10.0,
    dpi: int = 150,
) -> None:
    """Draw the panels as highlighted wrapped text; write PNG and PDF atomically.

    Two passes: the tokens are measured and laid out first (:func:`_layout`), so the figure is
    made as tall as the wrapped text, then drawn at the measured positions."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    page = _Page(width_in, fontsize, dpi)
    layout, height_px = _layout(plt, panels, page)
    fig = plt.figure(figsize=(width_in, height_px / dpi), dpi=dpi)
    for panel, items in zip(panels, layout):
        scale = float(np.max(np.abs(panel.weights))) or 1.0
        for item in items:
            _draw_item(fig, item, scale, page, height_px)
    _colour_scale(fig, page, height_px)
    for path, fmt in ((out_png, "png"), (out_pdf, "pdf")):
        with atomic_path(path, f".{fmt}") as tmp:
            fig.savefig(tmp, format=fmt, dpi=dpi)
    plt.close(fig)
