"""The result tables: each one's :class:`~proofmatch.registry.tables.TableSpec` (name, title, caption,
rows), and the design of the rows of Tables 3-7 and the baselines table.

A table of scores is a list of rows; a row names its label cells and, per column group, the
:class:`~proofmatch.experiments.Evaluation` (which run, scored on which part at which level)
whose numbers fill it. :data:`TABLES` is the registry the workflow reads: ``rule all`` asks for
every table's ``results/tables/{name}.md``, the one ``rule table`` renders every table with rows
(its ``{table}`` wildcard takes exactly their names), and the renderer takes each title and
caption from here. A new table is one entry of :data:`BUILTIN` (and its rows function) in this
file (docs/architecture.md, "Adding a table"); a module named in ``PROOFMATCH_TABLES`` adds
tables without editing it (:func:`proofmatch.registry.tables.extra_specs`). Pure Python, no torch
or pandas: the Snakefile imports it before any job runs.

It stands beside :mod:`proofmatch.experiments`, not in :mod:`proofmatch.registry`: the rows are made
of the experiments' runs and evaluations, and the registry floor lies below them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

from proofmatch import experiments as X
from proofmatch.experiments import Evaluation, Run
from proofmatch.registry.tables import TABLE_RULE, TableSpec, extra_specs, registry

TABLE7_RUN = Run("mixed", "scratchbert", "local", "conservation")  # hubness of its dev set


@dataclass(frozen=True)
class Row:
    """One table row: its label cells, one evaluation per column group, how they were decoded
    (``local``: MRR and Acc; ``global``: Acc only) and the keys a not-run reason may be given
    under, most specific first."""

    labels: tuple[str, ...]
    cells: tuple[Evaluation, ...]
    decoding: str
    keys: tuple[Hashable, ...]


@dataclass(frozen=True)
class Table:
    """A result table: ``name`` is its file stem (``results/tables/{name}.md``); ``groups`` head
    the column pairs ``"<group> MRR"``, ``"<group> Acc"``. A ``hubness`` table (Table 7) has one
    row with one cell and shows that evaluation's hubness instead."""

    name: str
    label_columns: tuple[str, ...]
    groups: tuple[str, ...]
    rows: tuple[Row, ...]
    kind: str = "scores"

    def reason(self, row: Row, not_run: Mapping[Hashable, str]) -> str | None:
        """Why ``row`` was not run, or None."""
        return next((X.note(not_run[k]) for k in row.keys if k in not_run), None)

    def evaluations(self, not_run: Mapping[Hashable, str] | None = None) -> list[Evaluation]:
        """The evaluations the table reads, each once, leaving out the rows not run."""
        rows = [r for r in self.rows if self.reason(r, not_run or {}) is None]
        return list(dict.fromkeys(e for r in rows for e in r.cells))


# Table 3: (mode, decodings reported); the paper reports no globally trained model decoded locally.
TABLE3_DECODINGS = {
    "local": X.DECODINGS,
    "hybrid": ("global",),
    "triplet": X.DECODINGS,
    "zeroshot": X.DECODINGS,  # a pretrained checkpoint as it is, and with a head on it
    "frozen": X.DECODINGS,
}
ZERO_SHOT = "zeroshot"  # a pretrained checkpoint's untrained mode: also a row of the baselines
TABLE5_ENCODERS = ("npt", "scratchbert")
TABLE5_LEVELS = ("conservation", "full")
# Table 6 (§9.4): rows are the five training levels, columns the two test levels that keep the
# protected symbols ("The test set preserves the protected symbols").
TABLE6_TRAIN = ("conservation", "partial", "partial_p", "full", "full_p")
TABLE6_TEST = ("conservation", "partial_p")


