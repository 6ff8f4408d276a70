"""Tables 3-7 and the baselines table (proofmatch.evaluation.tables) from small evaluation JSONs."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from proofmatch import experiments as X
from proofmatch import result_tables as RT
from proofmatch.artifacts import write_json
from proofmatch.config import validate_config
from proofmatch.evaluation import bootstrap as B
from proofmatch.evaluation import captions as CAP
from proofmatch.evaluation import intervals as I
from proofmatch.evaluation import tables as T


def metrics(mrr: float, acc: float, gacc: float) -> dict:
    hub = {b: {"proofs": i + 1, "percent": 10.0 * (i + 1)} for i, b in enumerate(X.HUBNESS_BINS)}
    return {"n": 100, "mrr": mrr, "acc": acc, "global_acc": gacc, "part": "dev", "hubness": hub}


def write_eval(m: dict, path, n: int = 12) -> None:
    """An evaluation's JSON with the per-statement block the intervals read."""
    ids = [f"p{i:02d}" for i in range(n)]
    top1 = [i if i % 3 == 0 else 0 for i in range(n)]
    block = B.statements_block(ids, [1 + i % 3 for i in range(n)], top1, list(range(n)))
    write_json({**m, B.STATEMENTS: block}, path)


def compact(md: str) -> str:
    """Markdown with the column padding removed: ``| a | b |`` however wide the columns are."""
    return "\n".join(re.sub(r" *\| *", " | ", line).strip() for line in md.splitlines())


def read(prefix) -> tuple[str, str, pd.DataFrame]:
    return (
        compact(prefix.with_suffix(".md").read_text()),
        prefix.with_suffix(".tex").read_text(),
        pd.read_csv(prefix.with_suffix(".csv")),
    )


def fused(m: dict, weight: float = 1.5) -> dict:
    """An evaluation JSON of a fusion: the metrics and the weight it was scored with."""
    return {**m, "weight": weight, "normalize": "zscore", "lexical": "bm25"}


def fill(table: RT.Table, value, keep=lambda ev: True) -> dict:
    """Every evaluation of ``table`` that ``keep`` accepts, with the metrics ``value(ev)``."""
    return {ev: value(ev) for row in table.rows for ev in row.cells if keep(ev)}


def test_table3_rows_percentages_and_not_run(tmp_path):
    table = RT.table3()
    results = fill(
        table, lambda ev: metrics(0.6322, 0.5608, 0.6189), lambda ev: ev.model != "mathbert"
    )
    # one result given as a JSON path
    path = tmp_path / "npt-local-conservation.json"
    write_json(metrics(0.1234, 0.0567, 0.5), path)
    results[X.Run("mixed", "npt", "local", "conservation").evaluation("test")] = path
    reason = "no MathBERT checkpoint configured (matching.mathbert)"
    df = T.render_table(table, results, tmp_path / "table3", not_run={"mathbert": reason})
    md, tex, csv = read(tmp_path / "table3")
    assert df["Encoder-Decoder"].tolist() == [
        "NPT-Local-Local",
        "NPT-Local-Global",
        "NPT-Global-Global",
        "ScratchBERT-Local-Local",
        "ScratchBERT-Local-Global",
        "ScratchBERT-Global-Global",
        "MathBERT-ZeroShot-Local",
        "MathBERT-ZeroShot-Global",
        "MathBERT-Frozen-Local",
        "MathBERT-Frozen-Global",
        "MathBERT-Local-Local",
        "MathBERT-Local-Global",
        "MathBERT-Global-Global",
        "SPECTER-style-Triplet-Local",
        "SPECTER-style-Triplet-Global",
        "SPECTER-style (MathBERT)-Triplet-Local",
        "SPECTER-style (MathBERT)-Triplet-Global",
    ]
    assert "| NPT-Local-Local | 12.34 | 5.67 | 63.22 | 56.08 |" in md
    assert "| NPT-Local-Global | – | 50.00 | – | 61.89 |" in md
    assert f"not run: {reason}" in md and "not run" in tex
    mb = df[df["Encoder-Decoder"] == "MathBERT-Local-Local"].iloc[0]
    assert mb.drop(["Encoder-Decoder", "Note"]).isna().all()
    assert csv.shape == (17, 1 + 8 + 1)
    # the workflow's inputs are the table's evaluations without the rows not run
    assert set(table.evaluations({"mathbert": reason})) == {ev for ev in results}


