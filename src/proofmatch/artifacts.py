"""Atomic writes of the cached artifacts: files, Parquet tables and folders.

A killed job must never leave a half-written artifact that Snakemake (or a resumed run) would
mistake for a finished one, so every writer stages its output beside the target and renames it
into place only on success:

* one file: :func:`atomic_path` (and the writers built on it: :func:`write_parquet`,
  :func:`write_csv`, :func:`write_json`, :func:`write_text`);
* one folder written as a whole (a tokenizer, a saved model, a search index): :func:`atomic_dir`.

**Integrity.** Every Parquet table (:func:`write_parquet`, or ``atomic_path(..., digest=True)``)
and every folder (:func:`atomic_dir`: models, tokenizers, indexes) gets a content digest beside it: ``NAME.sha256`` next
to the file or folder ``NAME``, in ``sha256sum`` format (one line per file; a folder's lists
every file in it by its path under the folder's parent), so ``sha256sum -c NAME.sha256`` checks it
by hand. The readers of a Parquet table, a model and a search index call :func:`verify` (a
missing digest, an artifact of an older proofmatch, is not checked): a file changed after it was
written, even with its mtime kept, is a :class:`CorruptArtifact` error naming the file and the
fix, instead of being used silently. The old digest is removed before the rename and the new one
written after it, so a kill in between leaves an artifact without a digest (unchecked), never a
good artifact with a wrong one. Temporaries (hidden names) and files written inside a folder that
is being staged get no digest of their own (the folder's covers them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


#: The suffix of a digest file beside its artifact.
DIGEST_SUFFIX = ".sha256"
_CHUNK = 1 << 20
_STAGING: list[
    Path
] = []  # folders being staged by atomic_dir (their files get no digest of their own)


class CorruptArtifact(ValueError):
    """An artifact whose content differs from the digest recorded when it was written."""


def digest_path(path: str | os.PathLike) -> Path:
    """``NAME.sha256`` beside the file or folder ``NAME``."""
    p = Path(path)
    return p.with_name(p.name + DIGEST_SUFFIX)


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _digest_lines(content: Path, name: str) -> str:
    """sha256sum lines of the file or folder ``content`` (to be known as ``name``)."""
    if content.is_dir():
        files = sorted(
            (p for p in content.rglob("*") if p.is_file()),
            key=lambda p: p.relative_to(content).as_posix(),
        )
        return "".join(
            f"{file_sha256(f)}  {name}/{f.relative_to(content).as_posix()}\n" for f in files
        )
    return f"{file_sha256(content)}  {name}\n"


def _wants_digest(target: Path) -> bool:
    if target.name.startswith("."):
        return False
    resolved = target.parent.resolve()
    return not any(resolved.is_relative_to(s) for s in _STAGING)


def _swap_in(staged: Path, target: Path, digest: bool) -> None:
    """Rename ``staged`` onto ``target`` with its digest beside it (``digest`` and :func:`_wants_digest`)."""
    if not (digest and _wants_digest(target)):
        os.replace(staged, target)
        return
    lines = _digest_lines(staged, target.name)
    sidecar = digest_path(target)
    sidecar.unlink(missing_ok=True)
    os.replace(staged, target)
    fd, tmp = tempfile.mkstemp(prefix=f".{sidecar.name}.", suffix=".tmp", dir=target.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(lines)
    os.chmod(tmp, 0o666 & ~_umask())
    os.replace(tmp, sidecar)


def verify(path: str | os.PathLike) -> None:
    """Check the file or folder ``path`` against its digest (:func:`digest_path`); no digest: no
    check. Raises :class:`CorruptArtifact` naming the first file that differs and the fix."""
    target = Path(path)
    digest = digest_path(target)
    if not digest.is_file():
        return
    for line in digest.read_text().splitlines():
        want, _, name = line.partition("  ")
        # the recorded name's first component is the artifact's own: a renamed copy (with its
        # digest renamed alike) still checks
        file = target / name.split("/", 1)[1] if "/" in name else target
        got = file_sha256(file) if file.is_file() else None
        if got != want:
            what = (
                "is missing"
                if got is None
                else "differs from the digest recorded when it was written"
            )
            raise CorruptArtifact(
                f"{file} {what} ({digest}): it was changed or corrupted after the job wrote it; "
                f"fix: rerun the job that writes it, e.g. snakemake --forcerun {target}"
            )


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike, suffix: str | None = None, digest: bool = False
) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success (with
    ``digest``, its digest beside it: what a checked reader reads)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=suffix or ".tmp", dir=target.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(
        tmp_path, 0o666 & ~_umask()
    )  # mkstemp creates 0600; artifacts are shared like any file
    try:
        yield tmp_path
        _swap_in(tmp_path, target, digest)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, digest: bool = True) -> Iterator[Path]:
    """Yield an empty staging folder beside ``path``; on success swap it in as ``path`` whole
    (its digest beside it).

    The swap renames an existing ``path`` aside, renames the staging folder in and removes the
    old one, so a reader sees the old folder or the new one, never a mix of their files (a crash
    between the two renames leaves ``path`` missing, which a rerun rewrites). On failure the
    staging folder is removed and ``path`` is untouched.
    """
    target = Path(path)
    resolved = target.resolve()
    if resolved == resolved.parent or Path.cwd().resolve().is_relative_to(resolved):
        raise ValueError(
            f"will not replace {target}: it is the working folder or one of its parents"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    os.chmod(
        staging, 0o777 & ~_umask()
    )  # mkdtemp creates 0700; artifacts are shared like any folder
    _STAGING.append(staging.resolve())
    try:
        yield staging
        _STAGING.remove(staging.resolve())
        for f in staging.rglob(
            "*"
        ):  # some writers (safetensors) create 0600 files; artifacts are shared
            if f.is_file() and not f.is_symlink():
                os.chmod(f, 0o666 & ~_umask())
        wants = digest and _wants_digest(target)
        lines = _digest_lines(staging, target.name) if wants else ""
        sidecar = digest_path(target)
        if wants:
            sidecar.unlink(missing_ok=True)
        old = None
        if target.exists() or target.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            old.rmdir()
            os.replace(target, old)
        os.replace(staging, target)
        if wants:
            with atomic_path(sidecar, ".tmp") as tmp:
                tmp.write_text(lines)
        if old is not None:
            shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
    finally:
        if staging.resolve() in _STAGING:
            _STAGING.remove(staging.resolve())
        if staging.exists():
            shutil.rmtree(staging)


def write_parquet(
    data: pd.DataFrame | pa.Table, path: str | os.PathLike, schema: pa.Schema | None = None
) -> None:
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
    with atomic_path(path, ".parquet", digest=True) as tmp:
        if isinstance(data, pa.Table):
            pq.write_table(data, tmp)
        else:
            data.to_parquet(tmp, index=False)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` atomically as CSV (no pandas index)."""
    with atomic_path(path, ".csv") as tmp:
        df.to_csv(tmp, index=False)


def read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pd.DataFrame:
    """A Parquet table as a frame, checked against its digest first (:func:`verify`)."""
    verify(path)
    return pd.read_parquet(path, columns=columns)


def read_table(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """A Parquet table as an Arrow table, checked against its digest first (:func:`verify`)."""
    verify(path)
    return pq.read_table(path, columns=columns)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` atomically as indented, key-sorted JSON (stable diffs, deterministic bytes)."""
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text())


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)