def table3(
    part: str = "test", encoders: Iterable[str] = X.ENCODERS, levels: Iterable[str] = X.LEVELS
) -> Table:
    """Encoders x training/decoding x replacement levels, on Mixed (trained and tested on one level)."""
    levels = tuple(levels)
    rows = tuple(
        Row(
            (X.model_label(enc, mode, dec),),
            tuple(Run("mixed", enc, mode, lv).evaluation(part) for lv in levels),
            dec,
            ((enc, mode), enc),
        )
        for enc in encoders
        for mode in X.ENCODER_MODES[enc]
        for dec in TABLE3_DECODINGS[mode]
    )
    return Table("table3", ("Encoder-Decoder",), tuple(X.LEVEL_NAMES[lv] for lv in levels), rows)


def table4(
    part: str = "test", splits: Iterable[str] = X.FAMILIES, levels: Iterable[str] = X.LEVELS
) -> Table:
    """Cross-replacement: ScratchBERT-Local-Local trained on one level (row), tested on another (column)."""
    levels = tuple(levels)
    rows = tuple(
        Row(
            (X.SPLIT_NAMES[split], X.LEVEL_NAMES[train]),
            tuple(
                Run(split, "scratchbert", "local", train).evaluation(part, test) for test in levels
            ),
            "local",
            ((split, train), split),
        )
        for split in splits
        for train in levels
    )
    return Table("table4", ("Split", "Training"), tuple(X.LEVEL_NAMES[lv] for lv in levels), rows)


def table5(
    part: str = "test",
    encoders: Iterable[str] = TABLE5_ENCODERS,
    views: Iterable[str] = X.VIEWS,
    levels: Iterable[str] = TABLE5_LEVELS,
) -> Table:
    """Input type (text / math / both) of NPT- and ScratchBERT-Local-Local on Mixed."""
    levels = tuple(levels)
    rows = tuple(
        Row(
            (X.ENCODER_NAMES[enc], X.VIEW_NAMES[view]),
            tuple(Run("mixed", enc, "local", lv, view).evaluation(part) for lv in levels),
            "local",
            ((enc, view), enc),
        )
        for enc in encoders
        for view in views
    )
    return Table("table5", ("Encoder", "Input"), tuple(X.LEVEL_NAMES[lv] for lv in levels), rows)


def table6(
    part: str = "test",
    train_levels: Iterable[str] = TABLE6_TRAIN,
    test_levels: Iterable[str] = TABLE6_TEST,
) -> Table:
    """Protected symbols on the probability domain: the pr split's ScratchBERT-Local-Local trained
    at each level (row), tested at the levels that keep the protected symbols (column group)."""
    test_levels = tuple(test_levels)
    rows = tuple(
        Row(
            (X.LEVEL_NAMES[train],),
            tuple(
                Run("pr", "scratchbert", "local", train).evaluation(part, test)
                for test in test_levels
            ),
            "local",
            (train, "pr"),
        )
        for train in train_levels
    )
    return Table(
        "table6", ("Training",), tuple(f"Test {X.LEVEL_NAMES[lv]}" for lv in test_levels), rows
    )


def table7(run: Run = TABLE7_RUN) -> Table:
    """Hubness of local decoding on the dev set of one run."""
    return Table(
        "table7", (), (), (Row((), (run.evaluation("dev"),), "local", ()),), kind="hubness"
    )