def test_table3_missing_result_without_reason_is_an_error(tmp_path):
    with pytest.raises(KeyError, match="Table 3: .* missing"):
        T.render_table(
            RT.table3(),
            {},
            tmp_path / "t3",
            not_run={"npt": "x", "scratchbert": "y", "mathbert": "z"},
        )
    # a mode-specific reason covers just that mode
    table = RT.table3(encoders=("npt",))
    results = fill(table, lambda ev: metrics(0.5, 0.4, 0.45), lambda ev: ev.mode == "local")
    df = T.render_table(
        table,
        results,
        tmp_path / "t3",
        not_run={("npt", "hybrid"): "global training not configured"},
    )
    assert df["Note"].tolist() == ["", "", "not run: global training not configured"]


def test_table4_cross_levels_with_not_run_split(tmp_path):
    table = RT.table4()
    results = fill(
        table,
        lambda ev: metrics(0.7373 if ev.level == ev.test_level else 0.2974, 0.6712, 0.7),
        lambda ev: ev.split == "mixed",
    )
    df = T.render_table(
        table, results, tmp_path / "table4", not_run={"unmixed": "unmixed runs disabled"}
    )
    md, _, _ = read(tmp_path / "table4")
    assert len(df) == 8 and df["Split"].tolist()[:4] == ["Mixed"] * 4
    assert "| Mixed | Conservation | 73.73 | 67.12 | 29.74 |" in md
    assert md.count("not run: unmixed runs disabled") == 4


def test_table5_views_with_not_run_row(tmp_path):
    table = RT.table5()
    results = fill(table, lambda ev: metrics(0.2251, 0.1668, 0.2), lambda ev: ev.model == "npt")
    results.update(
        fill(
            table,
            lambda ev: metrics(0.3685, 0.2918, 0.3),
            lambda ev: ev.model == "scratchbert" and ev.view != "math",
        )
    )
    df = T.render_table(
        table,
        results,
        tmp_path / "table5",
        not_run={("scratchbert", "math"): "math view not trained"},
    )
    md, _, _ = read(tmp_path / "table5")
    assert df[["Encoder", "Input"]].values.tolist()[:3] == [
        ["NPT", "Text"],
        ["NPT", "Math"],
        ["NPT", "Both"],
    ]
    assert "| NPT | Text | 22.51 | 16.68 | 22.51 | 16.68 |  |" in md
    assert "| ScratchBERT | Math | – | – | – | – | not run: math view not trained |" in md


def test_table6_rows_are_training_levels_columns_protected_test_levels(tmp_path):
    """Paper Table 6: rows Conservation, Partial, Partial+P, Full, Full+P (training); column groups
    Conservation and Partial+P (test), MRR and Acc each."""
    paper = {
        "conservation": (69.26, 59.59, 27.9, 18.29),
        "partial": (61.36, 51.72, 54.06, 42.67),
        "full": (53.63, 42.08, 52.85, 41.4),
        "full_p": (56.27, 45.13, 55.92, 44.84),
    }
    results = {}
    for tr, (m1, a1, m2, a2) in paper.items():
        run = X.Run("pr", "scratchbert", "local", tr)
        results[run.evaluation("test", "conservation")] = metrics(m1 / 100, a1 / 100, 0.0)
        results[run.evaluation("test", "partial_p")] = metrics(m2 / 100, a2 / 100, 0.0)
    table = RT.table6()
    df = T.render_table(
        table, results, tmp_path / "table6", not_run={"partial_p": "not run: no math.PR articles"}
    )
    md, tex, csv = read(tmp_path / "table6")
    assert RT.TABLE6_TRAIN == ("conservation", "partial", "partial_p", "full", "full_p")
    assert RT.TABLE6_TEST == ("conservation", "partial_p")
    assert df["Training"].tolist() == ["Conservation", "Partial", "Partial+P", "Full", "Full+P"]
    assert list(df.columns) == [
        "Training",
        "Test Conservation MRR",
        "Test Conservation Acc",
        "Test Partial+P MRR",
        "Test Partial+P Acc",
        "Note",
    ]
    assert "| Conservation | 69.26 | 59.59 | 27.90 | 18.29 |  |" in md
    assert "| Full+P | 56.27 | 45.13 | 55.92 | 44.84 |  |" in md
    assert "| Partial+P | – | – | – | – | not run: no math.PR articles |" in md
    assert "Rows: training level" in md and "Table 6" in tex and csv.shape == (5, 6)
    # a training level without results and without a reason is an error, not an empty row
    with pytest.raises(KeyError, match="Table 6: 2 result"):
        T.render_table(table, results, tmp_path / "t6")


