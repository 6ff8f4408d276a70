"""Listing a corpus folder: which files are articles, and what is left out and why.

A corpus folder is untrusted: odd names (not UTF-8), folders or FIFOs named like articles, symlinks
out of the folder or into a loop, unreadable sub-folders and two files with one id are each left
out with a counted reason (:data:`LISTING_REASONS`) instead of stopping the run. Split out of
:mod:`proofmatch.data.corpus`, which joins the listing with the metadata and shards it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from proofmatch.corpora import CorpusError

log = logging.getLogger(__name__)

ARTICLE_SUFFIXES = (".xhtml.gz", ".html.gz", ".xhtml", ".html")


def article_suffix(name: str) -> str | None:
    """The article suffix of a file name (``.xhtml.gz`` ...), or None when it is not an article."""
    low = name.lower()
    return next((s for s in ARTICLE_SUFFIXES if low.endswith(s)), None)


def strip_article_suffix(name: str) -> str:
    """File name without its article suffix: the default article id."""
    suffix = article_suffix(name)
    return name[: -len(suffix)] if suffix else name


#: Why a listed entry is left out of the corpus (the extraction report's ``files_skipped``):
LISTING_REASONS = (
    "bad_name",  # a name that is not valid UTF-8 (it could not be an id or a Parquet string)
    "not_a_file",  # an article-named folder, FIFO, socket or device
    "bad_symlink",  # a dangling or looping symlink
    "symlink_outside",  # a symlink to a file outside the corpus folder (``/etc/passwd.html``)
    "unreadable_folder",  # a sub-folder that cannot be listed
    "duplicate_id",  # a second file with an id taken by an earlier one (sorted path order)
)


def display_path(path: str | os.PathLike) -> str:
    """``path`` as printable text: undecodable bytes as ``\\xe9`` (never a lone surrogate)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def is_utf8(path: str | os.PathLike) -> bool:
    """Whether a path (or an id) is valid UTF-8 text, so it can go into Parquet and JSON as it is."""
    try:
        os.fsencode(path).decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return False
    return True


def skipped_entry(path: str | os.PathLike, reason: str, detail: str) -> dict[str, str]:
    assert reason in LISTING_REASONS, reason
    shown = display_path(path)
    log.warning("left out %s (%s): %s", shown, reason, detail)
    return {"path": shown, "reason": reason, "detail": detail}


def scan_articles(corpus_dir: str | os.PathLike) -> tuple[list[Path], list[dict[str, str]]]:
    """(article files under ``corpus_dir``, entries left out with a reason), both sorted.

    Recursive; a symlinked folder is followed when it leads to a folder inside the corpus folder
    not listed yet, and left out (counted) otherwise. An article file is a regular file with an
    article suffix, or a symlink to one inside the corpus folder. Everything else with an article
    suffix, and every folder that cannot be listed, is left out with one of
    :data:`LISTING_REASONS`, so the report counts it instead of losing it silently.
    """
    root = Path(corpus_dir)
    if not root.is_dir():
        raise CorpusError(f"corpus folder {root} does not exist or is not a folder")
    real_root = root.resolve()
    found: list[Path] = []
    skipped: list[dict[str, str]] = []

    def unreadable(err: OSError) -> None:
        skipped.append(
            skipped_entry(
                err.filename, "unreadable_folder", f"{type(err).__name__}: {err.strerror}"
            )
        )

    visited = {real_root}  # real folders listed (or to be): each once, whatever path leads there
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=True):
        dirnames.sort()
        keep = []
        for name in dirnames:
            path = Path(dirpath) / name
            if article_suffix(name):
                what = "a symlink to a folder" if path.is_symlink() else "a folder"
                skipped.append(skipped_entry(path, "not_a_file", f"{what} with an article name"))
                if path.is_symlink():
                    continue
            left_out = _folder_left_out(path, real_root, visited)
            if left_out is not None:
                skipped.append(left_out)
            elif path.resolve() not in visited:
                visited.add(path.resolve())
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if not article_suffix(name):
                if path.is_symlink() and not path.exists():  # perhaps a folder once: counted
                    skipped.append(
                        skipped_entry(path, "bad_symlink", "dangling or looping symlink")
                    )
                continue
            left_out = _left_out(path, real_root)
            if left_out is None:
                found.append(path)
            else:
                skipped.append(left_out)
    if not found:
        raise CorpusError(
            f"corpus folder {root} holds no articles (*{', *'.join(ARTICLE_SUFFIXES)}, searched recursively)"
            + (f"; {len(skipped)} entries left out: {_reason_counts(skipped)}" if skipped else "")
        )
    skipped.sort(key=lambda s: s["path"])
    return sorted(found, key=lambda p: p.relative_to(root).as_posix()), skipped


def _folder_left_out(path: Path, real_root: Path, visited: set[Path]) -> dict[str, str] | None:
    """Why a symlinked sub-folder is not followed (dangling or looping, outside the corpus folder,
    or leading to a folder listed already), or None: a plain folder, or a symlink followed."""
    if not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return skipped_entry(
            path, "bad_symlink", f"dangling or looping symlinked folder ({type(exc).__name__})"
        )
    if not target.is_relative_to(real_root):
        return skipped_entry(
            path,
            "symlink_outside",
            f"a symlinked folder pointing outside the corpus folder, to {display_path(target)}",
        )
    if target in visited or path.parent.resolve().is_relative_to(target):
        return skipped_entry(
            path,
            "bad_symlink",
            f"a symlinked folder leading to {display_path(target)}, listed already (or a loop)",
        )
    return None


def _left_out(path: Path, real_root: Path) -> dict[str, str] | None:
    """Why a file with an article suffix is not an article (:func:`skipped_entry`), or None if it
    is one: a regular file with a UTF-8 path, or a symlink to one inside the corpus folder."""
    if not is_utf8(path):
        return skipped_entry(path, "bad_name", "the path is not valid UTF-8; rename the file")
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            return skipped_entry(
                path, "bad_symlink", f"dangling or looping symlink ({type(exc).__name__})"
            )
        if not target.is_relative_to(real_root):
            return skipped_entry(
                path,
                "symlink_outside",
                f"points outside the corpus folder, to {display_path(target)}",
            )
    try:
        regular = path.is_file()
    except OSError as exc:
        return skipped_entry(path, "bad_symlink", f"{type(exc).__name__}: {exc}")
    if not regular:
        return skipped_entry(
            path, "not_a_file", "not a regular file (FIFO, socket, device or folder)"
        )
    return None


def _reason_counts(skipped: Sequence[dict[str, str]]) -> str:
    counts: dict[str, int] = {}
    for s in skipped:
        counts[s["reason"]] = counts.get(s["reason"], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def list_articles(corpus_dir: str | os.PathLike) -> list[Path]:
    """The article files of :func:`scan_articles` (what it leaves out is logged)."""
    return scan_articles(corpus_dir)[0]