def baselines(
    part: str = "test",
    methods: Iterable[str] = X.METHODS,
    levels: Iterable[str] = X.LEVELS,
    fusion: Iterable[tuple[str, str]] = X.FUSION_RUNS,
) -> Table:
    """TF-IDF, the reference code's TF-IDF and BM25 on Mixed, local and global decoding, by level;
    then each pretrained checkpoint scored untrained (its ``zeroshot`` run); then each run of ``fusion`` ((encoder, mode) pairs) fused with BM25, trained and tested on the
    column's level (this project's rows; a fused run not made is not run for its encoder's reason)."""
    levels = tuple(levels)
    rows = tuple(
        Row(
            (X.model_label(method, X.BASELINE_MODE, dec),),
            tuple(X.baseline("mixed", method, lv, part) for lv in levels),
            dec,
            (method,),
        )
        for method in methods
        for dec in X.DECODINGS
    )
    rows += tuple(  # a pretrained checkpoint untrained: the zero-shot baseline of retrieval
        Row(
            (X.model_label(enc, ZERO_SHOT, dec),),
            tuple(Run("mixed", enc, ZERO_SHOT, lv).evaluation(part) for lv in levels),
            dec,
            ((enc, ZERO_SHOT), enc),
        )
        for enc in X.ENCODERS
        if ZERO_SHOT in X.ENCODER_MODES[enc]
        for dec in X.DECODINGS
    )
    rows += tuple(
        Row(
            (X.model_label(X.fusion_model(enc), mode, dec),),
            tuple(Run("mixed", enc, mode, lv).fusion(part) for lv in levels),
            dec,
            ((X.fusion_model(enc), mode), (enc, mode), enc),
        )
        for enc, mode in fusion
        for dec in X.DECODINGS
    )
    return Table("baselines", ("Method",), tuple(X.LEVEL_NAMES[lv] for lv in levels), rows)


@dataclass(frozen=True)
class Setting:
    """What a table's rows depend on besides their design: the evaluated part, the runs fused
    with BM25 (config ``fusion.runs``, :func:`proofmatch.experiments.fusion_runs`) and the run
    whose dev set Table 7 reads."""

    part: str = "test"
    fusion: tuple[tuple[str, str], ...] = X.FUSION_RUNS
    hubness_run: Run = TABLE7_RUN


# Table 7's caption: {proofs} is "the proofs", or "the 120 proofs" once the table is rendered.
HUBNESS_CAPTION = (
    "Table 7: cumulative distribution of {proofs} of the {part} set by the number of statements to "
    "which local decoding assigns them."
)
# The paper comparison's (proofmatch.evaluation.comparison.caption fills it).
COMPARISON_CAPTION = (
    "This run beside the paper, Tables 3-6: test MRR and accuracy (%) of every cell the paper "
    "reports; Difference = this run - paper, in points. This run: {corpus}{size}. Versus "
    "{paper}. Table 4 rows: split / training level, columns: test level; the Acc of a *-Global "
    "row is global decoding's accuracy. Table 6 rows: training level on the probability split, "
    "columns: test level."
)

