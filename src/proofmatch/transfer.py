"""Cross-corpus transfer: trained runs and baselines tested on every pair of another corpus.

Beyond the paper, which trains and tests on MREC only: a model is useful on a new corpus only if
it holds there. The config names further corpora (``transfer.corpora``: a name, a source form
``demo``/``dir``/``latex``, a folder and metadata). Their articles go through the same extraction,
linearization and filters as the training corpus (the workflow reuses those rules with the same
config), and all their kept pairs form one test pool, as the test part of the training corpus
does. Only the test side changes: the chosen runs (``transfer.runs``, default NPT-Local and
ScratchBERT-Local, trained on Conservation of ``transfer.split``, default Mixed) are evaluated
unchanged, and the baselines (``transfer.baselines``, default TF-IDF and BM25) are fitted as for
the in-corpus numbers: TF-IDF on the training corpus's train part, BM25 on the evaluated proofs.

A pool file (:func:`build_pool`) therefore holds two parts in the layout of
``results/replaced/<split>/conservation.parquet``: ``train`` = the training corpus's train part
(what TF-IDF is fitted on) and ``test`` = every kept pair of the transfer corpus, with its tokens as
linearized (Conservation: no symbol is replaced). :func:`proofmatch.evaluate.evaluate_run` and
:func:`proofmatch.baselines.run_baseline` then read it like any split. Pairs of the pool that also
occur in the training corpus (same article id, or the same statement and proof tokens) are
counted in the pool's JSON and shown in the table note: such a pool is no clean transfer.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .replace import OUTPUT_SCHEMA
from .render import write_table
from .splits import read_part
from .store import atomic_path, read_json, read_parquet, write_json
from .tables import ENCODER_NAMES, METHOD_NAMES, SPLIT_NAMES, cells, eval_json, load_metrics

log = logging.getLogger(__name__)

DEFAULT_RUNS = ("npt-local", "scratchbert-local")
DEFAULT_BASELINES = ("tfidf", "bm25")
LEVEL = "conservation"  # the setting: runs trained on Conservation, pools not replaced
MODE_NAMES = {"local": "Local", "hybrid": "Global", "triplet": "Triplet"}
IN_CORPUS = "in"


def transfer_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``transfer`` block with defaults: split, level, runs as (encoder, mode), baselines and
    corpora by name (each with ``n_shards``). Empty ``corpora`` when none is configured."""
    block = config.get("transfer") or {}
    corpora: dict[str, dict[str, Any]] = {}
    for entry in block.get("corpora") or []:
        if entry["name"] in corpora:
            raise ValueError(f"config transfer.corpora: the name {entry['name']!r} is used twice")
        corpora[entry["name"]] = {**entry, "n_shards": int(entry.get("n_shards") or config["corpus"]["n_shards"])}
    runs = [tuple(r.split("-", 1)) for r in block.get("runs") or DEFAULT_RUNS]
    return {"split": block.get("split", "mixed"), "level": LEVEL, "runs": runs,
            "baselines": list(block.get("baselines") or DEFAULT_BASELINES), "corpora": corpora}


def corpus_entry(settings: Mapping[str, Any], name: str) -> dict[str, Any]:
    if name not in settings["corpora"]:
        raise ValueError(f"no transfer corpus named {name!r} in config transfer.corpora")
    return settings["corpora"][name]


def corpus_inputs(settings: Mapping[str, Any], name: str) -> dict[str, str]:
    """The corpus folder and metadata of a transfer corpus, by its source form (the workflow's
    manifest inputs): the demo corpus, the LaTeXML-converted folder, or the configured folder."""
    entry = corpus_entry(settings, name)
    if entry["source"] == "demo":
        return {"corpus": "results/demo_corpus/xhtml", "metadata": "results/demo_corpus/metadata.csv"}
    if entry["source"] == "latex":
        return {"corpus": f"results/latex/{name}/xhtml", "metadata": f"results/latex/{name}/metadata.csv"}
    return {"corpus": entry["dir"], **({"metadata": entry["metadata"]} if entry.get("metadata") else {})}