def test_captions_are_filled_from_the_config_once(tmp_path):
    """The caption that heads a table's .md and .tex is the one the HTML report shows (the rule's
    params.caption, table_caption of the run's config): Table 6 names the configured protected
    symbols, not the default's."""
    default = validate_config({})
    assert "+P: the protected symbols P, E, V, σ, ρ are not replaced." in CAP.table_caption(
        "table6", default
    )
    mine = validate_config({"replace": {"protected": ["P", "Q"]}})
    caption = CAP.table_caption("table6", mine)
    assert "+P: the protected symbols P, Q are not replaced." in caption and "σ" not in caption
    results = fill(RT.table6(), lambda ev: metrics(0.5, 0.4, 0.3))
    T.render_table(RT.table6(), results, tmp_path / "table6", config=mine)
    # rendered from loaded metrics (no per-statement file) it has no intervals, so no sentence on
    # them; it counts its pool (the evaluations' n), which the report's caption only names
    counted = CAP.table_caption("table6", mine, pools={"pr": 100})
    assert (tmp_path / "table6.md").read_text().split("\n\n")[0] == counted.removesuffix(
        I.caption(mine["report"]["resamples"])
    )
    assert "Probability (Unmixed) n = 100, chance MRR 5.19." in counted
    assert "Pool: each statement's proof is ranked among all test proofs of its split" in caption
    assert caption.endswith(I.caption(mine["report"]["resamples"]))  # the workflow's always do
    assert "P, Q are not replaced" in (tmp_path / "table6.tex").read_text()
    # Table 7 counts its proofs once rendered; the report's caption, planned before, says "the proofs"
    T.hubness_table(metrics(0.5, 0.4, 0.45), tmp_path / "table7")
    assert (tmp_path / "table7.md").read_text().split("\n\n")[0] == CAP.hubness_caption("dev", 100)
    assert CAP.table_caption("table7", mine) == CAP.hubness_caption("dev")
    assert "distribution of the proofs of the dev set" in CAP.hubness_caption("dev")
    assert "the 100 proofs of the dev set" in CAP.hubness_caption("dev", 100)
    assert [CAP.table_caption(name, mine) for name in ("table1", "table2")] == [
        RT.TABLES["table1"].caption,
        RT.TABLES["table2"].caption,
    ]
    # the baselines' caption explains fusion rows only when the config fuses runs (fusion.runs)
    assert CAP.FUSION_CAPTION in CAP.table_caption("baselines", default)
    assert CAP.FUSION_CAPTION not in CAP.table_caption(
        "baselines", validate_config({"fusion": {"runs": []}})
    )
    # Table 3 says which of the SPECTER-style choices are SPECTER's (matching.specter)
    assert "margin 1)" in CAP.table_caption(
        "table3", default
    ) and "mean-pooled (not SPECTER's [CLS]" in CAP.table_caption("table3", default)
    cls = CAP.table_caption(
        "table3", validate_config({"matching": {"specter": {"pooling": "cls", "margin": 0.5}}})
    )
    assert (
        "the [CLS] vector (SPECTER's)" in cls and "margin 0.5)" in cls and "mean-pooled" not in cls
    )
    with pytest.raises(ValueError, match="no caption for table 'table9'"):
        CAP.table_caption("table9", mine)


