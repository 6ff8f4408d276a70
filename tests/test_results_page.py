"""docs/results.md is generated (``proofmatch results-page``) from the snapshots in docs/snapshots/:
the committed page is what the current code writes, and a snapshot records its run from a results
tree (commit, wall time and jobs from its Snakemake log) without a results tree in CI."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from proofmatch import cli
from proofmatch.evaluation import results_page as R

REPO = Path(__file__).resolve().parents[1]

LOG = """Building DAG of jobs...
[Fri Dec  4 23:39:57 2026]
localrule demo_corpus:
    output: results/demo_corpus/metadata.csv
    jobid: 3
[Fri Dec  4 23:40:02 2026]
Finished jobid: 3 (Rule: demo_corpus)
1 of 2 steps (50%) done
[Sat Dec  5 00:50:09 2026]
Finished jobid: 0 (Rule: all)
2 of 2 steps (100%) done
"""


def test_the_committed_page_is_what_the_command_writes():
    page = (REPO / R.PAGE).read_text(encoding="utf-8")
    assert page == R.render_page(REPO / R.SNAPSHOTS), (
        "docs/results.md is stale: run `proofmatch results-page render`"
    )


def test_every_snapshot_names_its_run():
    for run_file in (REPO / R.SNAPSHOTS).glob(f"*/{R.RUN_FILE}"):
        run = json.loads(run_file.read_text(encoding="utf-8"))
        assert run["commit"] and run["config"] and run["command"], run_file
        assert run.get("wall_time") or run.get("wall_time_s"), run_file
        for view in run["views"]:
            assert (run_file.parent / view["file"]).is_file(), (run_file, view["file"])


def _tree(tmp_path: Path) -> Path:
    results = tmp_path / "checkout" / "results"
    (results / "tables").mkdir(parents=True)
    pd.DataFrame(
        {
            "Model": ["NPT-Local", "BM25"],
            "Conservation MRR": [22.9213, 31.28],
            "Conservation MRR lo": [18.94, 26.1],
            "Conservation MRR hi": [27.66, 36.8],
            "Conservation Δ BM25": [-8.36, None],
            "Conservation Δ BM25 lo": [-14.1, None],
            "Conservation Δ BM25 hi": [-2.9, None],
            "n": [133, 133],
        }
    ).to_csv(results / "tables" / "table3.csv", index=False)
    log = tmp_path / "checkout" / ".snakemake" / "log"
    log.mkdir(parents=True)
    (log / "2026-12-04T233954.snakemake.log").write_text(LOG)
    return results


def test_a_snapshot_records_its_run_and_keeps_its_views(tmp_path):
    results = _tree(tmp_path)
    out = tmp_path / "snapshots" / "demo"
    run = R.snapshot(results, out, ["config/config.yaml"], ["table3"], commit="abc1234")
    assert (run["commit"], run["wall_time_s"], run["jobs"], run["date"]) == (
        "abc1234",
        70 * 60 + 12,
        2,
        "2026-12-04",
    )
    assert (out / "table3.csv").read_bytes() == (results / "tables" / "table3.csv").read_bytes()
    page = R.render_page(out.parent)
    assert "| wall time | 1 h 10 min 12 s |" in page and "| commit | `abc1234` |" in page
    assert "22.92 [18.9, 27.7]" in page and "−8.4 [−14.1, −2.9]" in page and "| 133 " in page
    # a chosen view and title survive a new snapshot of the same run
    run["title"] = "Demo"
    run["views"] = [{"file": "table3.csv", "columns": ["Model", "n"], "rows": "^NPT"}]
    (out / R.RUN_FILE).write_text(json.dumps(run))
    R.snapshot(results, out, ["config/config.yaml"], ["table3"], commit="def5678")
    page = R.render_page(out.parent)
    assert "## Demo" in page and "`def5678`" in page and "Conservation MRR" not in page
    assert "| NPT-Local | 133 |" in page and "| BM25" not in page


def test_a_view_counts_the_values_of_a_column():
    df = pd.DataFrame({"Finding": ["a", "b", "c"], "Verdict": ["holds", "not run", "holds"]})
    shown = R.view_table(df, {"count": "Verdict"})
    assert shown.to_dict("list") == {"Verdict": ["holds", "not run"], "rows": [2, 1]}
    assert R.view_table(df, {"rows": "^(?:a|c)$", "columns": ["Finding"]})["Finding"].tolist() == [
        "a",
        "c",
    ]


def test_a_view_of_distinct_rows_shows_one_row_per_finding():
    cells = pd.DataFrame(
        {
            "Finding": ["a", "a", "b"],
            "Verdict": ["holds", "holds", "not run"],
            "Cell": ["C", "F", "C"],
        }
    )
    view = {"distinct": ["Finding", "Verdict"], "columns": ["Finding", "Verdict"]}
    assert R.view_table(cells, view).to_dict("list") == {
        "Finding": ["a", "b"],
        "Verdict": ["holds", "not run"],
    }
    counted = R.view_table(cells, {"distinct": ["Finding"], "count": "Verdict"})
    assert counted.to_dict("list") == {"Verdict": ["holds", "not run"], "rows": [1, 1]}
    with pytest.raises(ValueError, match="no columns"):
        R.view_table(cells, {"distinct": ["Tally"]})


def test_the_command_writes_the_page(tmp_path):
    results = _tree(tmp_path)
    snaps = tmp_path / "snaps"
    argv = ["results-page", "snapshot", str(results), "--name", "demo", "--commit", "abc1234"]
    argv += ["--config", "config/config.yaml", "--tables", "table3", "--snapshots", str(snaps)]
    assert cli.main(argv) == 0
    out = tmp_path / "results.md"
    assert cli.main(["results-page", "render", "--snapshots", str(snaps), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == R.render_page(snaps)


def test_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match="no Snakemake time stamp"):
        R.summarize_log("nothing here", "x.log")
    with pytest.raises(ValueError, match="no column 'MRR'"):
        R.view_frame(pd.DataFrame({"Model": ["a"]}), ["MRR"])
    with pytest.raises(FileNotFoundError, match="no snapshot"):
        R.render_page(tmp_path)
    results = _tree(tmp_path)
    with pytest.raises(FileNotFoundError, match="table9.csv"):
        R.snapshot(results, tmp_path / "s", ["c.yaml"], ["table9"], commit="x")