# Every result table, in the order rule all lists them. A caption's {fields} are filled from the
# config (proofmatch.evaluation.captions.caption_fields); a table's pool is added where it is known.
BUILTIN: tuple[TableSpec, ...] = (
    TableSpec(
        "table1",
        "Table 1",
        "Statistics about the dataset and categories of mathematical articles.",
        rule="table1",
    ),
    TableSpec(
        "table2",
        "Table 2",
        (
            "Number of tokens in statements and proofs: minimum, maximum and mean ± SD of "
            "text+math, text only, math only and the math proportion. Tokens are counted as "
            "the length filter counts them (the paper's reference code): whitespace-separated"
            ' words of the text, titles such as "Lemma 3.2." included and punctuation '
            "attached to its word, plus one token per symbol of the linearized formulas; lone"
            " full stops at the ends of a statement are not counted."
        ),
        rule="table2",
    ),
    TableSpec(
        "table3",
        "Table 3",
        (
            "Table 3: MRR and accuracy (%) by encoder, training/decoding and symbol "
            "replacement level (trained and tested on the same level). No MRR for global "
            "decoding. The SPECTER-style rows are this project's addition, not in the paper: "
            "the same ScratchBERT trained with SPECTER's triplet margin loss (L2 distance, "
            "margin {margin:g}), one negative proof per statement, from the statement's own "
            "article with probability {hard_fraction:g} (SPECTER: 2 of 5 negatives, citations"
            " of citations), {pooling}. The SPECTER-style (MathBERT) rows train the MathBERT"
            " column's checkpoint with the same loss (SPECTER trained SciBERT), its pooling,"
            " normalisation and schedule those of matching.pretrained."
        ),
        rows=lambda s: table3(s.part),
    ),
    TableSpec(
        "table4",
        "Table 4",
        (
            "Table 4: cross-replacement MRR and accuracy (%) of ScratchBERT-Local-Local "
            "(rows: training level; columns: test level), Mixed and Unmixed splits."
        ),
        rows=lambda s: table4(s.part),
    ),
    TableSpec(
        "table5",
        "Table 5",
        (
            "Table 5: MRR and accuracy (%) of NPT- and ScratchBERT-Local-Local by input type;"
            " Both is the original, complete input."
        ),
        rows=lambda s: table5(s.part),
    ),
    TableSpec(
        "table6",
        "Table 6",
        (
            "Table 6: controlled cross-replacement levels of ScratchBERT-Local-Local on the "
            "probability-theory domain (the pr split: articles whose primary category is "
            "splits.pr_category, split by article as in Unmixed), MRR and accuracy (%). Rows:"
            " training level; columns: test level (both keep the protected symbols). +P: the "
            "protected symbols {protected} are not replaced."
        ),
        rows=lambda s: table6(s.part),
    ),
    TableSpec(
        "baselines",
        "Baselines table",
        (
            "Baselines: MRR and accuracy (%) of TF-IDF cosine and BM25 with local and global "
            "decoding (no MRR for global decoding). The paper reports only TF-IDF cosine's "
            "MRR range (11.4-29.8, §8); TF-IDF on the linearized tokens and BM25 are this "
            "project's, TF-IDF (reference code) is the paper's public code's vectorizer "
            "(scikit-learn defaults: lowercased, one-character tokens dropped). A ZeroShot row "
            "is a pretrained checkpoint untrained: the cosine of its mean-pooled vectors."
        ),
        rows=lambda s: baselines(s.part, fusion=s.fusion),
    ),
    TableSpec("table7", "Table 7", HUBNESS_CAPTION, rows=lambda s: table7(s.hubness_run)),
    TableSpec("paper_comparison", "Paper comparison", COMPARISON_CAPTION, rule="paper_comparison"),
    TableSpec(
        "findings",
        "Findings",
        "The paper's findings checked on this run (proofmatch.evaluation.findings)",
        rule="findings",
    ),
    TableSpec(
        "seeds",
        "Seed spread",
        "Seed spread of the headline runs (proofmatch.evaluation.report)",
        rule="seeds_table",
    ),
    TableSpec(
        "scaling",
        "Data scaling",
        "Data scaling of the headline runs (proofmatch.evaluation.report)",
        rule="scaling_table",
    ),
)
TABLES: dict[str, TableSpec] = registry(BUILTIN, extra_specs())


def rendered() -> tuple[str, ...]:
    """The names of the tables the one ``rule table`` renders (those with rows): its
    ``{table}`` wildcard's values."""
    return tuple(name for name, spec in TABLES.items() if spec.rule == TABLE_RULE)


def tables(
    part: str = "test",
    hubness_run: Run = TABLE7_RUN,
    fusion: Iterable[tuple[str, str]] = X.FUSION_RUNS,
) -> dict[str, Table]:
    """Every table with rows by name, in the registry's order; ``fusion``: the runs fused with
    BM25 in the baselines table (config fusion.runs, :func:`proofmatch.experiments.fusion_runs`)."""
    setting = Setting(part, tuple(fusion), hubness_run)
    made = {name: TABLES[name].rows(setting) for name in rendered()}  # type: ignore[misc]
    wrong = [f"{n} makes {t.name!r}" for n, t in made.items() if t.name != n]
    if wrong:
        raise ValueError("a table's rows name another table: " + ", ".join(wrong))
    return made