def shard_files(settings: Mapping[str, Any], name: str, stage: str, suffix: str) -> list[str]:
    return [f"results/transfer/{name}/{stage}/shard-{i:03d}{suffix}"
            for i in range(corpus_entry(settings, name)["n_shards"])]


def table_inputs(settings: Mapping[str, Any]) -> dict[str, str]:
    """The transfer table's inputs: pool JSONs (``pool__<corpus>``) and evaluation JSONs keyed as
    :func:`parse_key` reads them, in-corpus from ``results/eval``, transfer from
    ``results/transfer/<corpus>/eval`` (same layout)."""
    if not settings["corpora"]:
        raise ValueError("the transfer table needs at least one transfer.corpora entry in the config")
    split, level = settings["split"], settings["level"]
    methods = [*settings["runs"], *((m, "none") for m in settings["baselines"])]
    spec = lambda method, mode: (split, method, mode, level, "both", "test", level)  # noqa: E731
    inputs = {f"in__{m}__{mode}": str(eval_json("results/eval", *spec(m, mode))) for m, mode in methods}
    for name in settings["corpora"]:
        inputs[f"pool__{name}"] = f"results/transfer/{name}/pool/{split}/{level}.json"
        for m, mode in methods:
            inputs[f"to__{name}__{m}__{mode}"] = str(eval_json(f"results/transfer/{name}/eval", *spec(m, mode)))
    return inputs


def build_pool(pairs_parquet: str | os.PathLike, train_data_parquet: str | os.PathLike,
               out_parquet: str | os.PathLike, out_json: str | os.PathLike) -> dict[str, Any]:
    """Write a transfer pool: the training corpus's train part + every transfer pair as ``test``.

    The pool is at Conservation, the level the transfer runs are trained on: the transfer pairs
    keep their tokens as linearized (what :mod:`proofmatch.replace` gives at that level), with
    the same columns as ``results/replaced/<split>/conservation.parquet`` and an empty mapping.
    """
    pairs = read_parquet(pairs_parquet, columns=["pair_id", "article_id", "statement_tokens", "proof_tokens"])
    if pairs.empty:
        raise ValueError(f"{pairs_parquet}: the transfer corpus has no pairs left after the filters")
    train = read_part(train_data_parquet, "train")
    pool = pairs.assign(part="test", mapping="{}")
    columns = OUTPUT_SCHEMA.names
    both = pd.concat([train[columns], pool[columns]], ignore_index=True)
    with atomic_path(out_parquet, ".parquet") as tmp_out:
        pq.write_table(pa.Table.from_pandas(both, schema=OUTPUT_SCHEMA, preserve_index=False), tmp_out)
    shared = sorted(set(pool["article_id"]) & set(train["article_id"]))
    seen = {(tuple(s), tuple(p)) for s, p in zip(train["statement_tokens"], train["proof_tokens"])}
    duplicates = sum((tuple(s), tuple(p)) in seen for s, p in zip(pool["statement_tokens"], pool["proof_tokens"]))
    info = {"pairs": len(pool), "articles": int(pool["article_id"].nunique()), "train_pairs": len(train),
            "level": LEVEL, "shared_articles": len(shared), "shared_article_ids": shared[:20],
            "duplicate_pairs": int(duplicates), "pairs_file": str(pairs_parquet), "train_file": str(train_data_parquet)}
    write_json(info, out_json)
    if shared or duplicates:
        log.warning("transfer pool %s shares %d article ids and %d identical pairs with the training corpus's "
                    "train part: not a clean transfer", out_parquet, len(shared), duplicates)
    log.info("transfer pool %s: %d pairs from %d articles (test) + %d training pairs (train)", out_parquet, len(pool),
             info["articles"], len(train))
    return info


# ----------------------------------------------------------------------------- the table


def parse_key(key: str) -> tuple[str, str, str]:
    """A workflow input key ``in__<method>__<mode>`` or ``to__<corpus>__<method>__<mode>`` as
    (corpus or ``in``, method, mode); baselines have mode ``none``."""
    head, _, rest = key.partition("__")
    if head == IN_CORPUS:
        method, _, mode = rest.partition("__")
        return IN_CORPUS, method, mode
    if head == "to":
        corpus, method, mode = rest.rsplit("__", 2)
        return corpus, method, mode
    raise ValueError(f"transfer table input key {key!r} is neither in__<method>__<mode> nor to__<corpus>__...")


