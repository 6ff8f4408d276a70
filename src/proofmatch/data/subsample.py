"""A share of a split's train part, for the data-scaling curve (this project's addition).

The paper trains on 147,278 pairs; a corpus of a few thousand cannot show that size, but it can show
the trend: the same model trained on 1/8, 1/4, 1/2 and all of the train part, tested on the same dev
and test parts. Each share is a prefix of one seeded permutation of the train pairs, so a smaller
share is a subset of a larger one (the curve adds data, it does not redraw it), and the dev and test
rows are copied unchanged.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from proofmatch.artifacts import read_table, write_parquet

log = logging.getLogger(__name__)


def kept_train_rows(n_train: int, fraction: float, seed: int) -> np.ndarray:
    """The indices (in file order) of the ``round(fraction * n_train)`` train rows kept, at least one."""
    if not 0 < fraction <= 1:
        raise ValueError(f"a train fraction must be in (0, 1], got {fraction}")
    keep = max(1, int(np.floor(fraction * n_train + 0.5)))
    order = np.random.default_rng([seed, n_train]).permutation(n_train)
    return np.sort(order[:keep])


def subsample_train(
    data_parquet: str | os.PathLike, out_parquet: str | os.PathLike, fraction: float, seed: int
) -> dict[str, int]:
    """Write ``data_parquet`` with only ``fraction`` of its train rows (file order kept); return the
    row count of each part written."""
    table = read_table(data_parquet)
    is_train = pc.equal(table["part"], "train").to_numpy(zero_copy_only=False)
    train_rows = np.flatnonzero(is_train)
    if train_rows.size == 0:
        raise ValueError(f"{data_parquet}: no train rows to subsample")
    kept = train_rows[kept_train_rows(train_rows.size, fraction, seed)]
    rows = np.sort(np.concatenate([kept, np.flatnonzero(~is_train)]))
    out = table.take(pa.array(rows))
    write_parquet(out, out_parquet, schema=table.schema)
    parts = out["part"].to_pylist()
    counts = {p: parts.count(p) for p in ("train", "dev", "test")}
    log.info(
        "wrote %s: %d of %d train pairs (fraction %g, seed %d), dev %d, test %d",
        out_parquet,
        counts["train"],
        train_rows.size,
        fraction,
        seed,
        counts["dev"],
        counts["test"],
    )
    return counts
