"""Corpus sources: the forms a corpus comes in (config ``corpus.source`` and each
``transfer.corpora[].source``), one :class:`SourceSpec` each, in :data:`SOURCES`.

Why a registry: a source kind decides which files the manifest reads (a rule's generated
``xhtml/`` and ``metadata.csv``, or the configured folders as they are), which folders the config
check requires, how many folders ``dir`` may list, and how a caption names the corpus. Those
answers were branches on the source's name in four modules; here each kind states them once, and
:mod:`proofmatch.corpora`, :mod:`proofmatch.config` and the paper comparison ask it. The schema's
two ``source`` enums (one definition, ``#/definitions/source``) are checked against these names
in one place (tests/test_corpora.py). Adding a kind: docs/architecture.md, "Adding a corpus
source".

A kind also says where it enters the workflow (``enters``): as XHTML articles that the manifest
lists and the extraction reads (``xhtml``), or as data already extracted, filtered, split and
symbol-replaced (``replaced``: the released MATcH dataset), whose rule then writes the artifacts
those stages would have written (:meth:`proofmatch.corpora.Corpus.entry_outputs`) and the stages
before them are not planned for it.

Pure data below the ground floor (docs/architecture.md, "Floors"): it imports nothing of the
package, so the config check and the Snakefile read it before any job runs.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Where a source kind enters: ``xhtml`` (articles, read from the manifest on) or ``replaced``
#: (pairs already split and symbol-replaced, read from the replaced splits on).
ENTRY_STAGES = ("xhtml", "replaced")


@dataclass(frozen=True)
class SourceSpec:
    """One source kind.

    ``name``: the config's ``source`` value. ``label``: how a caption names such a corpus
    (``{dirs}``: its folders, comma-separated). ``rule``: the workflow rule that writes the
    corpus's ``xhtml/`` and ``metadata.csv`` into ``folder`` (``{name}``: the corpus's name,
    ``main`` for the training corpus); both None for a kind whose configured folders the manifest
    reads as they are. ``block``: the schema sub-block of its settings (a JSON pointer into
    config.schema.yaml), None when it has none. ``reads``: what the entry's ``dir`` holds, None
    when the kind reads no folder. ``several``: whether ``dir`` may list several folders, read as
    one corpus (each with its own metadata table). ``enters``: one of :data:`ENTRY_STAGES`, the
    stage whose artifacts the kind brings (``xhtml``: articles for the manifest)."""

    name: str
    label: str
    rule: str | None = None
    folder: str | None = None
    block: str | None = None
    reads: str | None = None
    several: bool = False
    enters: str = "xhtml"

    def __post_init__(self) -> None:
        if (self.rule is None) != (self.folder is None):
            raise ValueError(f"source {self.name!r}: a rule needs its folder and a folder its rule")
        if self.enters not in ENTRY_STAGES:
            raise ValueError(
                f"source {self.name!r}: enters {self.enters!r}; expected one of {ENTRY_STAGES}"
            )
        if self.enters != "xhtml" and self.rule is None:
            raise ValueError(
                f"source {self.name!r}: a kind that enters after extraction needs its rule"
            )

    @property
    def after_extraction(self) -> bool:
        """Whether the kind brings data past extraction (no manifest, extraction, filter, split
        or replacement job is planned for such a corpus; it can only be the training corpus)."""
        return self.enters != "xhtml"

    def root(self, corpus: str) -> str | None:
        """The folder ``rule`` writes the corpus named ``corpus`` into; None: read as configured."""
        return None if self.folder is None else self.folder.format(name=corpus)


SOURCES: dict[str, SourceSpec] = {
    spec.name: spec
    for spec in (
        # generated once (corpus.demo), whichever corpus names it: one folder for every role
        SourceSpec(
            "demo",
            label="the project's generated demo corpus",
            rule="demo_corpus",
            folder="results/demo_corpus",
            block="#/properties/corpus/properties/demo",
        ),
        SourceSpec("dir", label="XHTML articles in {dirs}", reads="XHTML articles", several=True),
        # converted with LaTeXML per corpus (workflow/rules/latex.smk, proofmatch.data.latex)
        SourceSpec(
            "latex",
            label="LaTeX sources in {dirs} (converted with LaTeXML)",
            rule="latex_corpus",
            folder="results/latex/{name}",
            block="#/definitions/latex",
            reads="LaTeX sources",
        ),
        # the released MATcH dataset: split and replaced as released (proofmatch.data.match)
        SourceSpec(
            "match",
            label="the MATcH dataset in {dirs} (its pairs, splits and levels as released)",
            rule="match_corpus",
            folder="results/match/{name}",
            reads="the released MATcH dataset (mixed/, unmixed/, pb/)",
            enters="replaced",
        ),
    )
}
