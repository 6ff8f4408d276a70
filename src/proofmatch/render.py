"""Render a result table as Markdown, LaTeX and CSV (the one table writer of the project)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from .store import write_csv, write_text


def _fmt(value: object) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def to_markdown(df: pd.DataFrame, caption: str = "") -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    text = "\n".join(lines) + "\n"
    return (f"{caption}\n\n" if caption else "") + text


def _tex_escape(s: str) -> str:
    for a, b in [("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"), ("$", r"\$")]:
        s = s.replace(a, b)
    return s


def to_latex(df: pd.DataFrame, caption: str = "", label: str = "") -> str:
    cols = [str(c) for c in df.columns]
    out = ["\\begin{table}[t]", "\\centering", "\\begin{tabular}{" + "l" * len(cols) + "}", "\\hline"]
    out.append(" & ".join(_tex_escape(c) for c in cols) + " \\\\")
    out.append("\\hline")
    for row in df.itertuples(index=False):
        out.append(" & ".join(_tex_escape(_fmt(v)) for v in row) + " \\\\")
    out += ["\\hline", "\\end{tabular}"]
    if caption:
        out.append(f"\\caption{{{_tex_escape(caption)}}}")
    if label:
        out.append(f"\\label{{{label}}}")
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


def write_table(df: pd.DataFrame, md: str | os.PathLike, tex: str | os.PathLike, csv: str | os.PathLike,
                caption: str = "", label: str = "") -> None:
    """Write one table in its three formats, each atomically."""
    write_text(to_markdown(df, caption), md)
    write_text(to_latex(df, caption, label or Path(md).stem), tex)
    write_csv(df, csv)
