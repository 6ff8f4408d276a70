"""Atomic writers: a file, a Parquet table with a fixed schema, a folder swapped in whole, files
published into a folder."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proofmatch.artifacts import atomic_dir, marked_schema, write_parquet

SCHEMA = pa.schema([("a", pa.string()), ("n", pa.int64())]).with_metadata({"n_shards": "3"})


def test_write_parquet_schema_fixes_columns_types_and_metadata(tmp_path: Path) -> None:
    df = pd.DataFrame({"n": [1, 2], "extra": [0, 0], "a": ["x", "y"]})
    write_parquet(df, tmp_path / "t.parquet", SCHEMA)
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.schema.equals(marked_schema(SCHEMA), check_metadata=True)
    assert table.to_pydict() == {"a": ["x", "y"], "n": [1, 2]}
    write_parquet(
        df.iloc[:0], tmp_path / "empty.parquet", SCHEMA
    )  # no rows: types still the schema's
    assert pq.read_table(tmp_path / "empty.parquet").schema.equals(
        marked_schema(SCHEMA), check_metadata=True
    )
    arrow = pa.table(
        {"n": pa.array([5], pa.int32()), "a": ["z"]}
    )  # an Arrow table is selected and cast
    write_parquet(arrow, tmp_path / "arrow.parquet", SCHEMA)
    assert pq.read_table(tmp_path / "arrow.parquet").schema.equals(
        marked_schema(SCHEMA), check_metadata=True
    )


def test_write_parquet_without_schema_is_pandas_own_file(tmp_path: Path) -> None:
    """pandas' own file (its metadata kept, so the frame reads back alike) plus the digest mark."""
    df = pd.DataFrame({"a": ["x"], "n": [1]}, index=[7])
    write_parquet(df, tmp_path / "ours.parquet")
    df.to_parquet(tmp_path / "pandas.parquet", index=False)
    ours, theirs = (pq.read_table(tmp_path / f) for f in ("ours.parquet", "pandas.parquet"))
    assert ours.equals(theirs)
    assert ours.schema.metadata == marked_schema(theirs.schema).metadata
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "ours.parquet"), df.reset_index(drop=True)
    )
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_atomic_dir_swaps_whole_folder_and_keeps_old_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "model"
    with atomic_dir(target) as staging:
        (staging / "a.txt").write_text("1")
        (staging / "b.txt").write_text("1")
        assert not target.exists()  # nothing visible before success
    assert sorted(p.name for p in target.iterdir()) == ["a.txt", "b.txt"]
    assert oct(target.stat().st_mode & 0o777) == oct(0o777 & ~_umask())
    with atomic_dir(target) as staging:
        (staging / "a.txt").write_text("2")
    assert [p.name for p in target.iterdir()] == ["a.txt"]  # b.txt of the old folder is gone
    assert (target / "a.txt").read_text() == "2"
    with pytest.raises(RuntimeError), atomic_dir(target) as staging:
        (staging / "a.txt").write_text("3")
        raise RuntimeError("killed")
    assert (target / "a.txt").read_text() == "2"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model",
        "model.sha256",
    ]  # no staging or old folder left
    assert (
        (tmp_path / "model.sha256").read_text().endswith("  model/a.txt\n")
    )  # the last success's digest


def test_atomic_dir_refuses_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for path in (".", tmp_path, tmp_path.parent):
        with pytest.raises(ValueError, match="working folder"), atomic_dir(path):
            pass


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


# ------------------------------------------------------------------- digests: missing, empty, orphan


def test_a_missing_or_empty_digest_beside_a_marked_table_is_an_error(tmp_path: Path) -> None:
    from proofmatch.artifacts import CorruptArtifact, digest_path, read_parquet

    path = tmp_path / "pairs.parquet"
    write_parquet(pd.DataFrame({"a": ["x"]}), path)
    digest_path(path).write_text("")
    with pytest.raises(CorruptArtifact, match="is empty.*snakemake --forcerun"):
        read_parquet(path)
    digest_path(path).unlink()
    with pytest.raises(CorruptArtifact, match="written with a digest.*proofmatch digest"):
        read_parquet(path)
    from proofmatch import cli

    assert cli.main(["digest", str(path)]) == 0  # records the content as it is now
    assert read_parquet(path)["a"].tolist() == ["x"]


