"""Render a result table as Markdown, LaTeX and CSV (the one table writer of the project).

Markdown comes from ``DataFrame.to_markdown`` (tabulate) and LaTeX from ``DataFrame.to_latex``; this
module only decides how a cell reads: two decimals, and an en dash for a number not measured.
The CSV keeps full precision and leaves missing cells empty.
It stands on the ground floor beside :mod:`proofmatch.artifacts`, because stages on several floors
write tables: the LaTeX stage its conversion table (:mod:`proofmatch.data.latex`), evaluation the paper's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from proofmatch.artifacts import write_csv, write_text

MISSING = "–"


def format_cell(value: object) -> str:
    """How a cell reads: two decimals, an en dash for a number not measured."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return MISSING
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _cells(df: pd.DataFrame) -> pd.DataFrame:
    """Every cell as the string the reader sees (column names as strings too)."""
    out = df.map(format_cell)
    out.columns = [str(c) for c in df.columns]
    return out


def to_markdown(df: pd.DataFrame, caption: str = "") -> str:
    text = _cells(df).to_markdown(index=False, tablefmt="github", disable_numparse=True) + "\n"
    return (f"{caption}\n\n" if caption else "") + text


def to_latex(df: pd.DataFrame, caption: str = "", label: str = "") -> str:
    """A ``table`` float with booktabs rules (``\\usepackage{booktabs}``); cells and headers are
    escaped by pandas, the caption (which pandas passes through) by :func:`_escape_caption`."""
    return _cells(df).to_latex(
        index=False,
        escape=True,
        column_format="l" * len(df.columns),
        position="t",
        caption=_escape_caption(caption) or None,
        label=label or None,
    )


def _escape_caption(caption: str) -> str:
    return re.sub(
        r"[\\&%$#_{}]", lambda m: r"\textbackslash{}" if m[0] == "\\" else "\\" + m[0], caption
    )


def write_table(
    df: pd.DataFrame,
    md: str | os.PathLike,
    tex: str | os.PathLike,
    csv: str | os.PathLike,
    caption: str = "",
    label: str = "",
    shown: pd.DataFrame | None = None,
    md_after: str = "",
) -> None:
    """Write one table in its three formats, each atomically: the CSV from ``df`` (full precision),
    Markdown and LaTeX from ``shown`` when given (cells already formatted, e.g. with intervals).
    ``md_after`` is Markdown the page shows below the table (a summary line, a second table)."""
    display = df if shown is None else shown
    write_text(to_markdown(display, caption) + md_after, md)
    write_text(to_latex(display, caption, label or Path(md).stem), tex)
    write_csv(df, csv)
