"""Atomic writers: a file, a Parquet table with a fixed schema, a folder swapped in whole, files
published into a folder."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proofmatch.artifacts import atomic_dir, write_parquet

SCHEMA = pa.schema([("a", pa.string()), ("n", pa.int64())]).with_metadata({"n_shards": "3"})


def test_write_parquet_schema_fixes_columns_types_and_metadata(tmp_path: Path) -> None:
    df = pd.DataFrame({"n": [1, 2], "extra": [0, 0], "a": ["x", "y"]})
    write_parquet(df, tmp_path / "t.parquet", SCHEMA)
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.schema.equals(SCHEMA, check_metadata=True)
    assert table.to_pydict() == {"a": ["x", "y"], "n": [1, 2]}
    write_parquet(
        df.iloc[:0], tmp_path / "empty.parquet", SCHEMA
    )  # no rows: types still the schema's
    assert pq.read_table(tmp_path / "empty.parquet").schema.equals(SCHEMA, check_metadata=True)
    arrow = pa.table(
        {"n": pa.array([5], pa.int32()), "a": ["z"]}
    )  # an Arrow table is selected and cast
    write_parquet(arrow, tmp_path / "arrow.parquet", SCHEMA)
    assert pq.read_table(tmp_path / "arrow.parquet").schema.equals(SCHEMA, check_metadata=True)


def test_write_parquet_without_schema_is_pandas_own_file(tmp_path: Path) -> None:
    df = pd.DataFrame({"a": ["x"], "n": [1]}, index=[7])
    write_parquet(df, tmp_path / "ours.parquet")
    df.to_parquet(tmp_path / "pandas.parquet", index=False)
    assert (tmp_path / "ours.parquet").read_bytes() == (tmp_path / "pandas.parquet").read_bytes()
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
