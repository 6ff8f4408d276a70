"""``proofmatch search INDEX QUERY``: the top-k proofs for a statement, as text or JSON.

The query is a statement id of the index, an XHTML fragment, or LaTeX-flavoured text with
formulas between ``$…$`` (:mod:`proofmatch.search.query`). A query that cannot be searched
(empty, too long, a formula outside the known TeX, an unknown id) exits with status 2 and
says why on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from proofmatch.search.query import MAX_QUERY_CHARS, QueryError
from proofmatch.data.splits import PARTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("index", help="index folder (proofmatch index)")
    parser.add_argument("query", help="statement id, XHTML fragment, or text with $...$ formulas; - reads stdin")
    parser.add_argument("-k", type=int, default=10, help="results per page")
    parser.add_argument("--page", type=int, default=1)
    parser.add_argument("--part", choices=PARTS, help="only the proofs of this part")
    parser.add_argument("--kind", default="auto", choices=("auto", "id", "xhtml", "tex"))
    parser.add_argument("--max-chars", type=int, default=MAX_QUERY_CHARS)
    parser.add_argument("--lines", type=int, default=3, help="proof lines shown per result")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _print_text(index, q, hits, lines: int) -> None:
    d = index.describe()
    print(f"{len(hits)} proofs for a {q.kind} query, {d['method']} index of {d['n']} proofs ({d['backend']})")
    for h in hits:
        rec = index.record(h, proof_chars=None)
        title = f" — {rec['title']}" if rec["title"] else ""
        own = "  [its own proof]" if h.is_own_proof else ""
        print(f"\n{h.rank:>3}. {h.score:9.4f}  {rec['pair_id']}  ({rec['kind'] or 'proof'}, {rec['part']}){own}")
        print(f"     {rec['article_id']}{title}")
        wrapped = textwrap.wrap(rec["proof"], width=96)
        for line in wrapped[:lines]:
            print(f"     {line}")
        if len(wrapped) > lines:
            print("     …")


def main(args: argparse.Namespace) -> int:
    from proofmatch.search.index import SearchIndex

    text = sys.stdin.read() if args.query == "-" else args.query
    index = SearchIndex(args.index)
    try:
        if args.page < 1:
            raise QueryError("pages start at 1")
        q, hits = index.search(text, k=args.k, offset=(args.page - 1) * args.k, part=args.part,
                               kind=args.kind, max_chars=args.max_chars)
    except QueryError as err:
        print(f"proofmatch search: {err}", file=sys.stderr)
        return 2
    if args.json:
        out = {"index": index.describe(), "query": {"kind": q.kind, "n_tokens": len(q.tokens),
                                                    "pair_id": q.pair_id, "converters": q.converters},
               "page": args.page, "k": args.k, "part": args.part,
               "results": [index.record(h) for h in hits]}
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        _print_text(index, q, hits, args.lines)
    return 0
