"""This run set beside the paper's Tables 3-6 (proofmatch.evaluation.comparison) on a tiny paper
file and a few evaluation JSONs."""

from __future__ import annotations

import csv
import re

import pandas as pd
import pytest

from proofmatch import experiments as X
from proofmatch.artifacts import write_json
from proofmatch.evaluation import comparison as C
from proofmatch.evaluation import paper as P


def write_paper(path, rows) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(P.COLUMNS)
        w.writerows(rows)


# A tiny paper: two NPT cells, a MathBERT cell (not run), a Table 4 Unmixed cell, a Table 5 cell.
TINY = [
    [
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
    ],
    [
        "table3",
        "NPT-Local-Global",
        "Conservation Acc",
        "mixed",
        "npt",
        "local",
        "global",
        "conservation",
        "both",
        "conservation",
        "acc",
        "61.89",
    ],
    [
        "table3",
        "MathBERT-Local-Local",
        "Full Acc",
        "mixed",
        "mathbert",
        "local",
        "local",
        "full",
        "both",
        "full",
        "acc",
        "30.62",
    ],
    [
        "table4",
        "Unmixed / Partial",
        "Full Acc",
        "unmixed",
        "scratchbert",
        "local",
        "local",
        "partial",
        "both",
        "full",
        "acc",
        "39.94",
    ],
    [
        "table5",
        "NPT / Text",
        "Full MRR",
        "mixed",
        "npt",
        "local",
        "local",
        "full",
        "text",
        "full",
        "mrr",
        "22.51",
    ],
]
NOT_RUN = {"mathbert": X.NOT_RUN_MATHBERT}


def metrics(n: int, mrr: float, acc: float, gacc: float) -> dict:
    return {"n": n, "mrr": mrr, "acc": acc, "global_acc": gacc, "part": "test"}


def tiny_results(tmp_path) -> tuple[list[str], str]:
    """The tiny paper's evaluation JSONs under tmp_path/eval; returns their paths and the paper CSV."""
    write_paper(tmp_path / "paper.csv", TINY)
    root = tmp_path / "eval"
    given = {
        X.Run("mixed", "npt", "local", "conservation").evaluation("test"): metrics(
            120, 0.7000, 0.6, 0.6500
        ),
        X.Run("unmixed", "scratchbert", "local", "partial").evaluation("test", "full"): metrics(
            50, 0.5, 0.4, 0.45
        ),
        X.Run("mixed", "npt", "local", "full", "text").evaluation("test"): metrics(
            120, 0.2, 0.1, 0.15
        ),
    }
    for ev, m in given.items():
        write_json(m, ev.path(root))
    return [str(ev.folder(root)) for ev in given], str(tmp_path / "paper.csv")


def test_comparison_maps_differs_and_marks_not_run(tmp_path):
    inputs, paper_csv = tiny_results(tmp_path)
    write_json(
        {"articles_kept": 51, "kept": 1984, "articles_in": 51}, tmp_path / "filter_report.json"
    )
    # the workflow's inputs: the cells' evaluation folders without the rows not run (MathBERT), each once
    assert sorted(P.evaluation_inputs(NOT_RUN, tmp_path / "eval", paper_csv)) == sorted(inputs)
    md, out_csv = tmp_path / "cmp.md", tmp_path / "cmp.csv"
    df = C.comparison_from_inputs(
        inputs,
        paper_csv,
        tmp_path / "filter_report.json",
        md,
        out_csv,
        "dir",
        ["corpora/a/xhtml", "corpora/b/xhtml"],
        NOT_RUN,
        eval_root=tmp_path / "eval",
    )
    assert df.columns.tolist() == C.COLUMNS
    assert df["Row"].tolist() == [r[1] for r in TINY]
    assert df["This run"].iloc[[0, 1, 3, 4]].tolist() == pytest.approx([70.0, 65.0, 40.0, 20.0])
    assert df["Difference"].iloc[[0, 1, 3, 4]].tolist() == pytest.approx(
        [70 - 63.22, 65 - 61.89, 40 - 39.94, 20 - 22.51]
    )
    # global decoding's accuracy fills a *-Global row's Acc, not the local one (60.0)
    assert df.loc[1, "This run"] == pytest.approx(65.0)
    mb = df.loc[2]
    assert mb["Paper"] == 30.62 and pd.isna(mb["This run"]) and pd.isna(mb["Difference"])
    assert mb["Note"] == X.NOT_RUN_MATHBERT and (df.drop(index=2)["Note"] == "").all()
    text = md.read_text()
    caption = text.split("\n\n")[0]
    assert "XHTML articles in corpora/a/xhtml, corpora/b/xhtml" in caption
    assert "51 articles with 1,984 statement-proof pairs after filtering" in caption
    # each split's pool with the MRR of ranking it at random (H_n / n)
    assert "Mixed n = 120, chance MRR 4.47; Unmixed n = 50, chance MRR 9.00" in caption
    assert "18,408" in caption
    rows = [re.sub(r" *\| *", "|", line).strip() for line in text.splitlines()]
    assert "|Table 3|NPT-Local-Local|Conservation MRR|63.22|70.00|6.78||" in rows
    assert "|Table 5|NPT / Text|Full MRR|22.51|20.00|-2.51||" in rows
    assert f"|Table 3|MathBERT-Local-Local|Full Acc|30.62|–|–|{X.NOT_RUN_MATHBERT}|" in rows
    csv_df = pd.read_csv(out_csv, keep_default_na=False)
    assert float(csv_df.loc[0, "Difference"]) == pytest.approx(70 - 63.22)  # full precision
    assert csv_df.loc[2, "This run"] == "" and csv_df.loc[2, "Note"] == X.NOT_RUN_MATHBERT


