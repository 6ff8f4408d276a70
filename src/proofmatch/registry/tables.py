"""What a result table is, as the registry of tables holds it: :class:`TableSpec`.

Every file ``results/tables/{name}.md`` the workflow writes from this project's results is one
:class:`TableSpec`: its name, its title, its caption, and how it is made, either from rows of
evaluations (``rows``: rendered by the one ``rule table`` of workflow/rules/tables.smk) or by a
rule of its own (``rule``: Table 1 from the corpus, the paper comparison, the findings...).

This module is the registry floor's (docs/architecture.md, "Floors"): it imports nothing of the
package, so that every floor can read it. The tables themselves are registered in
:mod:`proofmatch.result_tables`: their rows are built of the experiments' runs and evaluations
(:mod:`proofmatch.experiments`, the ground floor, above this one), and so are written beside them.
A module named in the environment variable :data:`EXTRA_ENV` adds tables of its own
(:func:`extra_specs`): how a test plans a throw-away table, and how a study adds one without
editing the package.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TABLE_RULE = (
    "table"  # the one rule that renders every table made of rows (workflow/rules/tables.smk)
)
TABLES_DIR = "results/tables"
# Modules (comma-separated, importable) whose TABLES, a sequence of TableSpec, the registry adds.
EXTRA_ENV = "PROOFMATCH_TABLES"
NAME = re.compile(r"[a-z][a-z0-9_]*")  # a file stem and a wildcard value: no "/", ".", "-"


@dataclass(frozen=True)
class TableSpec:
    """One result table.

    ``name`` is its file stem (``results/tables/{name}.md``), ``title`` how errors and the paper
    comparison name it. ``caption`` is a template of what its .md and .tex files and the HTML
    report say above it, filled from the config by :func:`proofmatch.evaluation.captions.table_caption`
    (the fields of :func:`proofmatch.evaluation.captions.caption_fields`). ``rows`` takes a
    :class:`proofmatch.result_tables.Setting` (the evaluated part, the fused runs, Table 7's run)
    and returns the table's :class:`proofmatch.result_tables.Table`: the evaluation behind each
    cell, which the one ``rule table`` reads and ``render_table.py`` renders. A table made
    otherwise has no rows and names its own ``rule``."""

    name: str
    title: str
    caption: str
    rows: Callable[[Any], Any] | None = None
    rule: str = TABLE_RULE

    def __post_init__(self) -> None:
        if not NAME.fullmatch(self.name):
            raise ValueError(f"table name {self.name!r} is not a file stem ({NAME.pattern})")
        if (self.rows is None) == (self.rule == TABLE_RULE):
            raise ValueError(
                f"table {self.name!r}: rule {TABLE_RULE!r} renders tables with rows; a table "
                "without rows names the rule that makes it"
            )

    @property
    def target(self) -> str:
        """The table's Markdown file: what ``rule all`` asks for."""
        return f"{TABLES_DIR}/{self.name}.md"


def extra_specs(environ: Mapping[str, str] = os.environ) -> tuple[TableSpec, ...]:
    """The tables of the modules named in :data:`EXTRA_ENV` (none when it is unset): each
    module's ``TABLES``, a sequence of :class:`TableSpec`."""
    found: list[TableSpec] = []
    for name in filter(None, (n.strip() for n in environ.get(EXTRA_ENV, "").split(","))):
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ImportError(
                f"{EXTRA_ENV} names {name!r}, which cannot be imported: {exc}"
            ) from exc
        specs = getattr(module, "TABLES", None)
        if specs is None or not all(isinstance(s, TableSpec) for s in specs):
            raise TypeError(f"{EXTRA_ENV}: module {name!r} has no TABLES of TableSpec")
        found += specs
    return tuple(found)


def registry(*groups: Iterable[TableSpec]) -> dict[str, TableSpec]:
    """The tables of ``groups`` by name, in order; a name given twice is an error (an extra
    table may not replace one of the package's)."""
    out: dict[str, TableSpec] = {}
    for spec in (s for group in groups for s in group):
        if spec.name in out:
            raise ValueError(f"table {spec.name!r} is registered twice")
        out[spec.name] = spec
    return out
