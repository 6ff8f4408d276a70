"""The numbers the paper reports in Tables 3-6, and the cell of this project's tables each one is.

``paper_results.csv`` (beside this module) holds every number of the paper's Tables 3, 4, 5 and 6,
once: one line per cell with the paper's ``table``, ``row`` and ``column`` labels, the identifiers
of the same cell here (``split``, ``model``, ``mode``, ``decoding``, ``level``, ``view``,
``test_level``, ``metric``; the values of :mod:`proofmatch.experiments`) and the ``value`` as
printed (a percentage). The paper's "Global" training is the project's ``hybrid`` mode (§7.2:
"in practice, we use a hybrid local-global objective"); the Acc of a ``global`` decoding row is
the accuracy of global decoding; MRR exists only for local decoding.

:func:`project_cell` finds a paper cell's row in :func:`proofmatch.experiments.tables` by these
identifiers, never by position. Pure Python (no pandas): the Snakefile imports it to list the
evaluations the comparison reads (:func:`evaluation_inputs`).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path

from proofmatch import experiments as X
from proofmatch import result_tables as RT

PAPER_RESULTS = Path(__file__).with_name("paper_results.csv")
COLUMNS = (
    "table",
    "row",
    "column",
    "split",
    "model",
    "mode",
    "decoding",
    "level",
    "view",
    "test_level",
    "metric",
    "value",
)
TABLES = ("table3", "table4", "table5", "table6")
METRICS = ("mrr", "acc")
PART = "test"  # the paper's Tables 3-6 report the test sets


@dataclass(frozen=True)
class PaperCell:
    """One number of the paper: its labels there, the project cell's identifiers and the value (%)."""

    table: str
    row: str
    column: str
    split: str
    model: str
    mode: str
    decoding: str
    level: str
    view: str
    test_level: str
    metric: str
    value: float

    @property
    def key(self) -> tuple[str, ...]:
        """The project cell: table, evaluation identifiers, decoding and metric."""
        return (
            self.table,
            self.split,
            self.model,
            self.mode,
            self.decoding,
            self.level,
            self.view,
            self.test_level,
            self.metric,
        )

    def evaluation(self, part: str = PART) -> X.Evaluation:
        return X.Evaluation(
            self.split, self.model, self.mode, self.level, self.view, part, self.test_level
        )


def _check(cell: PaperCell, where: str) -> None:
    allowed = {
        "table": TABLES,
        "split": X.SPLITS,
        "model": X.ENCODERS,
        "decoding": X.DECODINGS,
        "level": X.ALL_LEVELS,
        "view": X.VIEWS,
        "test_level": X.ALL_LEVELS,
        "metric": METRICS,
    }
    for name, values in allowed.items():
        if getattr(cell, name) not in values:
            raise ValueError(f"{where}: {name} {getattr(cell, name)!r} is not one of {values}")
    if cell.mode not in X.ENCODER_MODES[cell.model]:
        raise ValueError(f"{where}: {cell.model} is not trained in mode {cell.mode!r}")
    if cell.metric == "mrr" and cell.decoding != "local":
        raise ValueError(f"{where}: global decoding has no MRR")
    if not 0.0 <= cell.value <= 100.0:
        raise ValueError(f"{where}: value {cell.value} is not a percentage")


def read_paper_cells(path: str | os.PathLike = PAPER_RESULTS) -> list[PaperCell]:
    """The paper's cells in file order; a bad header or value, or a cell given twice (by its labels
    or by its project identifiers), raises."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames}, expected {list(COLUMNS)}")
        cells = []
        for i, rec in enumerate(reader, start=2):
            cell = PaperCell(**{**rec, "value": float(rec["value"])})
            _check(cell, f"{path} line {i}")
            cells.append(cell)
    for what, key in (
        ("project cell", lambda c: c.key),
        ("paper cell", lambda c: (c.table, c.row, c.column)),
    ):
        seen: dict[tuple, int] = {}
        for i, cell in enumerate(cells, start=2):
            if key(cell) in seen:
                raise ValueError(
                    f"{path}: line {i} repeats the {what} of line {seen[key(cell)]}: {key(cell)}"
                )
            seen[key(cell)] = i
    return cells


def project_cell(
    cell: PaperCell, tables: Mapping[str, RT.Table]
) -> tuple[RT.Table, RT.Row, X.Evaluation]:
    """The project's table, row and evaluation holding ``cell``: the one row of ``cell.table`` that
    is decoded as ``cell.decoding`` and reads the cell's evaluation (on the tables' part)."""
    table = tables[cell.table]
    part = table.rows[0].cells[0].part
    ev = cell.evaluation(part)
    rows = [row for row in table.rows if row.decoding == cell.decoding and ev in row.cells]
    if len(rows) != 1:
        raise KeyError(
            f"{cell.table} has {len(rows)} rows with {ev} decoded {cell.decoding} "
            f"(paper: {cell.row}, {cell.column})"
        )
    return table, rows[0], ev


def evaluations(
    cells: list[PaperCell], not_run: Mapping[Hashable, str] | None = None, part: str = PART
) -> list[X.Evaluation]:
    """The evaluations the comparison reads, each once: those of the cells whose project row is
    not marked in ``not_run``."""
    tables = RT.tables(part)
    out = []
    for cell in cells:
        table, row, ev = project_cell(cell, tables)
        if table.reason(row, not_run or {}) is None:
            out.append(ev)
    return list(dict.fromkeys(out))


def evaluation_inputs(
    not_run: Mapping[Hashable, str] | None = None,
    eval_root: str | os.PathLike = X.EVAL_ROOT,
    path: str | os.PathLike = PAPER_RESULTS,
) -> list[str]:
    """The workflow's inputs of the comparison: the evaluation folders of :func:`evaluations`
    (:func:`proofmatch.experiments.workflow_inputs`)."""
    return X.workflow_inputs(evaluations(read_paper_cells(path), not_run), eval_root)