def test_chance_mrr_is_the_harmonic_number_over_the_pool():
    """A random ranking of n proofs puts the gold one at each rank with probability 1/n: its MRR is
    H_n / n (1 for one proof, 3/4 for two, 25/48 for four), and a table's caption gives it per
    split, a split without results "not run"."""
    assert [CAP.chance_mrr(n) for n in (1, 2, 4)] == pytest.approx([1.0, 0.75, 25 / 48])
    assert CAP.chance_mrr(18408) == pytest.approx(sum(1 / k for k in range(1, 18409)) / 18408)
    with pytest.raises(ValueError, match="at least one proof"):
        CAP.chance_mrr(0)
    text = CAP.pool_caption(RT.table4(), {"mixed": 1234})
    assert text.endswith("Mixed n = 1,234, chance MRR 0.62; Unmixed not run."), text
    assert "(Mixed, Unmixed)" in CAP.pool_caption(RT.table4(), None)
    with pytest.raises(ValueError, match="different numbers of test pairs"):
        CAP.pool_sizes({ev: {"n": 10 + i} for i, ev in enumerate(RT.table3().rows[0].cells)})


def test_table7_hubness_from_json(tmp_path):
    path = tmp_path / "dev.json"
    write_json(metrics(0.5, 0.4, 0.45), path)
    df = T.hubness_table(path, tmp_path / "table7")
    md, _, csv = read(tmp_path / "table7")
    assert df["Statements"].tolist() == ["≥20", "≥10", "≥5", "≥2", "=1", "<1"]
    assert df["Proofs"].tolist() == [1, 2, 3, 4, 5, 6]
    assert "| ≥20 | 1 | 10.00 |" in md and "100 proofs of the dev set" in md
    assert "Pool: n = 100, chance MRR 5.19" in md
    with pytest.raises(ValueError, match="hubness"):
        T.hubness_table({"mrr": 1, "acc": 1, "global_acc": 1}, tmp_path / "bad")


def test_baselines_table_with_not_run_method(tmp_path):
    table = RT.baselines(fusion=())
    results = fill(table, lambda ev: metrics(0.298, 0.114, 0.2), lambda ev: ev.model != "bm25")
    df = T.render_table(
        table, results, tmp_path / "baselines", not_run={"bm25": "rank_bm25 not installed"}
    )
    md, _, _ = read(tmp_path / "baselines")
    assert df["Method"].tolist() == [
        "TF-IDF-Local",
        "TF-IDF-Global",
        "TF-IDF (reference code)-Local",
        "TF-IDF (reference code)-Global",
        "BM25-Local",
        "BM25-Global",
        "MathBERT-ZeroShot-Local",
        "MathBERT-ZeroShot-Global",
    ]
    assert "| TF-IDF-Local | 29.80 | 11.40 |" in md and "| TF-IDF-Global | – | 20.00 |" in md
    assert md.count("not run: rank_bm25 not installed") == 2


