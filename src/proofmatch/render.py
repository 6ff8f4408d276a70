"""Render a result table as Markdown, LaTeX and CSV (the one table writer of the project).

Markdown comes from ``DataFrame.to_markdown`` (tabulate) and LaTeX from ``DataFrame.to_latex``; this
module only decides how a cell reads: two decimals, and an en dash for a number not measured.
The CSV keeps full precision and leaves missing cells empty.
It stands on the ground floor beside :mod:`proofmatch.artifacts`, because stages on several floors
write tables: the LaTeX stage its conversion table (:mod:`proofmatch.data.latex`), evaluation the paper's.
"""

from __future__ import annotations

import html
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


def write_tables(
    df: pd.DataFrame,
    out_prefix: str | os.PathLike,
    caption: str,
    shown: pd.DataFrame | None = None,
    md_after: str = "",
) -> None:
    """:func:`write_table` to ``{out_prefix}.md``, ``.tex`` and ``.csv``, the LaTeX label the
    prefix's name: how every table of ``results/tables/`` is written."""
    out = str(out_prefix)
    write_table(
        df,
        f"{out}.md",
        f"{out}.tex",
        f"{out}.csv",
        caption=caption,
        label=Path(out).name,
        shown=shown,
        md_after=md_after,
    )


# ----------------------------------------------------------------------------- HTML for the report

_NUMBER = re.compile(r"^([−+-]?\d[\d,.]*( %|%)?( [±\[].*)?|–)$")
HTML_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.2rem; color: #1b1b1b; }
p.caption { max-width: 62rem; }
table { border-collapse: collapse; margin: 0.8rem 0 1.2rem; }
th, td { padding: 0.25rem 0.7rem; border-bottom: 1px solid #ddd; text-align: left; }
th { border-bottom: 2px solid #444; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #f6f6f6; }
"""


def _pipe_cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _is_pipe_table(lines: list[str]) -> bool:
    return (
        len(lines) >= 2
        and all(line.lstrip().startswith("|") for line in lines)
        and all(set(c) <= set(":-") and c for c in _pipe_cells(lines[1]))
    )


def _html_table(lines: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in _pipe_cells(lines[0]))
    rows = []
    for line in lines[2:]:
        cells = "".join(
            f'<td class="num">{html.escape(c)}</td>'
            if _NUMBER.match(c)
            else f"<td>{html.escape(c)}</td>"
            for c in _pipe_cells(line)
        )
        rows.append(f"<tr>{cells}</tr>")
    return (
        f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )


def markdown_to_html(text: str, title: str) -> str:
    """A table's Markdown (as :func:`write_table` writes it: paragraphs, the first its caption,
    and GitHub pipe tables) as one standalone HTML page, every cell escaped; numbers are set right
    aligned. What the HTML report shows (``snakemake --report`` opens an HTML result in place; a
    Markdown one only as a download link)."""
    blocks = [b for b in re.split(r"\n[ \t]*\n", text.strip()) if b.strip()]
    body = []
    for i, block in enumerate(blocks):
        lines = [line for line in block.splitlines() if line.strip()]
        if _is_pipe_table(lines):
            body.append(_html_table(lines))
        else:
            cls = ' class="caption"' if i == 0 else ""
            body.append(f"<p{cls}>{html.escape(' '.join(block.split()))}</p>")
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{HTML_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def write_table_html(md: str | os.PathLike, out: str | os.PathLike) -> None:
    """``out``: the table ``md`` as HTML (:func:`markdown_to_html`), written atomically."""
    md = Path(md)
    write_text(markdown_to_html(md.read_text(encoding="utf-8"), md.stem), out)