def test_an_unmarked_table_without_digest_is_named_as_older(tmp_path: Path, caplog) -> None:
    from proofmatch.artifacts import read_parquet

    path = tmp_path / "old.parquet"
    pd.DataFrame({"a": ["x"]}).to_parquet(path)  # an older proofmatch: no digest, no mark
    with caplog.at_level("WARNING"):
        assert read_parquet(path)["a"].tolist() == ["x"]
    assert "older than its digests" in caplog.text and f"proofmatch digest {path}" in caplog.text


def test_a_model_without_its_digest_is_refused(tmp_path: Path) -> None:
    """Weights written with their folder's digest say so in their header: moving the digest away
    no longer turns the check off."""
    import torch
    from safetensors.torch import save_file

    from proofmatch.artifacts import WEIGHTS_MARK, CorruptArtifact, digest_path, verify

    model = tmp_path / "model"
    with atomic_dir(model) as staging:
        save_file({"w": torch.zeros(4)}, str(staging / "model.safetensors"), metadata=WEIGHTS_MARK)
    verify(model)
    digest_path(model).rename(tmp_path / "elsewhere")
    with pytest.raises(CorruptArtifact, match="model was written with a digest"):
        verify(model)


def test_evaluation_json_is_checked_against_its_folders_digest(tmp_path: Path) -> None:
    """A test JSON edited in an evaluation folder (mtime kept) fails the table readers."""
    import json
    import os

    from proofmatch.artifacts import CorruptArtifact, read_json
    from proofmatch.evaluation.tables import load_metrics

    folder = tmp_path / "eval" / "run"
    with atomic_dir(folder) as staging:
        (staging / "test-a.json").write_text(
            json.dumps({"mrr": 0.2, "acc": 0.1, "global_acc": 0.1})
        )
        write_parquet(pd.DataFrame({"rank": [1]}), staging / "test-a.parquet")
    assert read_json(folder / "test-a.json")["mrr"] == 0.2
    path = folder / "test-a.json"
    st = path.stat()
    path.write_text(json.dumps({"mrr": 0.9123, "acc": 0.1, "global_acc": 0.1}))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    with pytest.raises(CorruptArtifact, match="test-a.json differs"):
        read_json(path)
    with pytest.raises(CorruptArtifact):
        load_metrics(path)


def test_orphan_digests_are_removed(tmp_path: Path) -> None:
    from proofmatch.artifacts import remove_orphan_digests

    write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "kept.parquet")
    write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "sub" / "gone.parquet")
    (tmp_path / "sub" / "gone.parquet").unlink()  # what Snakemake does to a failed job's output
    assert remove_orphan_digests(tmp_path) == [tmp_path / "sub" / "gone.parquet.sha256"]
    assert sorted(p.name for p in tmp_path.rglob("*.sha256")) == ["kept.parquet.sha256"]
    snakefile = (Path(__file__).resolve().parents[1] / "Snakefile").read_text()
    assert "remove_orphan_digests" in snakefile.split("onerror:", 1)[1]


# ------------------------------------------------------------------- every reader is a checked one

