"""Untrusted article sources: what kind each entry is, and unpacking it without writing outside.

Why a module of its own: a LaTeX source folder comes from anywhere (arXiv, a colleague, a web
crawl), so everything that opens it is kept here, small enough to audit, apart from running
LaTeXML (:mod:`proofmatch.data.latex`) and listing the folder (:mod:`proofmatch.data.latex_inventory`).

**Kinds** (arXiv's source layout), one top-level entry per article: a sub-folder (``dir``), a
``.tar.gz``/``.tgz``/``.tar`` (also ``.tar.bz2``/``.tar.xz``: ``tar``), a ``.gz`` (arXiv's bare
form: a gzipped tar or a single gzipped ``.tex``, told apart by content: ``gz``) or a single
``.tex`` (``tex``).

**Untrusted archives**: nothing is ever written outside the article's scratch folder under the
results folder. Every tar member is checked before anything is extracted: an absolute path, a path
that leaves the folder through ``..``, a symbolic or hard link pointing out, or a device/FIFO
member rejects the article (``path_escape``); extraction then runs with tarfile's ``data`` filter
as a second guard. The file count (``max_files``) and the unpacked size (``max_archive_mb``, also
the size of a single decompressed ``.gz``, read incrementally) are bounded (``oversized``); a tar
is read member by member, so a bomb costs at most the bound. Folder articles are copied (links
leaving the folder: ``path_escape``), so LaTeXML never runs in the user's folder. LaTeXML itself
keeps ``\\openout`` writes in memory; it can still *read* a file named by absolute path
(``\\input{/etc/hostname}``) into the converted text, so convert untrusted sources as a user that
can read nothing private.

An article that fails raises :class:`ArticleError` with one of :data:`REASONS`, the conversion's
failure vocabulary (the inventory and LaTeXML's run use it too), bounded by :class:`Limits`.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import stat
import tarfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proofmatch import config
from proofmatch.artifacts import atomic_path
from proofmatch.registry.checks import one_of

#: Why an article was not converted, in the order the checks run.
REASONS: dict[str, str] = {
    "duplicate_id": "two sources give the same article id; the one the metadata names (else the first by name) is kept",
    "unreadable": "the source cannot be read: not a valid tar or gzip file, truncated, or a read error",
    "path_escape": "an archive member, link or folder entry leaves the article's folder (absolute path, "
    "'..', symbolic or hard link out) or is a device/FIFO",
    "oversized": "more files than max_files or more unpacked bytes than max_archive_mb",
    "no_main_file": "no .tex file with both \\documentclass and \\begin{document}",
    "timeout": "LaTeXML ran past the per-article time limit (timeout_s)",
    "latexml_fatal": "LaTeXML stopped with a fatal error (its log says which) or wrote no output",
    "internal_error": "an unexpected exception (a bug), logged with its traceback",
}


class ArticleError(Exception):
    """One article cannot be converted; ``reason`` is a key of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        one_of("conversion failure reason", reason, REASONS)
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Limits:
    """Per-article bounds (config ``corpus.latex``)."""

    timeout_s: float = config.default("corpus.latex.timeout_s")
    max_archive_mb: float = config.default("corpus.latex.max_archive_mb")
    max_files: int = config.default("corpus.latex.max_files")

    @property
    def max_bytes(self) -> int:
        return int(self.max_archive_mb * (1 << 20))

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> Limits:
        """The limits of a validated ``latex`` config block (``corpus.latex`` or a transfer
        corpus's; every key filled in by validation); None: the schema's defaults."""
        if cfg is None:
            return cls()
        return cls(float(cfg["timeout_s"]), float(cfg["max_archive_mb"]), int(cfg["max_files"]))


_KINDS = (
    (".tar.gz", "tar"),
    (".tar.bz2", "tar"),
    (".tar.xz", "tar"),
    (".tgz", "tar"),
    (".tar", "tar"),
    (".gz", "gz"),
    (".tex", "tex"),
)
_CHUNK = 1 << 20


def source_kind(path: Path) -> tuple[str, str] | None:
    """(kind, stem) of a top-level entry: dir, tar, gz or tex; None for anything else."""
    if path.is_dir():
        return "dir", path.name
    if not path.is_file():
        return None
    low = path.name.lower()
    for suffix, kind in _KINDS:
        if low.endswith(suffix) and len(low) > len(suffix):
            return kind, path.name[: -len(suffix)]
    return None


def source_stem(name: str) -> str:
    """An entry's name without its first matching source suffix (a bare ``.gz``'s TeX file name)."""
    for suffix, _ in _KINDS:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


# --------------------------------------------------------------------------------------------
# unpacking


def _normalized(name: str) -> tuple[str, ...] | None:
    """A member path's components inside the folder, or None when it is absolute or leaves it."""
    name = name.replace("\\", "/")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return None
    parts: list[str] = []
    for part in name.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return tuple(parts)


