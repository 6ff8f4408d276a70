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
by hand. Every reader of a Parquet table, a JSON file, a model and a search index goes through
:func:`verify` (:func:`read_parquet`, :func:`read_table`, :func:`parquet_file`,
:func:`read_json`; ``tests/test_artifacts.py`` lists every other read of the package and why
it is one): a file changed after it was written, even with its mtime kept, is a
:class:`CorruptArtifact` error naming the file and the fix, instead of being used silently. A
JSON file inside a folder written whole is checked against the folder's digest.

**A missing digest.** What is written with a digest says so inside it (a Parquet table in its
key-value metadata, :data:`PARQUET_MARK`; a model's weights in their header, :data:`WEIGHTS_MARK`;
a folder by the marked tables or weights in it), so a
digest that is missing or empty beside it is an error too (``proofmatch digest PATH`` records
the digest of the content as it is now, for a file you trust; ``snakemake --forcerun PATH``
rewrites it). An artifact without digest or mark was written by a proofmatch older than its
digests (or by another program): it is read unchecked, with one warning naming it and the
command that records its digest. The old digest is removed before the rename and the new one
written after it, so a kill in between leaves a marked artifact without a digest (an error
naming the fix), never a good artifact with a wrong one; :func:`remove_orphan_digests` removes
the digest of an artifact that a failed job's cleanup deleted. Temporaries (hidden names) and
files written inside a folder that is being staged get no digest of their own (the folder's
covers them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
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


#: Key-value metadata of a Parquet table written with its digest.
PARQUET_MARK = {b"proofmatch.digest": b"sha256"}
#: Metadata of a saved model's weights (safetensors header) written with the folder's digest.
WEIGHTS_MARK = {"proofmatch.digest": "sha256"}

log = logging.getLogger(__name__)
_WARNED: set[Path] = set()


class CorruptArtifact(ValueError):
    """An artifact whose content differs from the digest recorded when it was written."""


def marked_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with :data:`PARQUET_MARK` in its metadata: a table written with its digest."""
    return schema.with_metadata({**(schema.metadata or {}), **PARQUET_MARK})


def _is_marked(target: Path) -> bool:
    """Whether ``target`` says it was written with a digest: a Parquet table with
    :data:`PARQUET_MARK`; a folder with such a table, or weights with :data:`WEIGHTS_MARK`."""
    if target.is_dir():
        weights = target / "model.safetensors"
        if weights.is_file() and _weights_marked(weights):
            return True
        return any(_is_marked(t) for t in sorted(target.glob("*.parquet"))[:3])
    if target.suffix == ".parquet" and target.is_file():
        try:
            meta = pq.read_metadata(target).metadata or {}
        except Exception:  # unreadable: the reader's own error says so
            return False
        return all(meta.get(k) == v for k, v in PARQUET_MARK.items())
    return False


def _weights_marked(path: Path) -> bool:
    """A safetensors file whose header metadata holds :data:`WEIGHTS_MARK`."""
    try:
        with open(path, "rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 0 < size <= 1 << 24:
                return False
            header = json.loads(fh.read(size))
    except (OSError, ValueError):
        return False
    meta = header.get("__metadata__") or {}
    return all(meta.get(k) == v for k, v in WEIGHTS_MARK.items())


def _fix(target: Path) -> str:
    return (
        f"fix: rerun the job that writes it, e.g. snakemake --forcerun {target} (or, for content "
        f"you trust, proofmatch digest {target} records its digest as it is now)"
    )


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
    """Check the file or folder ``path`` against its digest (:func:`digest_path`), or a file
    written inside a folder against that folder's digest. Raises :class:`CorruptArtifact` naming
    the first file that differs and the fix, or a missing or empty digest beside an artifact
    written with one; an artifact without digest or mark (an older proofmatch's) is not checked,
    with one warning."""
    target = Path(path)
    digest = digest_path(target)
    if not digest.is_file():
        if _in_folder_digest(target):
            return
        if _is_marked(target) and not _is_temporary(target):
            raise CorruptArtifact(
                f"{target} was written with a digest, but {digest} is missing (moved or "
                f"deleted; a failed job's cleanup, or a kill between the two renames); {_fix(target)}"
            )
        if target.exists() and target not in _WARNED and not _is_temporary(target):
            _WARNED.add(target)
            log.warning(
                "%s has no digest: written by a proofmatch older than its digests (or by another "
                "program), so it is not checked; fix: proofmatch digest %s records its digest "
                "(or snakemake --forcerun %s rewrites it)",
                target,
                target,
                target,
            )
        return
    lines = digest.read_text().splitlines()
    if not any(line.strip() for line in lines):
        raise CorruptArtifact(f"{digest} is empty: the digest of {target} was lost; {_fix(target)}")
    for line in lines:
        want, _, name = line.partition("  ")
        # the recorded name's first component is the artifact's own: a renamed copy (with its
        # digest renamed alike) still checks
        file = target / name.split("/", 1)[1] if "/" in name else target
        _check(file, want, digest, target)


def _is_temporary(target: Path) -> bool:
    """A staged or temporary file (hidden name, or in a hidden folder): never an artifact."""
    return target.name.startswith(".") or target.parent.name.startswith(".")


def _in_folder_digest(file: Path) -> bool:
    """Check ``file`` against the digest of the folder it was written in, if that folder has one
    (True: checked). A file a marked folder's digest does not list is an error."""
    folder = file.parent
    digest = digest_path(folder)
    if not digest.is_file():
        return False  # a plain folder (or one whose digest is missing: its own readers say so)
    found = False
    for line in digest.read_text().splitlines():
        want, _, name = line.partition("  ")
        inner = name.split("/", 1)[1] if "/" in name else ""
        if inner == file.name or inner.startswith(file.name + "/"):  # the file, or a sub-folder's
            _check(folder / inner, want, digest, folder)
            found = True
    if found:
        return True
    if _is_marked(folder) and file.name != ".snakemake_timestamp":
        raise CorruptArtifact(
            f"{file} is not listed in {digest}: it was added after the job wrote the folder; "
            f"{_fix(folder)}"
        )
    return False


def _check(file: Path, want: str, digest: Path, target: Path) -> None:
    got = file_sha256(file) if file.is_file() else None
    if got != want:
        what = (
            "is missing" if got is None else "differs from the digest recorded when it was written"
        )
        raise CorruptArtifact(
            f"{file} {what} ({digest}): it was changed or corrupted after the job wrote it; "
            f"fix: rerun the job that writes it, e.g. snakemake --forcerun {target}"
        )


def verify_json(path: str | os.PathLike) -> None:
    """A JSON file's check: against its own digest or its folder's; a JSON file outside any
    artifact folder (a report, a run's metrics) has none and is not checked (no warning)."""
    file = Path(path)
    if digest_path(file).is_file():
        verify(file)
    else:
        _in_folder_digest(file)


def record_digest(path: str | os.PathLike) -> Path:
    """Write the digest of the file or folder ``path`` as it is now (``proofmatch digest``)."""
    target = Path(path)
    if not target.exists():
        raise FileNotFoundError(f"{target} does not exist")
    lines = _digest_lines(target, target.name)
    with atomic_path(digest_path(target), ".tmp") as tmp:
        tmp.write_text(lines)
    return digest_path(target)


def remove_orphan_digests(root: str | os.PathLike) -> list[Path]:
    """Remove every ``NAME.sha256`` under ``root`` whose ``NAME`` is gone (a failed job's outputs,
    deleted by Snakemake, leave theirs); return them."""
    removed = []
    top = Path(root)
    if not top.is_dir():
        return removed
    for digest in top.rglob(f"*{DIGEST_SUFFIX}"):
        artifact = digest.with_name(digest.name[: -len(DIGEST_SUFFIX)])
        if digest.is_file() and not digest.name.startswith(".") and not artifact.exists():
            digest.unlink()
            removed.append(digest)
    return removed


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
    elif not isinstance(data, pa.Table):
        data = pa.Table.from_pandas(data, preserve_index=False)
    data = data.replace_schema_metadata(marked_schema(data.schema).metadata)
    with atomic_path(path, ".parquet", digest=True) as tmp:
        pq.write_table(data, tmp)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``df`` atomically as CSV (no pandas index)."""
    with atomic_path(path, ".csv") as tmp:
        df.to_csv(tmp, index=False)


def read_parquet(
    path: str | os.PathLike, columns: list[str] | None = None, **kwargs: Any
) -> pd.DataFrame:
    """A Parquet table as a frame, checked against its digest first (:func:`verify`);
    ``kwargs`` go to ``pd.read_parquet`` (``filters``)."""
    verify(path)
    return pd.read_parquet(path, columns=columns, **kwargs)


def read_table(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    """A Parquet table as an Arrow table, checked against its digest first (:func:`verify`)."""
    verify(path)
    return pq.read_table(path, columns=columns)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` atomically as indented, key-sorted JSON (stable diffs, deterministic bytes)."""
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def parquet_file(path: str | os.PathLike) -> pq.ParquetFile:
    """A Parquet table opened for reading a row group at a time, checked against its digest
    first (``pre_buffer=False``: ``iter_batches`` then keeps no row group it has passed)."""
    verify(path)
    return pq.ParquetFile(path, pre_buffer=False)


def read_json(path: str | os.PathLike) -> Any:
    """A JSON file, checked first against its digest or its folder's (:func:`verify_json`)."""
    verify_json(path)
    return json.loads(Path(path).read_text())


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


# ----------------------------------------------------------------------------- proofmatch digest


def add_arguments(parser: Any) -> None:
    parser.add_argument("paths", nargs="+", help="artifacts (files or folders) to record")


def main(args: Any) -> int:
    """``proofmatch digest PATH...``: write each artifact's digest as its content is now."""
    for path in args.paths:
        print(f"wrote {record_digest(path)}")
    return 0
