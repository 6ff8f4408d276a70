"""Which corpus feeds what: the training corpus, the transfer corpora and the LaTeX corpora of a
config, the files each is read from and the folders its results go to.

Why one module: a corpus comes in one of the source forms of :mod:`proofmatch.registry.sources`
(``demo``: the generated demo corpus; ``latex``: LaTeX sources converted with LaTeXML; ``dir``:
folders of XHTML with their metadata tables), in two roles (the training corpus ``corpus``, and
each entry of ``transfer.corpora``), and a generated corpus of either role is written by its
source's rule first (a LaTeX corpus under ``results/latex/<name>/``). The corpus rules (one set for
every corpus, over the ``{corpus}`` wildcard: :attr:`Corpus.wildcard`), the LaTeX rules, the
transfer table and ``rule all`` all ask the same questions (which folders and tables, how many
shards, which files); answered here once, they cannot drift apart.

Pure Python on purpose (no pandas, numpy or torch): the Snakefile imports it while it parses,
before any job runs. It stands on the ground floor (docs/architecture.md, "Floors") because the
config check (:mod:`proofmatch.config`) pairs a corpus's folders with their tables through
:func:`corpus_folders` too, and the config may import nothing above it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from proofmatch import experiments as X
from proofmatch.registry.sources import SOURCES, SourceSpec

TRANSFER_ROOT = "results/transfer"  # results/transfer/<name>/: a transfer corpus's results
INDEX_ROOT = "results/index"  # search indexes, laid out as results/runs
MAIN = "main"  # the training corpus's name (its LaTeX folder: results/latex/main)
MAIN_ROOT = "results"  # the training corpus's results: corpus/, extract/, linearize/, data/, eval/


PathLike = str | os.PathLike


class CorpusError(ValueError):
    """A corpus folder or metadata table that cannot be used; the message names file and row."""


def corpus_folders(
    dirs: PathLike | Sequence[PathLike],
    metadata: PathLike | Sequence[PathLike | None] | None,
    key: str = "corpus",
) -> list[tuple[str, str | None]]:
    """``(folder, metadata table or None)`` of every folder of a corpus.

    ``dirs`` is one folder or a list; ``metadata`` is one table (only with one folder), None, or a
    list as long as ``dirs`` (None entries: that folder has no table). ``key`` names the config
    block in the error, so a wrong combination says which key to fix and how."""
    folders = [dirs] if isinstance(dirs, (str, os.PathLike)) else list(dirs)
    if not folders:
        raise CorpusError(
            f"config key {key}.dir: no folder given; fix: a folder or a list of folders"
        )
    if metadata is None:
        tables: list[PathLike | None] = [None] * len(folders)
    elif isinstance(metadata, (str, os.PathLike)):
        if len(folders) != 1:
            raise CorpusError(
                f"config key {key}.metadata: one table for {len(folders)} folders; fix: a list of "
                f"{len(folders)} tables (null for a folder without one), in the order of {key}.dir"
            )
        tables = [metadata]
    else:
        tables = list(metadata)
        if len(tables) != len(folders):
            raise CorpusError(
                f"config key {key}.metadata: {len(tables)} tables for {len(folders)} folders; fix: one "
                f"entry per folder of {key}.dir, in its order (null for a folder without a table)"
            )
    return [(str(d), None if t is None else str(t)) for d, t in zip(folders, tables)]


@dataclass(frozen=True)
class Corpus:
    """One corpus of a config: ``name`` (:data:`MAIN` for the training corpus, else its
    ``transfer.corpora`` name), its config block ``entry`` (``source``, ``dir``, ``metadata``,
    ``latex``), its extraction shards and ``root``, the folder its results go to (``corpus/``,
    ``extract/``, ``linearize/``, ``data/``, ``eval/``)."""

    name: str
    entry: Mapping[str, Any]
    n_shards: int
    root: str

    @property
    def source(self) -> str:
        return self.entry["source"]

    @property
    def spec(self) -> SourceSpec:
        """Its source kind (:data:`proofmatch.registry.sources.SOURCES`)."""
        return SOURCES[self.source]

    @property
    def wildcard(self) -> str:
        """The value of the corpus rules' ``{corpus}`` wildcard (``results/{corpus}extract/...``):
        the corpus's folder below ``results/`` with a trailing slash, ``transfer/<name>/``, and
        empty for the training corpus, whose folders sit in ``results/`` itself (so its paths,
        and a results tree made before the rules were shared, stay as they were)."""
        return f"{self.root}/".removeprefix(f"{MAIN_ROOT}/")

    def entry_outputs(self, splits: Sequence[str]) -> dict[str, str]:
        """What the rule of a kind that enters after extraction writes (named outputs): the
        artifacts of the stages it skips, at the paths those stages write them (the read's
        report in the kind's folder; the manifest and articles; the pairs and the filter report;
        every configured split at every level a table can ask for: the four of Tables 3-5, and
        for pr also the protected ones of Table 6)."""
        out = {
            "report": f"{self.spec.root(self.name)}/report.json",
            "manifest": f"{self.root}/corpus/manifest.parquet",
            "articles": f"{self.root}/corpus/articles.parquet",
            "pairs": f"{self.root}/data/pairs.parquet",
            "filter_report": f"{self.root}/data/filter_report.json",
        }
        for split in splits:
            for level in X.ALL_LEVELS if split == "pr" else X.LEVELS:
                out[f"{split}_{level}"] = X.replaced_data(split, level)
        return out

    def inputs(self) -> dict[str, Any]:
        """The manifest rule's inputs: ``corpus`` (a folder, or the configured folders in order)
        and ``metadata`` (a table, or the configured tables that exist). A generated corpus (demo,
        LaTeX) is read from what its source's rule writes (``demo_corpus``, ``latex_corpus``)."""
        generated = self.spec.root(self.name)
        if generated is not None:
            return {"corpus": f"{generated}/xhtml", "metadata": f"{generated}/metadata.csv"}
        folders = corpus_folders(self.entry["dir"], self.entry["metadata"])
        return {"corpus": [d for d, _ in folders], "metadata": [t for _, t in folders if t]}

    def tables(self) -> list[str | None] | None:
        """The manifest rule's ``tables`` parameter: the metadata table of each folder of a ``dir``
        corpus (None: that folder has none), since the ``metadata`` input leaves out the folders
        without one; None for a generated corpus (demo, LaTeX), whose one table is that input."""
        if self.spec.root(self.name) is not None:
            return None
        return [t for _, t in corpus_folders(self.entry["dir"], self.entry["metadata"])]

    def test_data(self, split: str, level: str) -> str:
        """What a baseline fitted on ``split``'s train part is scored on at ``level``: the training
        corpus's replaced split, or a transfer corpus's pool (that train part, and every pair of
        the corpus as its test part: rule ``transfer_pool``)."""
        if self.name == MAIN:
            return X.replaced_data(split, level)
        return f"{self.root}/pool/{split}/{level}.parquet"

    def shard_files(self, stage: str, suffix: str) -> list[str]:
        """Every shard's file of ``stage`` (``extract``, ``linearize``): what the filter reads."""
        return [f"{self.root}/{stage}/shard-{i:03d}{suffix}" for i in range(self.n_shards)]

    # LaTeX sources (source: latex)

    @property
    def latex_root(self) -> str:
        return str(SOURCES["latex"].root(self.name))

    @property
    def latex_shards(self) -> int:
        """Conversion jobs: ``latex.n_shards``, else the corpus's extraction shards."""
        return int((self.entry.get("latex") or {}).get("n_shards") or self.n_shards)

    def latex_inputs(self, step: str) -> dict[str, Any]:
        """Named inputs of rule ``latex_inventory`` (``step="inventory"``: the source folder and
        the metadata table) or ``latex_corpus`` (``"corpus"``: the inventory, the table and every
        conversion shard)."""
        inputs: dict[str, Any] = (
            {"metadata": self.entry["metadata"]} if self.entry.get("metadata") else {}
        )
        if step == "inventory":
            return {"sources": self.entry["dir"], **inputs}
        if step == "corpus":
            shards = [
                f"{self.latex_root}/shards/shard-{i:03d}.json" for i in range(self.latex_shards)
            ]
            return {"inventory": f"{self.latex_root}/inventory.parquet", **inputs, "shards": shards}
        raise ValueError(f"unknown LaTeX step {step!r}; expected 'inventory' or 'corpus'")


