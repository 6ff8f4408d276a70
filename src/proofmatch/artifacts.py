"""Atomic reads and writes of the cached artifacts (Parquet, JSON, text).

Every writer goes through :func:`atomic_path`: the data is written to a temporary file in the
target directory and renamed into place, so a killed job never leaves a half-written artifact
that Snakemake (or a resumed run) would mistake for a finished one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pandas as pd


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
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp creates 0600; artifacts are shared like any file
    try:
        yield tmp_path
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_parquet(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` atomically as Parquet (no pandas index)."""
    with atomic_path(path, ".parquet") as tmp:
        df.to_parquet(tmp, index=False)


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
