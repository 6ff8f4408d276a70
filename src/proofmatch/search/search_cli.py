"""``proofmatch search INDEX QUERY``: the top-k proofs for a statement, as text or JSON.

The query is a statement id of the index, an XHTML fragment, or LaTeX-flavoured text with
formulas between ``$…$`` (:mod:`proofmatch.search.query`). Each result shows the statement its
proof proves, then the proof. ``--queries FILE`` (``-``: stdin) answers one query per non-empty
line in the same process, so the index and its model load once: each query's results under a
``== query N`` header, or with ``--json`` one JSON object per line (JSON Lines), a refused
query as ``{"query": …, "error": …}`` in its place.

A query that cannot be searched (empty, too long, an unbalanced ``$``, an unknown id, TeX or
XHTML that does not parse) exits with status 2 and says why on stderr. Every check that needs
no index comes before the index (and torch) is loaded: size, page and ``$`` balance, then the
parse of a query that cannot be an id of the index (one with a space, or ``--kind tex/xhtml``),
so such a refusal costs the parser's import, not the model's (docs/measured/search-cli.md). A
missing or stale index (an older format, a model that is not the one it was built with) is one
line on stderr and status 2, not a traceback. Over a batch, the status is 2 when any query was
refused, and each refusal is said in its place.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from proofmatch.data.splits import PARTS
from proofmatch.search.query import (
    MAX_QUERY_CHARS,
    Query,
    QueryError,
    check_dollars,
    check_size,
    parse_query,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("index", help="index folder (proofmatch index)")
    parser.add_argument(
        "query",
        nargs="?",
        help="statement id, XHTML fragment, or text with $...$ formulas; - reads stdin",
    )
    parser.add_argument(
        "--queries",
        metavar="FILE",
        help="many queries, one per non-empty line of FILE (- reads stdin), answered in one "
        "process; with --json one JSON object per line",
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
    parser.add_argument(
        "--statement-lines", type=int, default=2, help="lines of the statement proved per result"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--quantize",
        choices=("none", "int8"),
        default="none",
        help="encode typed queries with int8 Linear layers (faster, ranks a little differently: "
        "docs/measured/pretrained.md#search)",
    )
    parser.add_argument(
        "--explain",
        metavar="PAIR_ID",
        help="instead of the results: why this proof matches the query (each token's contribution "
        "to the score that ranks it; proofmatch.search.explain)",
    )


def _print_text(index, q, hits, lines: int, statement_lines: int = 2) -> None:
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
        for m in h.members or []:  # a fusion of several runs: each run's score and share
            halves += f"\n     {m['name']} {m['score']:.4f} (#{m['rank']}, {m['weighted_z']:+.3f})"
        print(
            f"\n{h.rank:>3}. {h.score:9.4f}  {rec['pair_id']}  ({rec['kind'] or 'proof'}, {rec['part']})"
            f"{own}{halves}"
        )
        print(f"     {rec['article_id']}{title}")
        _print_wrapped("proves: ", rec["statement"] or "", statement_lines)
        _print_wrapped("proof:  ", rec["proof"], lines)


def _print_wrapped(label: str, text: str, lines: int) -> None:
    """``text`` in lines of 96 characters, the first ``lines`` of them (``…`` when cut)."""
    if lines <= 0:
        return
    wrapped = textwrap.wrap(text, width=96 - len(label)) or [""]
    for i, line in enumerate(wrapped[:lines]):
        print(f"     {label if i == 0 else ' ' * len(label)}{line}")
    if len(wrapped) > lines:
        print(f"     {' ' * len(label)}…")


def _print_explanation(e: dict) -> None:
    print(
        f"why {e['pair_id']}: {e['method']} of {e['budget']['tokens']} tokens, {e['seconds']:.2f} s; "
        f"it explains {e['explains']} = {e['score']:.4f}"
    )
    for side in ("statement", "proof"):
        top = sorted(e[side], key=lambda t: -abs(t["weight"]))[:8]
        print(f"  {side}: " + ", ".join(f"{t['shown']} {t['weight']:+.3f}" for t in top))
    for m in e.get("fusion", {}).get("members", []):  # a fusion of several runs
        print(
            f"  run {m['name']} (weight {m['weight']:g}): score {m['score']:.4f}, share {m['share']:+.4f}"
        )


def _refuse_early(text: str, args: argparse.Namespace) -> None:
    """The checks that need no index (and no torch): size, page, k, the ``$`` of a text query."""
    check_size(text, args.max_chars)
    if args.page < 1:
        raise QueryError("pages start at 1")
    if args.k < 1:
        raise QueryError("-k must be at least 1")
    if args.kind in ("auto", "tex") and not text.lstrip().startswith("<"):
        check_dollars(text)


def _open_index(path: str, quantize: str = "none"):
    """The index, or a one-line reason when it is missing, unreadable or stale (no traceback)."""
    from proofmatch.search.index import SearchIndex, SettingError

    try:
        return SearchIndex(path, quantize=quantize), None
    except (FileNotFoundError, SettingError) as err:
        return None, f"cannot open index {path}: {err}"
    except (ValueError, KeyError, OSError) as err:
        hint = (
            "" if "rebuild" in str(err) else "; rebuild it with `proofmatch index` (docs/search.md)"
        )
        return None, f"index {path} is stale or incomplete for this proofmatch: {err}{hint}"


def _early_query(text: str, args: argparse.Namespace) -> Query | None:
    """The query parsed before any index is loaded (a refusal then costs no model), when it
    cannot be an id of the index: ``--kind tex``/``xhtml``, or text with a space (ids have none).
    None when it could be an id (the index decides, once loaded)."""
    _refuse_early(text, args)
    if args.kind == "id" or (args.kind == "auto" and not any(c.isspace() for c in text.strip())):
        return None
    return parse_query(text, None, args.kind, args.max_chars)  # auto: XHTML if it starts with <


def _queries(args: argparse.Namespace) -> list[str]:
    if args.queries is not None:
        if args.query is not None:
            raise QueryError("give one query or --queries FILE, not both")
        if args.queries == "-":
            lines = sys.stdin.read().splitlines()
        else:
            try:
                with open(args.queries, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except OSError as err:
                raise QueryError(f"cannot read the queries file {args.queries}: {err}") from None
            except UnicodeDecodeError as err:
                raise QueryError(f"{args.queries} is not UTF-8 text: {err}") from None
        queries = [line.strip() for line in lines if line.strip()]
        if not queries:
            raise QueryError(f"no query in {args.queries} (one per non-empty line)")
        return queries
    if args.query is None:
        raise QueryError("give a query, - to read one from stdin, or --queries FILE")
    return [sys.stdin.read() if args.query == "-" else args.query]


def _answer(index, text: str, early: Query | None, args: argparse.Namespace):
    """(query, hits) for one query; ``early``: its parse before the index, reused unless the
    text is an id of the index after all."""
    query: str | Query = text
    if early is not None and not (args.kind == "auto" and text in index.row_of):
        query = early
    return index.search(
        query,
        k=args.k,
        offset=(args.page - 1) * args.k,
        part=args.part,
        kind=args.kind,
        max_chars=args.max_chars,
    )


def _json_result(index, q, hits, args: argparse.Namespace) -> dict:
    return {
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


def main(args: argparse.Namespace) -> int:
    try:
        texts = _queries(args)
    except QueryError as err:
        print(f"proofmatch search: {err}", file=sys.stderr)
        return 2
    batch = args.queries is not None
    if batch and args.explain is not None:
        print("proofmatch search: --explain takes one query, not --queries", file=sys.stderr)
        return 2
    early: list[Query | None | QueryError] = []
    for text in texts:
        try:
            early.append(_early_query(text, args))
        except QueryError as err:
            early.append(err)
    if not batch and isinstance(early[0], QueryError):
        print(f"proofmatch search: {early[0]}", file=sys.stderr)
        return 2
    if all(isinstance(e, QueryError) for e in early):
        for i, (text, err) in enumerate(zip(texts, early), 1):
            _refused(i, text, err, args.json)
        return 2
    index, why = _open_index(args.index, args.quantize)
    if index is None:
        print(f"proofmatch search: {why}", file=sys.stderr)
        return 2
    if args.explain is not None:
        return _explain(index, texts[0], args)
    refused = 0
    for i, (text, pre) in enumerate(zip(texts, early), 1):
        try:
            if isinstance(pre, QueryError):
                raise pre
            q, hits = _answer(index, text, pre, args)
        except QueryError as err:
            refused += 1
            if batch:
                _refused(i, text, err, args.json)
                continue
            print(f"proofmatch search: {err}", file=sys.stderr)
            return 2
        if args.json:
            out = _json_result(index, q, hits, args)
            if batch:
                print(json.dumps({"query_text": text, **out}, ensure_ascii=False), flush=True)
            else:
                print(json.dumps(out, ensure_ascii=False, indent=2))
            continue
        if batch:
            print(f"{'' if i == 1 else chr(10)}== query {i}/{len(texts)}: {_short(text)}")
        for warning in q.warnings:
            print(f"proofmatch search: warning: {warning}", file=sys.stderr)
        _print_text(index, q, hits, args.lines, args.statement_lines)
        sys.stdout.flush()
    if batch and refused:
        print(f"proofmatch search: {refused} of {len(texts)} queries refused", file=sys.stderr)
    return 2 if refused else 0


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _refused(i: int, text: str, err: QueryError, as_json: bool) -> None:
    """A refused query of a batch, said in its place (JSON: a line of its own)."""
    if as_json:
        print(json.dumps({"query_text": text, "error": str(err)}, ensure_ascii=False), flush=True)
    else:
        print(f"proofmatch search: query {i} ({_short(text, 40)}): {err}", file=sys.stderr)


def _explain(index, text: str, args: argparse.Namespace) -> int:
    from proofmatch.search.explain import explain

    try:
        e = explain(
            index, text, args.explain, part=args.part, kind=args.kind, max_chars=args.max_chars
        )
    except QueryError as err:
        print(f"proofmatch search: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"index": index.describe(), **e}, ensure_ascii=False, indent=2))
    else:
        _print_explanation(e)
    return 0