def _row_label(method: str, mode: str, decoding: str) -> str:
    dec = "Local" if decoding == "local" else "Global"
    if mode == "none":
        return f"{METHOD_NAMES.get(method, method)}-{dec}"
    return f"{ENCODER_NAMES.get(method, method)}-{MODE_NAMES.get(mode, mode)}-{dec}"


def transfer_table(results: Mapping[tuple[str, str, str], Any], pools: Mapping[str, Any],
                   out_prefix: str | os.PathLike, split: str = "mixed") -> pd.DataFrame:
    """MRR and accuracy (%) of every run and baseline in-corpus and on each transfer pool.

    ``results`` maps (``in`` or corpus name, method, mode) to an evaluation JSON; ``pools`` maps
    a corpus name to its pool JSON (:func:`build_pool`). Rows: each run or baseline with local
    decoding (MRR, Acc) and global decoding (Acc).
    """
    corpora = list(pools)
    methods = list(dict.fromkeys((m, mode) for _, m, mode in results))
    missing = [(c, m, mode) for m, mode in methods for c in [IN_CORPUS, *corpora] if (c, m, mode) not in results]
    if missing:
        raise KeyError(f"transfer table: results missing for {missing[:5]}")
    pool_info = {c: dict(p) if isinstance(p, Mapping) else read_json(p) for c, p in pools.items()}
    loaded = {k: load_metrics(v) for k, v in results.items()}
    rows = []
    for method, mode in methods:
        for decoding in ("local", "global"):
            values: list[float | None] = []
            for c in [IN_CORPUS, *corpora]:
                values += cells(loaded[(c, method, mode)], decoding)
            rows.append([_row_label(method, mode, decoding), *values])
    split_name = SPLIT_NAMES.get(split, split)
    in_n = next(loaded[(IN_CORPUS, m, mo)]["n"] for m, mo in methods)
    columns = ["Model", f"In-corpus MRR (n={in_n})", "In-corpus Acc"]
    for c in corpora:
        columns += [f"{c} MRR (n={pool_info[c]['pairs']})", f"{c} Acc"]
    df = pd.DataFrame(rows, columns=columns)
    notes = []
    for c, info in pool_info.items():
        note = f"{c}: {info['pairs']} pairs from {info['articles']} articles"
        if info.get("shared_articles") or info.get("duplicate_pairs"):
            note += (f", NOT a clean transfer: {info['shared_articles']} article ids and "
                     f"{info['duplicate_pairs']} identical pairs also in the training corpus's train part")
        notes.append(note)
    caption = (f"Transfer: MRR and accuracy (%) of models trained on the {split_name} train part of the training "
               f"corpus ({LEVEL.capitalize()}; baselines fitted on the same part), tested on its {split_name} test "
               "part (In-corpus) and on every pair of each transfer corpus after the same extraction, filters and "
               "linearization. No MRR for global decoding. Pools: " + "; ".join(notes) + ".")
    out = str(out_prefix)
    write_table(df, f"{out}.md", f"{out}.tex", f"{out}.csv", caption=caption, label=Path(out).name)
    log.info("wrote %s.{md,tex,csv} (%d rows, %d transfer corpora)", out, len(df), len(corpora))
    return df


def render_transfer(inputs: Mapping[str, str], out_prefix: str | os.PathLike, split: str = "mixed") -> pd.DataFrame:
    """The table from the workflow's keyed inputs: ``pool__<corpus>`` pool JSONs and evaluation JSONs
    keyed as in :func:`parse_key` (workflow/rules/transfer.smk)."""
    pools = {k.removeprefix("pool__"): v for k, v in inputs.items() if k.startswith("pool__")}
    results = {parse_key(k): v for k, v in inputs.items() if not k.startswith("pool__")}
    return transfer_table(results, pools, out_prefix, split)
