"""The paper's Tables 3-6 as one data file (proofmatch/evaluation/paper_results.csv) and the
project cell each number is (proofmatch.evaluation.paper)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from proofmatch import result_tables as RT
from proofmatch.evaluation import paper as P

METRIC_NAMES = {"mrr": "MRR", "acc": "Acc"}  # the tables' column suffixes


def expected_cells() -> set[tuple]:
    """Every cell of the project's Tables 3-6 that the paper has: all but the SPECTER-style rows
    and a pretrained checkpoint's zero-shot and frozen rows (this project's additions), MRR only
    where decoding is local."""
    out = set()
    for name in P.TABLES:
        for row in RT.tables()[name].rows:
            for ev in row.cells:
                if ev.mode in ("triplet", "zeroshot", "frozen"):
                    continue  # this project's additions: SPECTER-style, untrained/frozen checkpoints
                for metric in P.METRICS:
                    if metric == "acc" or row.decoding == "local":
                        out.add(
                            (
                                name,
                                ev.split,
                                ev.model,
                                ev.mode,
                                row.decoding,
                                ev.level,
                                ev.view,
                                ev.test_level,
                                metric,
                            )
                        )
    return out


def test_paper_results_cover_every_reported_cell_once():
    cells = P.read_paper_cells()
    keys = [c.key for c in cells]
    assert len(keys) == len(set(keys)) == 156
    assert {t: sum(c.table == t for c in cells) for t in P.TABLES} == {
        "table3": 48,
        "table4": 64,
        "table5": 24,
        "table6": 20,
    }
    assert set(keys) == expected_cells()
    tables = RT.tables()
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
            assert (
                value["table4", f"Mixed / {level}", col]
                == value["table3", "ScratchBERT-Local-Local", col]
            )
    for enc in ("NPT", "ScratchBERT"):
        for col in ("Conservation MRR", "Conservation Acc", "Full MRR", "Full Acc"):
            assert (
                value["table5", f"{enc} / Both", col] == value["table3", f"{enc}-Local-Local", col]
            )


# The paper's Table 6 as the seed text prints it (its §9.4; rows: training level, column groups: test
# level Conservation and Partial+P, MRR and Acc each).
SEED = Path(__file__).resolve().parents[1].parent / "shared" / "seeds" / "000_eb07311c39273850.txt"
TABLE6_TEXT = """\
Conservation\t69.26\t59.59\t27.9\t18.29
Partial\t61.36\t51.72\t54.06\t42.67
Partial+P\t62.1\t51.92\t55.92\t45.23
Full\t53.63\t42.08\t52.85\t41.4
Full+P\t56.27\t45.13\t55.92\t44.84
"""


def test_paper_results_table6_is_the_papers_table():
    """The 20 Table 6 values of paper_results.csv are the paper's, cell by cell."""
    value = {(c.row, c.column): c for c in P.read_paper_cells() if c.table == "table6"}
    assert len(value) == 20
    for line in TABLE6_TEXT.splitlines():
        row, *numbers = line.split("\t")
        for (group, metric), number in zip(
            [(g, m) for g in ("Conservation", "Partial+P") for m in ("MRR", "Acc")], numbers
        ):
            cell = value[row, f"Test {group} {metric}"]
            assert cell.value == float(number), cell
            assert (cell.split, cell.model, cell.mode, cell.decoding, cell.view) == (
                "pr",
                "scratchbert",
                "local",
                "local",
                "both",
            )


def test_table6_text_is_the_seeds():
    """TABLE6_TEXT is copied from the seed (the paper's text), when the seed is at hand."""
    if not SEED.exists():
        pytest.skip(f"{SEED} is absent")
    text = SEED.read_text(encoding="utf-8")
    assert TABLE6_TEXT in text
    assert text.index(TABLE6_TEXT) < text.index(
        "Table 6: Controlled cross-replacement levels performance"
    )


def write_paper(path, rows) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(P.COLUMNS)
        w.writerows(rows)


def test_read_paper_cells_rejects_duplicates_and_bad_cells(tmp_path):
    row = [
        "table3",
        "NPT-Local-Local",
        "Conservation MRR",
        "mixed",
        "npt",
        "local",
        "local",
        "conservation",
        "both",
        "conservation",
        "mrr",
        "63.22",
    ]
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
    write_paper(
        tmp_path / "none.csv",
        [
            [
                "table5",
                "NPT / Both",
                "Partial MRR",
                *row[3:7],
                "partial",
                "both",
                "partial",
                "mrr",
                "1",
            ]
        ],
    )
    (cell,) = P.read_paper_cells(tmp_path / "none.csv")
    with pytest.raises(KeyError, match="0 rows"):
        P.project_cell(cell, RT.tables())