#: Reads of files in the package that do not go through the checked readers of
#: proofmatch.artifacts, each with why: (module, text of the call) -> reason.
UNCHECKED_READS = {
    (
        "models/encoders.py",
        'state = torch.load(bin_file, map_location="cpu", weights_only=True)',
    ): "a released checkpoint's pytorch_model.bin (pretrain.checkpoint): input from elsewhere, "
    "tensors only",
    (
        "evaluation/results_page.py",
        "return pd.read_csv(path)",
    ): "a committed snapshot of a finished run's table (docs/snapshots), not a job's read",
    (
        "data/show.py",
        "data = json.load(f)",
    ): "a JSON file the user names to be printed, not a job's read",
    (
        "models/identity.py",
        "cfg = json.loads(cfg_path.read_text())",
    ): "a pretrained checkpoint's config.json: input from elsewhere, named by its weights' digest",
    (
        "data/corpus.py",
        "pd.read_parquet(path)",
    ): "a corpus's metadata table: input, not an artifact",
    ("data/corpus.py", "pd.read_csv(path"): "a corpus's metadata table: input, not an artifact",
    (
        "data/corpus.py",
        "pq.read_schema(path)",
    ): "the manifest's metadata only; its rows are read checked",
    ("data/filters.py", "pq.read_schema(parts[0])"): "a temporary part this job just wrote",
    ("data/filters.py", "pq.read_schema(path)"): "columns only; the table is read checked next",
    ("evaluation/dataset_tables.py", "pq.read_schema(obj)"): "columns only; read checked next",
    ("search/index.py", "pd.read_parquet(self.path"): "a file of the index folder, checked whole",
    ("search/index.py", "json.loads((self.path"): "a file of the index folder, checked whole",
    (
        "models/encoders.py",
        "json.loads((Path(model_dir)",
    ): "a file of a model folder, checked whole",
    ("models/matcher.py", "json.loads(cfg_path"): "a file of a model folder, checked whole",
    ("data/latexml.py", "json.loads(js.read_text"): "LaTeXML's own output of this job",
}
_RAW_READ = re.compile(
    r"(pd\.read_parquet\(|pq\.read_table\(|pq\.ParquetFile\(|pq\.read_schema\(|pd\.read_csv\(|"
    r"pd\.read_json\(|json\.loads?\(.*read_text|json\.load\(|torch\.load\(|pickle\.loads?\()"
)


def test_every_read_of_an_artifact_is_checked() -> None:
    """Every Parquet/JSON read in the package outside proofmatch.artifacts is listed above with
    why it needs no check of its own: a new unchecked reader fails here."""
    src = Path(__file__).resolve().parents[1] / "src" / "proofmatch"
    found = set()
    for path in sorted(src.rglob("*.py")):
        module = path.relative_to(src).as_posix()
        if module == "artifacts.py":
            continue
        for line in path.read_text().splitlines():
            if _RAW_READ.search(line) and not line.lstrip().startswith("#"):
                code = line.strip()
                hits = [k for k in UNCHECKED_READS if k[0] == module and k[1] in code]
                if module == "models/checkpoint.py" and "weights_only=True" in code:
                    continue  # the resume state: digest first, then no pickled objects
                assert hits, f"{module}: unchecked read {code!r}; use proofmatch.artifacts' readers"
                found.update(hits)
    assert found == set(UNCHECKED_READS), set(UNCHECKED_READS) - found


def test_publish_best_checks_the_best_models_digest(tmp_path: Path) -> None:
    """The best model in the resume folder is checked before it is copied into ``model/``."""
    from types import SimpleNamespace

    from proofmatch.artifacts import CorruptArtifact
    from proofmatch.models.matcher import CONFIG_FILE
    from proofmatch.models.train import BEST_DIR, publish_best

    best = tmp_path / "run" / "checkpoint" / "best"
    with atomic_dir(best) as staging:
        (staging / CONFIG_FILE).write_text('{"encoder": "npt"}')
        (staging / "model.safetensors").write_bytes(b"weights")
    st = (best / "model.safetensors").stat()
    (best / "model.safetensors").write_bytes(b"weightz")
    os.utime(best / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))
    run = SimpleNamespace(best_dir=best, out=tmp_path / "run")
    with pytest.raises(CorruptArtifact, match=r"model\.safetensors differs"):
        publish_best(run)
    assert not (tmp_path / "run" / BEST_DIR).exists()
