"""Checks of the workflow's final artifacts, shared by the CLI tests and the end-to-end test.

* Tables 3-6 and the baselines table: every MRR/Acc cell is read back from the CSV (full
  precision) and the Markdown (two decimals), mapped to the evaluation JSON it comes from by the
  path layout of docs/architecture.md (worked out here from the row and column labels, not with
  proofmatch.evaluation.tables), and must equal 100 x that JSON's value and lie in [0, 100]; a cell without
  a number ("–") is allowed only in a row whose note says why it was not run, and in the MRR
  columns of global decoding, which must have none.
* Table 7: the hubness counts of its dev evaluation.
* Each evaluation JSON agrees with its per-statement Parquet (MRR, accuracies, hubness), so a
  JSON value edited after the fact is caught even if a table were re-rendered from it.
* Figure 2: a PNG and a PDF of the size :func:`proofmatch.evaluation.panels.draw_panels` draws (11 in
  wide at 150 dpi; the PDF page the PNG's size) with the expected number of panels, counted from the grey
  "P(match) = ..." line that heads each panel's tokens.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd

from proofmatch.evaluation import bootstrap as B

LEVEL_BY_LABEL = {
    "Conservation": "conservation",
    "Partial": "partial",
    "Full": "full",
    "Transposition": "trans",
    "Partial+P": "partial_p",
    "Full+P": "full_p",
}
ENCODERS = {
    "NPT": "npt",
    "ScratchBERT": "scratchbert",
    "MathBERT": "mathbert",
    "SPECTER-style": "specter",
    "SPECTER-style (MathBERT)": "mathspecter",
}
VIEWS = {"Text": "text", "Math": "math", "Both": "both"}
SPLITS = {"Mixed": "mixed", "Unmixed": "unmixed"}
METHODS = {"TF-IDF": "tfidf", "TF-IDF (reference code)": "tfidf_paper", "BM25": "bm25"}
# Table 3 row suffix -> (training mode, decoding)
T3_ROWS = {
    "-Local-Local": ("local", "local"),
    "-Local-Global": ("local", "global"),
    "-Global-Global": ("hybrid", "global"),
    "-Triplet-Local": ("triplet", "local"),
    "-Triplet-Global": ("triplet", "global"),
    "-ZeroShot-Local": ("zeroshot", "local"),
    "-ZeroShot-Global": ("zeroshot", "global"),
    "-Frozen-Local": ("frozen", "local"),
    "-Frozen-Global": ("frozen", "global"),
}
# A fusion row of the baselines table and the folder name of a training mode.
FUSION_ROW = re.compile(
    r"(.+)-(Local|Global|Triplet|ZeroShot|Frozen) \+ BM25-(Local|Global) \(fusion, this project\)"
)
MODES = {
    "Local": "local",
    "Global": "hybrid",
    "Triplet": "triplet",
    "ZeroShot": "zeroshot",
    "Frozen": "frozen",
}
HUBNESS_ROWS = {"≥20": ">=20", "≥10": ">=10", "≥5": ">=5", "≥2": ">=2", "=1": "=1", "<1": "<1"}
FIGURE_WIDTH_PX = 11 * 150  # panels.draw_panels's width_in x dpi
EVAL_TABLES = ("table3", "table4", "table5", "table6", "baselines")


def eval_path(
    root: Path,
    split: str,
    encoder: str,
    mode: str,
    level: str,
    view: str,
    part: str,
    test_level: str,
) -> Path:
    return root / split / f"{encoder}-{mode}" / f"{level}-{view}" / f"{part}-{test_level}.json"


def _row_spec(table: str, row: pd.Series) -> tuple[str, str, str, str, str | None, str]:
    """(split, encoder, mode, view, train level or None = the column's level, decoding) of a row."""
    if table == "table3":
        label = row["Encoder-Decoder"]
        suffix = next(s for s in T3_ROWS if label.endswith(s))
        mode, decoding = T3_ROWS[suffix]
        return "mixed", ENCODERS[label[: -len(suffix)]], mode, "both", None, decoding
    if table == "table4":
        return (
            SPLITS[row["Split"]],
            "scratchbert",
            "local",
            "both",
            LEVEL_BY_LABEL[row["Training"]],
            "local",
        )
    if table == "table5":
        return "mixed", ENCODERS[row["Encoder"]], "local", VIEWS[row["Input"]], None, "local"
    if table == "table6":
        return "pr", "scratchbert", "local", "both", LEVEL_BY_LABEL[row["Training"]], "local"
    if table == "baselines":
        fusion = FUSION_ROW.fullmatch(row["Method"])
        if fusion:  # "NPT-Local + BM25-Global (fusion, this project)": evaluated as npt+bm25-local
            encoder, mode, decoding = fusion.groups()
            return "mixed", f"{ENCODERS[encoder]}+bm25", MODES[mode], "both", None, decoding.lower()
        method, decoding = row["Method"].rsplit("-", 1)
        if method.endswith("-ZeroShot"):  # a pretrained checkpoint untrained
            encoder = ENCODERS[method.removesuffix("-ZeroShot")]
            return "mixed", encoder, "zeroshot", "both", None, decoding.lower()
        return "mixed", METHODS[method], "none", "both", None, decoding.lower()
    raise ValueError(table)


def _markdown_rows(md: str) -> list[dict[str, str]]:
    """The body rows of the GitHub-style table in a rendered Markdown file, by column header."""
    lines = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in md.splitlines()
        if line.startswith("|")
    ]
    return [dict(zip(lines[0], row)) for row in lines[2:]]


