"""One replacement level over the symbols file (:mod:`proofmatch.data.replace`'s middle stage):
each pair's mapping at the level (:class:`Level`), a batch's proofs renamed (:func:`replace_batch`;
the conservation level passes a batch through, :func:`passed_through`), and the counts of the
level's summary (:class:`Tally`, :func:`level_summary`). Which symbols are renamed, and to what,
is :mod:`proofmatch.data.symbols`'s; where they stand in the tokens, :mod:`proofmatch.data.slots`'s."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from proofmatch.data.slots import apply_mapping
from proofmatch.data.symbols import (
    UNCHANGED_REASONS,
    Symbols,
    pair_rng,
    plan_mapping,
    renamed_count,
    shared_groups,
    unchanged_reason,
)

# the symbols file's columns of each side's symbol sets (Symbols.encode)
SYMBOL_SETS = [
    f"{side}_{kind}"
    for side in ("statement", "proof")
    for kind in ("candidates", "letters", "constants")
]
LEVEL_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("article_id", pa.string()),
        ("statement_tokens", pa.list_(pa.string())),
        ("proof_tokens", pa.list_(pa.string())),
        ("mapping", pa.string()),
    ]
)


@dataclass(frozen=True)
class Level:
    """One replacement level and the settings it runs with (all recorded in its summary)."""

    name: str
    seed: int
    alpha: float | None
    protected: Sequence[str]
    rounding: str | None

    @property
    def partial(self) -> bool:
        return self.name.startswith("partial")

    def plan(self, statement: Symbols, proof: Symbols, pair_id: str) -> tuple[int, dict[str, str]]:
        """The pair's number of shared groups and its mapping (random from the pair's own seed)."""
        n_groups = len(shared_groups(statement, proof, self.name, self.protected))
        rng = pair_rng(self.seed, self.name, pair_id)
        return n_groups, plan_mapping(
            statement, proof, self.name, rng, self.alpha, self.protected, self.rounding
        )


@dataclass
class Tally:
    """The counts of a level's summary, added pair by pair."""

    unchanged: Counter[str] = field(
        default_factory=lambda: Counter({r: 0 for r in UNCHANGED_REASONS})
    )
    groups_hist: Counter[int] = field(default_factory=Counter)
    n: int = 0
    n_changed: int = 0
    n_kept: int = 0  # symbols kept because no letter was left
    n_shared: int = 0  # shared groups, over all pairs
    n_renamed: int = 0  # of them renamed (partial levels)

    def passed_through(self, n_pairs: int) -> None:
        """``n_pairs`` pairs of the conservation level (nothing renamed, nothing to plan)."""
        self.n += n_pairs
        self.unchanged["conservation"] += n_pairs

    def add(
        self,
        level: Level,
        n_groups: int,
        mapping: dict[str, str],
        n_renamed_symbols: int,
        changed: bool,
    ) -> None:
        self.n += 1
        self.n_changed += changed
        self.n_kept += len(mapping) - n_renamed_symbols
        self.groups_hist[min(n_groups, 3)] += 1
        self.n_shared += n_groups
        if level.partial:
            self.n_renamed += renamed_count(n_groups, level.name, level.alpha, level.rounding)
        if not changed:
            self.unchanged[
                unchanged_reason(n_groups, level.name, level.alpha, mapping, level.rounding)
            ] += 1


def passed_through(batch: pa.RecordBatch) -> pa.Table:
    """The conservation level of a batch: its tokens as they are, as Arrow data, and no mapping."""
    table = pa.Table.from_batches([batch]).select(LEVEL_SCHEMA.names[:-1])
    return table.append_column("mapping", pa.array(["{}"] * batch.num_rows, pa.string()))


def _renamed_tokens(
    proof_tokens: pa.Scalar, slots: list[int], renamed: dict[str, str]
) -> list[str] | None:
    """The proof's tokens with ``renamed`` applied to its slots; None when no token changes."""
    if not (renamed and slots):
        return None
    original = proof_tokens.as_py()
    tokens = apply_mapping(original, slots, renamed)
    return tokens if tokens != original else None


def replace_batch(batch: pa.RecordBatch, level: Level, tally: Tally) -> pa.Table:
    """One batch of the symbols file at ``level`` (a level other than conservation)."""
    columns = {name: batch.column(name).to_pylist() for name in ["pair_id", "slots", *SYMBOL_SETS]}
    proof_tokens = batch.column("proof_tokens")
    take, new_tokens, mappings = list(range(batch.num_rows)), [], []
    for k, pid in enumerate(columns["pair_id"]):
        statement = Symbols.decode(*(columns[s][k] for s in SYMBOL_SETS[:3]))
        proof = Symbols.decode(*(columns[s][k] for s in SYMBOL_SETS[3:]))
        n_groups, mapping = level.plan(statement, proof, pid)
        renamed = {c: t for c, t in mapping.items() if c != t}
        tokens = _renamed_tokens(proof_tokens[k], columns["slots"][k], renamed)
        if tokens is not None:
            take[k] = batch.num_rows + len(new_tokens)
            new_tokens.append(tokens)
        mappings.append(json.dumps(mapping, ensure_ascii=False, sort_keys=True))
        tally.add(level, n_groups, mapping, len(renamed), changed=tokens is not None)
    # Unchanged rows keep their Arrow token lists; only renamed proofs go through Python.
    both = pa.concat_arrays([proof_tokens, pa.array(new_tokens, proof_tokens.type)])
    return pa.table(
        {
            "pair_id": batch.column("pair_id"),
            "article_id": batch.column("article_id"),
            "statement_tokens": batch.column("statement_tokens"),
            "proof_tokens": both.take(pa.array(take, pa.int64())),
            "mapping": pa.array(mappings, pa.string()),
        },
        schema=LEVEL_SCHEMA,
    )


def level_summary(level: Level, tally: Tally) -> dict[str, Any]:
    """The level's summary JSON (:func:`proofmatch.data.replace.replace_level_file` writes it)."""
    hist = tally.groups_hist
    return {
        "level": level.name,
        "pairs": tally.n,
        "changed": tally.n_changed,
        "unchanged_pairs": tally.n - tally.n_changed,
        "unchanged": dict(tally.unchanged),
        "symbols_kept_no_free_letter": tally.n_kept,
        "pairs_by_shared_groups": None
        if level.name == "conservation"
        else {"0": hist[0], "1": hist[1], "2": hist[2], "3+": hist[3]},
        "seed": level.seed,
        "alpha": level.alpha if level.partial else None,
        "rounding": level.rounding if level.partial else None,
        # partial: of all shared groups, how many were chosen for renaming and how many keep their
        # names (the achieved share of kept groups is what alpha asks for, up to rounding)
        "partial_groups": {
            "shared": tally.n_shared,
            "renamed": tally.n_renamed,
            "kept": tally.n_shared - tally.n_renamed,
        }
        if level.partial
        else None,
        "protected": list(level.protected) if level.name.endswith("_p") else [],
    }