def test_baselines_table_fusion_rows(tmp_path):
    """Each fused run: a Local and a Global row marked as this project's, one cell per level from
    the run trained and tested there; a run not made (MathBERT) says not run; the caption says how
    λ was chosen and which λ each cell used."""
    table = RT.baselines(fusion=[("npt", "local"), ("mathbert", "local")])
    labels = [row.labels[0] for row in table.rows]
    assert labels[6:8] == ["MathBERT-ZeroShot-Local", "MathBERT-ZeroShot-Global"]
    assert labels[8:] == [
        "NPT-Local + BM25-Local (fusion, this project)",
        "NPT-Local + BM25-Global (fusion, this project)",
        "MathBERT-Local + BM25-Local (fusion, this project)",
        "MathBERT-Local + BM25-Global (fusion, this project)",
    ]
    npt_row = table.rows[8]
    assert [str(ev.path()) for ev in npt_row.cells] == [
        f"results/eval/mixed/npt+bm25-local/{lv}-both/test-{lv}.json" for lv in X.LEVELS
    ]
    assert all(
        ev.fused and ev.run() == X.Run("mixed", "npt", "local", ev.level) for ev in npt_row.cells
    )
    not_run = {"mathbert": X.NOT_RUN_MATHBERT}
    assert len(table.evaluations(not_run)) == 12 + 4
    weights = dict(zip(X.LEVELS, (0.5, 1.0, 2.0, 0.0)))
    results = fill(
        table,
        lambda ev: (
            fused(metrics(0.6, 0.5, 0.55), weights[ev.level])
            if ev.fused
            else metrics(0.3, 0.2, 0.25)
        ),
        lambda ev: ev.model not in ("mathbert+bm25", "mathbert"),
    )
    df = T.render_table(table, results, tmp_path / "baselines", not_run=not_run)
    md, _, _ = read(tmp_path / "baselines")
    assert "| NPT-Local + BM25-Local (fusion, this project) | 60.00 | 50.00 | 60.00 |" in md
    assert "| NPT-Local + BM25-Global (fusion, this project) | – | 55.00 |" in md
    # MathBERT's zero-shot and fused rows: not run
    assert md.count(X.NOT_RUN_MATHBERT) == 4 and (df["Note"].iloc[:6] == "").all()
    assert (df["Note"].iloc[8:10] == "").all()
    assert "this project's addition" in md and "chosen per trained run on its own dev part" in md
    assert (
        "λ chosen: NPT-Local (zscore): Conservation 0.5, Partial 1, Full 2, Transposition 0." in md
    )
    # a fusion result without its weight is no fusion result
    results[npt_row.cells[0]] = metrics(0.6, 0.5, 0.55)
    with pytest.raises(ValueError, match="without its weight"):
        T.render_table(table, results, tmp_path / "b2", not_run=not_run)
    # no fusion rows, no fusion caption
    T.render_table(RT.baselines(fusion=()), results, tmp_path / "b3", not_run=not_run)
    assert "fusion" not in (tmp_path / "b3.md").read_text()


def test_tables_from_eval_root(tmp_path):
    root = tmp_path / "eval"
    for lv in X.LEVELS:
        write_eval(
            metrics(0.5, 0.4, 0.45),
            X.Run("mixed", "npt", "local", lv).evaluation("test").path(root),
        )
    write_eval(metrics(0.5, 0.4, 0.45), RT.TABLE7_RUN.evaluation("dev").path(root))
    with pytest.raises(FileNotFoundError, match="allow-missing"):
        T.tables_from_eval_root(root, tmp_path / "tables")
    T.tables_from_eval_root(
        root, tmp_path / "tables", not_run={"mathbert": "no checkpoint"}, allow_missing=True
    )
    md3 = compact((tmp_path / "tables" / "table3.md").read_text())
    # the scores with their intervals (the toy pool's per-statement files: MRR 0.61, Acc 0.33)
    assert re.search(r"\| NPT-Local-Local \| 50\.00 \[\d+\.\d, \d+\.\d\] \| 40\.00 \[", md3), md3
    assert (
        "not run: no checkpoint" in md3
        and "not run: no result (test-conservation.json missing)" in md3
    )
    for name in ("table3", "table4", "table5", "table6", "table7", "baselines"):
        for ext in ("md", "tex", "csv"):
            assert (tmp_path / "tables" / f"{name}.{ext}").exists()


def test_rows_not_run_need_no_results(tmp_path):
    """What the config leaves out (no MathBERT, no pr split) is marked not run, not asked for."""
    root = tmp_path / "eval"
    reasons = {"mathbert": X.NOT_RUN_MATHBERT, "pr": X.NOT_RUN_PR}
    for table in RT.tables().values():
        for ev in table.evaluations(reasons):
            m = metrics(0.5, 0.4, 0.45)
            write_eval(fused(m) if ev.fused else m, ev.path(root))
    T.tables_from_eval_root(root, tmp_path / "tables", not_run=reasons)
    assert (
        compact((tmp_path / "tables" / "table3.md").read_text()).count(f"| {X.NOT_RUN_MATHBERT} |")
        == 7
    )
    assert (
        compact((tmp_path / "tables" / "table6.md").read_text()).count(f"| {X.NOT_RUN_PR} |") == 5
    )