def check_eval_table(tables: Path, table: str, eval_root: Path, part: str = "test") -> list[Path]:
    """Every MRR/Acc cell of one table against its evaluation JSON; return the JSONs read."""
    df = pd.read_csv(tables / f"{table}.csv", keep_default_na=False, na_values=[""])
    md_rows = _markdown_rows((tables / f"{table}.md").read_text())
    assert len(md_rows) == len(df), f"{table}: Markdown and CSV differ in rows"
    metric_cols = [c for c in df.columns if c.endswith((" MRR", " Acc"))]
    labels = [c for c in df.columns if c not in metric_cols and c != "Note"]
    assert metric_cols and len(df), f"{table} has no metric columns or rows"
    used = []
    for i, row in df.iterrows():
        split, enc, mode, view, train, decoding = _row_spec(table, row)
        not_run = str(row["Note"]).startswith("not run")
        for col in metric_cols:
            level = LEVEL_BY_LABEL[col.removeprefix("Test ").rsplit(" ", 1)[0]]
            metric = col.rsplit(" ", 1)[1]
            value, shown = row[col], md_rows[i][col]
            where = f"{table} row {i} ({' / '.join(map(str, row[labels]))}) column {col!r}"
            if metric == "MRR" and decoding == "global":
                assert pd.isna(value) and shown == "–", (
                    f"{where}: global decoding has no MRR, got {value!r}"
                )
                continue
            if pd.isna(value):
                assert shown == "–" and not_run, f"{where}: no number, and the row does not say why"
                continue
            path = eval_path(eval_root, split, enc, mode, train or level, view, part, level)
            assert path.is_file(), f"{where}: its evaluation {path} does not exist"
            result = json.loads(path.read_text())
            key = "mrr" if metric == "MRR" else "acc" if decoding == "local" else "global_acc"
            expected = 100.0 * result[key]
            assert 0.0 <= float(value) <= 100.0, f"{where}: {value} is not a percentage"
            assert math.isclose(float(value), expected, abs_tol=1e-9), (
                f"{where}: table says {value}, {path} says {key} = {result[key]}"
            )
            # the score, then its 95 % interval over the statements, as the CSV's bounds give it
            bounds = f"[{row[f'{col} lo']:.1f}, {row[f'{col} hi']:.1f}]"
            assert shown == f"{expected:.2f} {bounds}", (
                f"{where}: Markdown shows {shown}, expected {expected:.2f} {bounds}"
            )
            used.append(path)
    return used


def check_table7(tables: Path, eval_json: Path) -> None:
    """Table 7 is the hubness of its dev evaluation."""
    hub = json.loads(eval_json.read_text())["hubness"]
    df = pd.read_csv(tables / "table7.csv")
    assert list(df["Statements"]) == list(HUBNESS_ROWS)
    for _, row in df.iterrows():
        b = HUBNESS_ROWS[row["Statements"]]
        assert row["Proofs"] == hub[b]["proofs"] and math.isclose(row["%"], hub[b]["percent"]), (
            b,
            row,
            hub[b],
        )


