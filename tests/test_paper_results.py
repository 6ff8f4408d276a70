"""The paper's Tables 3-5 as one data file (proofmatch/evaluation/paper_results.csv) and the
project cell each number is (proofmatch.evaluation.paper)."""

from __future__ import annotations

import csv

import pytest

from proofmatch import experiments as X
from proofmatch.evaluation import paper as P

METRIC_NAMES = {"mrr": "MRR", "acc": "Acc"}  # the tables' column suffixes


def expected_cells() -> set[tuple]:
    """Every cell of the project's Tables 3-5 that the paper has: all but the SPECTER-style rows
    (this project's addition), MRR only where decoding is local."""
    out = set()
    for name in P.TABLES:
        for row in X.tables()[name].rows:
            for ev in row.cells:
                if ev.model == "specter":
                    continue
                for metric in P.METRICS:
                    if metric == "acc" or row.decoding == "local":
                        out.add((name, ev.split, ev.model, ev.mode, row.decoding, ev.level, ev.view, ev.test_level,
                                 metric))
    return out


def test_paper_results_cover_every_reported_cell_once():
    cells = P.read_paper_cells()
    keys = [c.key for c in cells]
    assert len(keys) == len(set(keys)) == 136
    assert {t: sum(c.table == t for c in cells) for t in P.TABLES} == {"table3": 48, "table4": 64, "table5": 24}
    assert set(keys) == expected_cells()
    tables = X.tables()
    for cell in cells:
        table, row, ev = P.project_cell(cell, tables)
        # the paper's labels are the project's labels of the cell found by identifiers
        assert cell.row == " / ".join(row.labels), cell
        assert cell.column == f"{table.groups[row.cells.index(ev)]} {METRIC_NAMES[cell.metric]}"


def test_paper_results_values():
    value = {(c.table, c.row, c.column): c.value for c in P.read_paper_cells()}
    assert value["table3", "ScratchBERT-Local-Local", "Conservation MRR"] == 73.73
    assert value["table3", "NPT-Global-Global", "Transposition Acc"] == 55.28
    assert value["table3", "MathBERT-Global-Global", "Full Acc"] == 28.47
    assert value["table4", "Unmixed / Transposition", "Conservation MRR"] == 67.5
    assert value["table4", "Unmixed / Conservation", "Full Acc"] == 3.68
    assert value["table4", "Mixed / Full", "Partial MRR"] == 63.01
    assert value["table5", "NPT / Math", "Conservation MRR"] == 65.08
    assert value["table5", "ScratchBERT / Text", "Full Acc"] == 29.18
    # the paper repeats cells across its tables: the transcriptions must agree
    for level in ("Conservation", "Partial", "Full", "Transposition"):
        for metric in ("MRR", "Acc"):
            col = f"{level} {metric}"
            assert value["table4", f"Mixed / {level}", col] == value["table3", "ScratchBERT-Local-Local", col]
    for enc in ("NPT", "ScratchBERT"):
        for col in ("Conservation MRR", "Conservation Acc", "Full MRR", "Full Acc"):
            assert value["table5", f"{enc} / Both", col] == value["table3", f"{enc}-Local-Local", col]


def write_paper(path, rows) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(P.COLUMNS)
        w.writerows(rows)


def test_read_paper_cells_rejects_duplicates_and_bad_cells(tmp_path):
    row = ["table3", "NPT-Local-Local", "Conservation MRR", "mixed", "npt", "local", "local", "conservation", "both",
           "conservation", "mrr", "63.22"]
    write_paper(tmp_path / "dup.csv", [row, [*row[:2], "Other", *row[3:]]])
    with pytest.raises(ValueError, match="repeats the project cell"):
        P.read_paper_cells(tmp_path / "dup.csv")
    write_paper(tmp_path / "mrr.csv", [[*row[:6], "global", *row[7:]]])
    with pytest.raises(ValueError, match="global decoding has no MRR"):
        P.read_paper_cells(tmp_path / "mrr.csv")
    write_paper(tmp_path / "mode.csv", [[*row[:5], "triplet", *row[6:]]])
    with pytest.raises(ValueError, match="not trained in mode"):
        P.read_paper_cells(tmp_path / "mode.csv")
    # well-formed identifiers that name no cell of the table
    write_paper(tmp_path / "none.csv", [["table5", "NPT / Both", "Partial MRR", *row[3:7], "partial", "both",
                                         "partial", "mrr", "1"]])
    (cell,) = P.read_paper_cells(tmp_path / "none.csv")
    with pytest.raises(KeyError, match="0 rows"):
        P.project_cell(cell, X.tables())
