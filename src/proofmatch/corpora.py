"""The shape of a configured corpus: its folders, and which metadata table belongs to which.

A corpus (config ``corpus``, and each of ``transfer.corpora``) may span several folders, each with
its own metadata table (``dir`` and ``metadata`` as parallel lists). :func:`corpus_folders` pairs
them and says, naming the config key, what to fix when they do not pair. It stands on the ground
floor because both the config check (:mod:`proofmatch.config`, before any job) and the manifest
stage (:mod:`proofmatch.data.corpus`) read it, and the config may import nothing above it.
"""

from __future__ import annotations

import os
from typing import Sequence

PathLike = str | os.PathLike


class CorpusError(ValueError):
    """A corpus folder or metadata table that cannot be used; the message names file and row."""


def corpus_folders(dirs: PathLike | Sequence[PathLike], metadata: PathLike | Sequence[PathLike | None] | None,
                   key: str = "corpus") -> list[tuple[str, str | None]]:
    """``(folder, metadata table or None)`` of every folder of a corpus.

    ``dirs`` is one folder or a list; ``metadata`` is one table (only with one folder), None, or a
    list as long as ``dirs`` (None entries: that folder has no table). ``key`` names the config
    block in the error, so a wrong combination says which key to fix and how."""
    folders = [dirs] if isinstance(dirs, (str, os.PathLike)) else list(dirs)
    if not folders:
        raise CorpusError(f"config key {key}.dir: no folder given; fix: a folder or a list of folders")
    if metadata is None:
        tables: list[PathLike | None] = [None] * len(folders)
    elif isinstance(metadata, (str, os.PathLike)):
        if len(folders) != 1:
            raise CorpusError(
                f"config key {key}.metadata: one table for {len(folders)} folders; fix: a list of "
                f"{len(folders)} tables (null for a folder without one), in the order of {key}.dir")
        tables = [metadata]
    else:
        tables = list(metadata)
        if len(tables) != len(folders):
            raise CorpusError(
                f"config key {key}.metadata: {len(tables)} tables for {len(folders)} folders; fix: one "
                f"entry per folder of {key}.dir, in its order (null for a folder without a table)")
    return [(str(d), None if t is None else str(t)) for d, t in zip(folders, tables)]
