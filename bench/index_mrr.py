"""MRR and accuracy of a search index's own scoring on one of its parts: each statement of the part
searched by id among that part's proofs (``SearchIndex.scores(query, part)``: for a fusion index
each half standardised over that part, as evaluation pools a part), its own proof's rank counted
with ties against it (:func:`proofmatch.scoring.fusion.gold_ranks`, as bench/pretrained_stacks.py
ranks).

    python3 bench/index_mrr.py --index DIR --part dev

So an index's dev MRR can be checked against the dev MRR its weights were chosen with.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from proofmatch.scoring.fusion import gold_ranks
from proofmatch.search.index import SearchIndex


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--part", default="dev")
    args = ap.parse_args()
    t0 = time.perf_counter()
    ix = SearchIndex(args.index)
    ids = ix.table.loc[ix.table["part"] == args.part, "pair_id"].tolist()
    S = np.stack([ix.scores(ix.parse(pid, kind="id"), args.part) for pid in ids])
    ranks = gold_ranks(S, np.arange(len(ids)))  # the part's rows are in index order
    row = {
        "index": args.index,
        "method": ix.method,
        "part": args.part,
        "n": len(ids),
        "mrr": round(float((1.0 / ranks).mean()), 6),
        "accuracy": round(float((ranks == 1).mean()), 6),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(row))


if __name__ == "__main__":
    main()
