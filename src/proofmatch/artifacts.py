"""Atomic writes of the cached artifacts: files, Parquet tables and folders.

A killed job must never leave a half-written artifact that Snakemake (or a resumed run) would
mistake for a finished one, so every writer stages its output beside the target and renames it
into place only on success:

* one file: :func:`atomic_path` (and the writers built on it: :func:`write_parquet`,
  :func:`write_csv`, :func:`write_json`, :func:`write_text`);
* one folder written as a whole (a tokenizer, a saved model, a search index): :func:`atomic_dir`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=suffix or ".tmp", dir=target.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp creates 0600; artifacts are shared like any file
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield an empty staging folder beside ``path``; on success swap it in as ``path`` whole.

    The swap renames an existing ``path`` aside, renames the staging folder in and removes the
    old one, so a reader sees the old folder or the new one, never a mix of their files (a crash
    between the two renames leaves ``path`` missing, which a rerun rewrites). On failure the
    staging folder is removed and ``path`` is untouched.
    """
    target = Path(path)
    resolved = target.resolve()
    if resolved == resolved.parent or Path.cwd().resolve().is_relative_to(resolved):
        raise ValueError(f"will not replace {target}: it is the working folder or one of its parents")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    os.chmod(staging, 0o777 & ~_umask())  # mkdtemp creates 0700; artifacts are shared like any folder
    try:
        yield staging
        old = None
        if target.exists() or target.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            old.rmdir()
            os.replace(target, old)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def write_parquet(data: pd.DataFrame | pa.Table, path: str | os.PathLike,
                  schema: pa.Schema | None = None) -> None:
    """Write a frame (no pandas index) or an Arrow table atomically as Parquet.

    With ``schema`` the file has exactly that schema: its columns in its order, cast to its types
    (so an empty table keeps them) and its metadata (e.g. a manifest's ``n_shards``) instead of
    pandas' own.
    """
    if schema is not None:
        if isinstance(data, pa.Table):
            data = data.select(schema.names).cast(schema)
        else:
            data = pa.Table.from_pandas(data[schema.names], schema=schema, preserve_index=False)
        data = data.replace_schema_metadata(schema.metadata)
    with atomic_path(path, ".parquet") as tmp:
        if isinstance(data, pa.Table):
            pq.write_table(data, tmp)
        else:
            data.to_parquet(tmp, index=False)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` atomically as CSV (no pandas index)."""
    with atomic_path(path, ".csv") as tmp:
        df.to_csv(tmp, index=False)


def read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    return pd.read_parquet(path, columns=columns)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` atomically as indented, key-sorted JSON (stable diffs, deterministic bytes)."""
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