def check_eval_json(path: Path) -> None:
    """An evaluation JSON agrees with its per-statement Parquet: MRR, accuracies and hubness."""
    m = json.loads(path.read_text())
    ranks = pd.read_parquet(path.with_suffix(".parquet"))
    n = len(ranks)
    assert m["n"] == n > 1, path
    for key in ("mrr", "acc", "global_acc"):
        assert 0.0 <= m[key] <= 1.0, (path, key, m[key])
    gold = ranks["gold_rank"].to_numpy()
    assert math.isclose(m["mrr"], float(np.mean(1.0 / gold)), abs_tol=1e-9), (path, "mrr")
    assert math.isclose(m["acc"], float(np.mean(gold == 1)), abs_tol=1e-9), (path, "acc")
    glob = float(np.mean(ranks["global_pred"] == ranks["pair_id"]))
    assert math.isclose(m["global_acc"], glob, abs_tol=1e-9), (path, "global_acc")
    assert ranks["global_pred"].is_unique, (path, "global decoding gave a proof twice")
    # the JSON's per-statement block (what the tables' intervals read) says what the Parquet says
    block = B.per_statement(m[B.STATEMENTS], path)
    assert list(block.index) == sorted(ranks["pair_id"]), (path, "statements block ids")
    by_id = ranks.set_index("pair_id").loc[block.index]
    assert np.array_equal(block["mrr"], 1.0 / by_id["gold_rank"]), (path, "statements block ranks")
    assert np.array_equal(block["acc"], by_id["top1"] == block.index), (
        path,
        "statements block top-1",
    )
    assert np.array_equal(block["global_acc"], by_id["global_pred"] == block.index), path
    times = ranks["top1"].value_counts().reindex(ranks["pair_id"], fill_value=0).to_numpy()
    expected = {
        ">=20": (times >= 20).sum(),
        ">=10": (times >= 10).sum(),
        ">=5": (times >= 5).sum(),
        ">=2": (times >= 2).sum(),
        "=1": (times == 1).sum(),
        "<1": (times == 0).sum(),
    }
    assert {b: m["hubness"][b]["proofs"] for b in expected} == expected, (path, "hubness")


def check_eval_tables(
    tables: Path, eval_root: Path, part: str = "test", table7_eval: Path | None = None
) -> int:
    """All of the above on a results tree; return the number of evaluation JSONs checked."""
    used = {p for table in EVAL_TABLES for p in check_eval_table(tables, table, eval_root, part)}
    if table7_eval is not None:
        check_table7(tables, table7_eval)
        used.add(table7_eval)
    for path in sorted(used):
        check_eval_json(path)
    return len(used)


# ----------------------------------------------------------------------------- Figure 2


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def pdf_page_size(path: Path) -> tuple[float, float]:
    data = path.read_bytes()
    assert data[:5] == b"%PDF-", f"{path} is not a PDF"
    boxes = re.findall(rb"/MediaBox \[ *0 0 ([\d.]+) ([\d.]+) *\]", data)
    assert len(boxes) == 1, f"{path}: expected one page, found {len(boxes)}"
    return float(boxes[0][0]), float(boxes[0][1])


def panel_count(png: Path) -> int:
    """Panels of a Figure 2 PNG: each has one grey "P(match) = ..." line, the only ink whose
    darkest pixel is the 0.35 grey of panels.draw_panels (titles and tokens are black)."""
    rgb = mpimg.imread(str(png))[..., :3]
    gray, sat = rgb.mean(axis=2), rgb.max(axis=2) - rgb.min(axis=2)
    ink = gray.min(axis=1) < 0.98
    edges = np.flatnonzero(np.diff(np.r_[0, ink.astype(np.int8), 0]))
    bands = zip(edges[::2], edges[1::2])
    return sum(1 for a, b in bands if 0.3 < gray[a:b].min() < 0.4 and sat[a:b].max() < 0.05)


def check_figure(png: Path, pdf: Path, panels: int) -> None:
    """PNG and PDF of the rendered size, with ``panels`` panels and highlighted tokens (the
    strongest token of a panel is drawn fully opaque, orange or blue)."""
    width, height = png_size(png)
    assert width == FIGURE_WIDTH_PX and height > 100 * panels, (width, height)
    w_pt, h_pt = pdf_page_size(pdf)
    assert math.isclose(w_pt, 11 * 72, abs_tol=0.5) and math.isclose(
        h_pt, height / 150 * 72, abs_tol=1.0
    ), (w_pt, h_pt, height)
    assert panel_count(png) == panels
    rgb = mpimg.imread(str(png))[..., :3]
    assert (rgb.max(axis=2) - rgb.min(axis=2) > 0.5).any(), "no token is highlighted"