def check_member(member: tarfile.TarInfo) -> None:
    """Raise ``path_escape`` for a member that could write or point outside the folder."""
    parts = _normalized(member.name)
    if parts is None:
        raise ArticleError("path_escape", f"member {member.name!r} leaves the folder")
    if member.issym():
        target = member.linkname
        joined = None if target.startswith("/") else _normalized("/".join(parts[:-1] + (target,)))
        if joined is None:
            raise ArticleError(
                "path_escape", f"symbolic link {member.name!r} -> {target!r} leaves the folder"
            )
    elif member.islnk():
        if _normalized(member.linkname) is None:
            raise ArticleError(
                "path_escape", f"hard link {member.name!r} -> {member.linkname!r} leaves the folder"
            )
    elif not (member.isfile() or member.isdir()):
        raise ArticleError("path_escape", f"member {member.name!r} is a device or FIFO")


def _extract_tar(path: Path, dest: Path, limits: Limits) -> None:
    if path.stat().st_size > limits.max_bytes:
        raise ArticleError("oversized", f"archive of {path.stat().st_size} bytes > max_archive_mb")
    try:
        with tarfile.open(path, "r:*") as tar:
            members, total = [], 0
            for member in tar:  # streamed: stops at the first member over a bound
                if len(members) >= limits.max_files:
                    raise ArticleError("oversized", f"more than {limits.max_files} files")
                check_member(member)
                total += member.size if member.isfile() else 0
                if total > limits.max_bytes:
                    raise ArticleError(
                        "oversized", f"more than {limits.max_archive_mb:g} MB unpacked"
                    )
                members.append(member)
            tar.extractall(dest, members=members, filter="data")
    except tarfile.FilterError as exc:
        raise ArticleError("path_escape", f"{type(exc).__name__}: {exc}") from exc
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise ArticleError("unreadable", f"{type(exc).__name__}: {exc}") from exc


def _copy_bounded(read, out: Path, limits: Limits, what: str) -> None:
    """Copy a stream into ``out``, at most ``max_bytes`` (read incrementally: a bomb is cut)."""
    total = 0
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        while chunk := read(_CHUNK):
            total += len(chunk)
            if total > limits.max_bytes:
                raise ArticleError("oversized", f"{what}: more than {limits.max_archive_mb:g} MB")
            fh.write(chunk)


def _extract_gz(path: Path, dest: Path, limits: Limits, stem: str) -> None:
    """arXiv's bare ``.gz``: a gzipped tar, or one gzipped TeX file (written as ``<stem>.tex``)."""
    try:
        is_tar = tarfile.is_tarfile(path)
    except (OSError, EOFError, zlib.error):
        is_tar = False
    if is_tar:
        _extract_tar(path, dest, limits)
        return
    try:
        with gzip.open(path, "rb") as fh:
            _copy_bounded(fh.read, dest / f"{stem}.tex", limits, "decompressed file")
    except (OSError, EOFError, zlib.error) as exc:
        raise ArticleError("unreadable", f"{type(exc).__name__}: {exc}") from exc


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _copy_dir(src: Path, dest: Path, limits: Limits) -> None:
    """Copy an article folder; a link leaving it or a special file rejects the article."""
    root = os.path.realpath(src)
    count = total = 0
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        dirnames.sort()
        rel = Path(dirpath).relative_to(src)
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                if not _inside(os.path.realpath(full), root):
                    raise ArticleError(
                        "path_escape", f"link {rel / name} -> {os.readlink(full)} leaves the folder"
                    )
                dirnames.remove(name)  # what it points to is inside and copied from there
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(full)
                if not _inside(real, root):
                    raise ArticleError(
                        "path_escape", f"link {rel / name} -> {os.readlink(full)} leaves the folder"
                    )
                if not os.path.isfile(real):
                    continue  # a dangling link or a link to a folder inside: nothing to copy
                full, st = real, os.stat(real)
            elif not stat.S_ISREG(st.st_mode):
                raise ArticleError("path_escape", f"{rel / name} is a device, FIFO or socket")
            count += 1
            total += st.st_size
            if count > limits.max_files:
                raise ArticleError("oversized", f"more than {limits.max_files} files")
            if total > limits.max_bytes:
                raise ArticleError("oversized", f"more than {limits.max_archive_mb:g} MB")
            (dest / rel).mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(full, dest / rel / name)
            except OSError as exc:
                raise ArticleError(
                    "unreadable", f"{rel / name}: {type(exc).__name__}: {exc}"
                ) from exc


def unpack(
    path: str | os.PathLike, kind: str, dest: str | os.PathLike, limits: Limits, stem: str
) -> None:
    """Unpack one article source into the empty folder ``dest`` (raises :class:`ArticleError`)."""
    path, dest = Path(path), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if kind == "dir":
        _copy_dir(path, dest, limits)
    elif kind == "tar":
        _extract_tar(path, dest, limits)
    elif kind == "gz":
        _extract_gz(path, dest, limits, stem)
    elif kind == "tex":
        try:
            with open(path, "rb") as fh:
                _copy_bounded(fh.read, dest / path.name, limits, "file")
        except OSError as exc:
            raise ArticleError("unreadable", f"{type(exc).__name__}: {exc}") from exc
    else:
        raise ValueError(f"unknown source kind {kind!r}")
