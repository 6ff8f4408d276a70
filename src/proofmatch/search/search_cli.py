"""``proofmatch search INDEX QUERY``: the top-k proofs for a statement, as text or JSON.

The query is a statement id of the index, an XHTML fragment, or LaTeX-flavoured text with
formulas between ``$…$`` (:mod:`proofmatch.search.query`). A query that cannot be searched
(empty, too long, an unbalanced ``$``, an unknown id) exits with status 2 and says why on stderr;
the checks that need no index come before the index (and torch) is loaded. A missing or stale
index (an older format, a model that is not the one it was built with) is one line on stderr and
status 2, not a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from proofmatch.data.splits import PARTS
from proofmatch.search.query import MAX_QUERY_CHARS, QueryError, check_dollars, check_size


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("index", help="index folder (proofmatch index)")
    parser.add_argument(
        "query", help="statement id, XHTML fragment, or text with $...$ formulas; - reads stdin"
    )
    parser.add_argument("-k", type=int, default=10, help="results per page")
    parser.add_argument("--page", type=int, default=1, help="page of results (1 is the top k)")
    parser.add_argument(
        "--part", choices=PARTS, help="only the proofs of this part (default: all parts)"
    )
    parser.add_argument(
        "--kind",
        default="auto",
        choices=("auto", "id", "xhtml", "tex"),
        help="how to read the query; auto: an id of the index, else XHTML if it starts with <, else text",
    )
    parser.add_argument(
        "--max-chars",
        type=int,
        default=MAX_QUERY_CHARS,
        help="longest query accepted, in characters",
    )
    parser.add_argument("--lines", type=int, default=3, help="proof lines shown per result")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--explain",
        metavar="PAIR_ID",
        help="instead of the results: why this proof matches the query (each token's contribution "
        "to the score that ranks it; proofmatch.search.explain)",
    )


def _print_text(index, q, hits, lines: int) -> None:
    d = index.describe()
    scorer = d["scorer"]
    if scorer == "fusion":
        scorer = (
            f"fusion ({d['encoder']} + BM25, λ = {d['fusion_weight']:g}, "
            f"{'given by hand' if d['fusion_weight_source'] == 'hand' else 'chosen on dev'})"
        )
    print(
        f"{len(hits)} proofs for a {q.kind} query, {scorer} index of {d['n']} proofs ({d['backend']})"
    )
    for h in hits:
        rec = index.record(h, proof_chars=None)
        title = f" — {rec['title']}" if rec["title"] else ""
        own = "  [its own proof]" if h.is_own_proof else ""
        halves = (
            f"  learned {h.learned:.4f} (#{h.learned_rank}), BM25 {h.bm25:.4f} (#{h.bm25_rank})"
            if h.learned is not None
            else ""
        )
        print(
            f"\n{h.rank:>3}. {h.score:9.4f}  {rec['pair_id']}  ({rec['kind'] or 'proof'}, {rec['part']})"
            f"{own}{halves}"
        )
        print(f"     {rec['article_id']}{title}")
        wrapped = textwrap.wrap(rec["proof"], width=96)
        for line in wrapped[:lines]:
            print(f"     {line}")
        if len(wrapped) > lines:
            print("     …")


def _print_explanation(e: dict) -> None:
    print(
        f"why {e['pair_id']}: {e['method']} of {e['budget']['tokens']} tokens, {e['seconds']:.2f} s; "
        f"it explains {e['explains']} = {e['score']:.4f}"
    )
    for side in ("statement", "proof"):
        top = sorted(e[side], key=lambda t: -abs(t["weight"]))[:8]
        print(f"  {side}: " + ", ".join(f"{t['shown']} {t['weight']:+.3f}" for t in top))


def _refuse_early(text: str, args: argparse.Namespace) -> None:
    """The checks that need no index (and no torch): size, page, k, the ``$`` of a text query."""
    check_size(text, args.max_chars)
    if args.page < 1:
        raise QueryError("pages start at 1")
    if args.k < 1:
        raise QueryError("-k must be at least 1")
    if args.kind in ("auto", "tex") and not text.lstrip().startswith("<"):
        check_dollars(text)


def _open_index(path: str):
    """The index, or a one-line reason when it is missing, unreadable or stale (no traceback)."""
    from proofmatch.search.index import SearchIndex

    try:
        return SearchIndex(path), None
    except FileNotFoundError as err:
        return None, f"cannot open index {path}: {err}"
    except (ValueError, KeyError, OSError) as err:
        hint = (
            "" if "rebuild" in str(err) else "; rebuild it with `proofmatch index` (docs/search.md)"
        )
        return None, f"index {path} is stale or incomplete for this proofmatch: {err}{hint}"


def main(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.query == "-" else args.query
    try:
        _refuse_early(text, args)
    except QueryError as err:
        print(f"proofmatch search: {err}", file=sys.stderr)
        return 2
    index, why = _open_index(args.index)
    if index is None:
        print(f"proofmatch search: {why}", file=sys.stderr)
        return 2
    try:
        if args.explain is not None:
            from proofmatch.search.explain import explain

            e = explain(
                index, text, args.explain, part=args.part, kind=args.kind, max_chars=args.max_chars
            )
            if args.json:
                print(json.dumps({"index": index.describe(), **e}, ensure_ascii=False, indent=2))
            else:
                _print_explanation(e)
            return 0
        q, hits = index.search(
            text,
            k=args.k,
            offset=(args.page - 1) * args.k,
            part=args.part,
            kind=args.kind,
            max_chars=args.max_chars,
        )
    except QueryError as err:
        print(f"proofmatch search: {err}", file=sys.stderr)
        return 2
    if args.json:
        out = {
            "index": index.describe(),
            "scorer": index.method,
            "query": {
                "kind": q.kind,
                "n_tokens": len(q.tokens),
                "pair_id": q.pair_id,
                "converters": q.converters,
                "warnings": q.warnings,
            },
            "page": args.page,
            "k": args.k,
            "part": args.part,
            "results": [index.record(h) for h in hits],
        }
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        for warning in q.warnings:
            print(f"proofmatch search: warning: {warning}", file=sys.stderr)
        _print_text(index, q, hits, args.lines)
    return 0