# ----------------------------------------------------------------------------- a config's corpora


def main_corpus(config: Mapping[str, Any]) -> Corpus:
    """The training corpus (config ``corpus``)."""
    block = config["corpus"]
    return Corpus(MAIN, block, int(block["n_shards"]), MAIN_ROOT)


def xhtml_wildcards(config: Mapping[str, Any]) -> str:
    """The ``{corpus}`` constraint of the rules from the manifest to the filter: the corpora whose
    source enters as XHTML (a regex that matches nothing when there are none)."""
    names = [w for w, c in all_corpora(config).items() if not c.spec.after_extraction]
    return f"(?:{X.pattern(names)})" if names else "(?!)"


def made_splits(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The splits the workflow makes and replaces from the training corpus's pairs: every
    configured split, none when its source brings them split and replaced."""
    return () if main_corpus(config).spec.after_extraction else X.configured_splits(config)


def transfer_root(name: str) -> str:
    """Where a transfer corpus's results go: ``corpus/`` ... ``data/`` as the training corpus's,
    then its test pool ``pool/`` and the evaluations on it ``eval/``."""
    return f"{TRANSFER_ROOT}/{name}"


def transfer_corpora(config: Mapping[str, Any]) -> dict[str, Corpus]:
    """The transfer corpora by name, in config order; ``n_shards`` defaults to ``corpus.n_shards``."""
    found: dict[str, Corpus] = {}
    for entry in (config.get("transfer") or {}).get("corpora") or []:
        name = entry["name"]
        if name in found:
            raise ValueError(f"config transfer.corpora: the name {name!r} is used twice")
        n_shards = int(entry.get("n_shards") or config["corpus"]["n_shards"])
        found[name] = Corpus(name, entry, n_shards, transfer_root(name))
    return found


def all_corpora(config: Mapping[str, Any]) -> dict[str, Corpus]:
    """Every corpus of the config by its ``{corpus}`` wildcard (:attr:`Corpus.wildcard`): the
    training corpus first, then the transfer corpora in config order. The corpus rules
    (manifest, extract, linearize, filter_pairs, baseline) are constrained to these values."""
    return {c.wildcard: c for c in [main_corpus(config), *transfer_corpora(config).values()]}


def source_corpora(config: Mapping[str, Any], source: str) -> dict[str, Corpus]:
    """The corpora of one source kind, by name: what that source's rule writes
    (:attr:`SourceSpec.rule`, one job per name: ``results/latex/<name>/``). :data:`MAIN` first
    when ``corpus.source`` is ``source``, then the transfer corpora with it (the schema keeps
    "main" for the training corpus: no transfer corpus takes its folder)."""
    return {c.name: c for c in all_corpora(config).values() if c.source == source}


def source_corpus(config: Mapping[str, Any], source: str, name: str) -> Corpus:
    """The corpus ``name`` of :func:`source_corpora` (a source rule's wildcard value)."""
    corpora = source_corpora(config, source)
    if name not in corpora:
        raise ValueError(
            f"no {source} corpus named {name!r}: set corpus.source: {source}, or add a "
            f"transfer.corpora entry with source: {source}"
        )
    return corpora[name]


def conversion_reports(config: Mapping[str, Any]) -> dict[str, str]:
    """The conversion table's inputs: each LaTeX corpus's ``report.json``, by corpus name."""
    corpora = source_corpora(config, "latex")
    if not corpora:
        raise ValueError(
            "the conversion table needs a LaTeX corpus: corpus.source: latex, or a transfer "
            "corpus with source: latex"
        )
    return {name: f"{c.latex_root}/report.json" for name, c in corpora.items()}


def search_indexes(config: Mapping[str, Any]) -> list[str]:
    """The search indexes ``rule all`` builds for ``proofmatch serve``/``search``: one for each
    of ``fusion.search_runs``, laid out as its run folder under :data:`INDEX_ROOT`."""
    return [str(run.dir(INDEX_ROOT)) for run in X.search_runs(config)]