def test_table_from_inputs_takes_the_workflows_inputs(tmp_path):
    """The workflow's inputs reach the right cells; a disabled pr split is a not-run note."""
    df = T.table_from_inputs("table6", [], tmp_path / "t6", not_run={"pr": "not run: no pr split"})
    assert "not run: no pr split" in (tmp_path / "t6.md").read_text()
    assert len(df) == 5 and (df["Note"] == "not run: no pr split").all()
    # the ten pr evaluations (five training levels x two protected test levels) fill Table 6
    root = tmp_path / "eval"
    evals = RT.table6().evaluations()
    refs = I.references(evals)  # BM25 on the same statements, for each row's difference
    for i, ev in enumerate(evals + refs):
        write_eval(metrics(0.5 + 0.01 * i, 0.4, 0.0), ev.path(root))
    # the workflow names each run's evaluation folder (one job writes both test levels of a run)
    folders = X.workflow_inputs(evals + refs, root)
    assert folders[:5] == [str(ev.folder(root)) for ev in evals[::2]] and len(folders) == 7
    df = T.table_from_inputs("table6", folders, tmp_path / "t6", eval_root=root)
    assert len(evals) == 10 and df.drop(columns=["Training", "Note"]).notna().all().all()
    assert df.loc[df["Training"] == "Full+P", "Test Partial+P MRR"].item() == pytest.approx(59.0)
    with pytest.raises(ValueError, match="1 unexpected"):
        T.table_from_inputs(
            "table6", folders + ["results/eval/other.json"], tmp_path / "t6", eval_root=root
        )
    with pytest.raises(ValueError, match="1 absent"):
        T.table_from_inputs("table6", folders[1:], tmp_path / "t6", eval_root=root)
    with pytest.raises(
        ValueError, match="10 unexpected"
    ):  # the files themselves are no rule's outputs
        T.table_from_inputs(
            "table6", [ev.path(root) for ev in evals] + folders[5:], tmp_path / "t6", eval_root=root
        )
    with pytest.raises(ValueError, match="unknown table"):
        T.table_from_inputs("table9", [], tmp_path / "t9")


def test_a_table_page_for_the_html_report(tmp_path):
    """rule table_html's page: the .md's caption, then its tables (a second one included, as
    findings.md has), every cell escaped, numbers right aligned."""
    from proofmatch.render import markdown_to_html, write_table, write_table_html

    df = pd.DataFrame({"Model <x>": ["NPT & co", "BM25"], "MRR": [12.345, float("nan")]})
    md = tmp_path / "t.md"
    write_table(
        df,
        md,
        tmp_path / "t.tex",
        tmp_path / "t.csv",
        caption="Caption <b>bold</b>?",
        md_after="\nVerdicts: a 1.\n\n| a | b |\n|---|---|\n| 1 | x |\n",
    )
    write_table_html(md, tmp_path / "t.html")
    page = (tmp_path / "t.html").read_text()
    assert page == markdown_to_html(md.read_text(), "t")
    assert '<p class="caption">Caption &lt;b&gt;bold&lt;/b&gt;?</p>' in page
    assert "<th>Model &lt;x&gt;</th>" in page and "<td>NPT &amp; co</td>" in page
    assert '<td class="num">12.35</td>' in page and '<td class="num">–</td>' in page
    assert page.count("<table>") == 2 and "<p>Verdicts: a 1.</p>" in page and "|" not in page


def test_a_table_at_chance_says_so():
    """at_chance: every MRR interval of the table holds its pool's chance MRR (Table 6 on a small
    pr split); one interval clear of it, or no interval at all, and the caption says nothing."""
    table = RT.TABLES["table6"].rows(RT.Setting(fusion=[]))
    pools = {ev.split: 31 for row in table.rows for ev in row.cells}
    chance = 100 * CAP.chance_mrr(31)
    columns = {}
    for group in table.groups:
        columns[f"{group} MRR lo"] = [chance - 5.0] * len(table.rows)
        columns[f"{group} MRR hi"] = [chance + 7.0] * len(table.rows)
    df = pd.DataFrame(columns)
    assert T.at_chance(table, df, pools)
    df.loc[0, f"{table.groups[0]} MRR lo"] = chance + 0.5  # one row clear of chance
    assert not T.at_chance(table, df, pools)
    assert not T.at_chance(table, pd.DataFrame(index=range(len(table.rows))), pools)
    assert "sits at chance" in T.AT_CHANCE