def test_comparison_errors(tmp_path):
    inputs, paper_csv = tiny_results(tmp_path)
    report = tmp_path / "filter_report.json"
    write_json({"articles_kept": 3, "kept": 30}, report)
    out = (tmp_path / "c.md", tmp_path / "c.csv")
    # inputs that are not the cells' evaluations
    with pytest.raises(ValueError, match="1 absent"):
        C.comparison_from_inputs(
            inputs[:-1], paper_csv, report, *out, "demo", None, NOT_RUN, eval_root=tmp_path / "eval"
        )
    # MathBERT not marked not run: its result is missing
    cells = P.read_paper_cells(paper_csv)
    results = {ev: ev.path(tmp_path / "eval") for ev in P.evaluations(cells, NOT_RUN)}
    with pytest.raises(KeyError, match="1 result"):
        C.compare(cells, results, {})
    # two test pools within one split
    write_json(
        metrics(99, 0.5, 0.5, 0.5),
        X.Run("mixed", "npt", "local", "full", "text").evaluation("test").path(tmp_path / "eval"),
    )
    with pytest.raises(ValueError, match="different numbers of test pairs"):
        C.compare(cells, results, NOT_RUN)


def test_corpus_label():
    assert C.corpus_label("demo", None) == "the project's generated demo corpus"
    assert C.corpus_label("dir", "corpora/stacks/xhtml") == "XHTML articles in corpora/stacks/xhtml"
    assert C.corpus_label("latex", ["src"]).startswith("LaTeX sources in src")
    with pytest.raises(ValueError, match="needs corpus.dir"):
        C.corpus_label("dir", None)
    assert "Unmixed not run" in C.caption("x", 1, 2, {"mixed": 10}, ["mixed", "unmixed"])


def test_comparison_sets_table6_beside_the_paper_when_the_pr_split_ran(tmp_path):
    """The paper's 20 Table 6 cells: this run's numbers when the pr split ran, the paper's value and
    the reason when it did not."""
    cells = [c for c in P.read_paper_cells() if c.table == "table6"]
    assert len(cells) == 20
    results = {}
    for ev in P.evaluations(cells):
        write_json(metrics(40, 0.5, 0.25, 0.3), ev.path(tmp_path / "eval"))
        results[ev] = ev.path(tmp_path / "eval")
    assert len(results) == 10 and {ev.split for ev in results} == {"pr"}
    df, pools = C.compare(cells, results)
    assert (df["Table"] == "Table 6").all() and pools == {"pr": 40}
    row = df[(df["Row"] == "Partial+P") & (df["Column"] == "Test Conservation MRR")].iloc[0]
    assert row["Paper"] == 62.1 and row["This run"] == pytest.approx(50.0)
    assert row["Difference"] == pytest.approx(50.0 - 62.1)
    assert df[df["Column"].str.endswith("Acc")]["This run"].tolist() == pytest.approx([25.0] * 10)
    # no pr split: no evaluation is read and every cell shows the paper's value and the reason
    assert P.evaluations(cells, {"pr": X.NOT_RUN_PR}) == []
    df, _ = C.compare(cells, {}, {"pr": X.NOT_RUN_PR})
    assert df["This run"].isna().all() and (df["Note"] == X.NOT_RUN_PR).all()
    assert "Table 6 rows: training level" in C.caption("x")
