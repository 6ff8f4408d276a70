"""Tables 3-7 and the baselines table, from evaluation JSONs (paper §9, Appendix B).

Each ``table*`` function takes explicit inputs (a mapping from the table cell's key to an
evaluation JSON path or an already loaded dict), renders the table with
:func:`proofmatch.render.write_table` to ``{out_prefix}.md/.tex/.csv`` and returns the DataFrame.
Scores are percentages with two decimals as in the paper; MRR of global decoding is "–" (global
decoding assigns, it does not rank). A row whose runs were not made shows "–" cells and a note
saying why (``not_run``); a result that is simply missing, with no reason given, is an error.

Keys, with the wildcard values of docs/architecture.md:

* Table 3: ``(encoder, mode, level)``; mode ``local`` gives rows X-Local-Local (MRR, Acc) and
  X-Local-Global (global Acc), ``hybrid`` gives X-Global-Global, and SPECTER-style's ``triplet``
  gives SPECTER-style-Triplet-Local and -Triplet-Global. ``not_run`` keys: encoder or
  ``(encoder, mode)``.
* Table 4: ``(split, train_level, test_level)`` of ScratchBERT-Local-Local; ``not_run`` keys:
  split or ``(split, train_level)``.
* Table 5: ``(encoder, view, level)`` of X-Local-Local; ``not_run`` keys: encoder or ``(encoder, view)``.
* Table 6: ``(train_level, test_level)`` on the probability split, rows = training level,
  columns = test level (Conservation, Partial+P); ``not_run`` keys: train level.
* Table 7: one evaluation JSON (dev part).
* Baselines: ``(method, level)``; ``not_run`` keys: method.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import Any, Hashable, Mapping, Sequence, Union

import pandas as pd

from .decode import HUBNESS_BINS
from .logs import setup_logging
from .render import write_table
from .store import read_json

log = logging.getLogger(__name__)

Source = Union[str, os.PathLike, Mapping[str, Any]]

LEVEL_NAMES = {"conservation": "Conservation", "partial": "Partial", "full": "Full", "trans": "Transposition",
               "partial_p": "Partial+P", "full_p": "Full+P"}
ENCODER_NAMES = {"npt": "NPT", "scratchbert": "ScratchBERT", "mathbert": "MathBERT", "specter": "SPECTER-style"}
VIEW_NAMES = {"text": "Text", "math": "Math", "both": "Both"}
SPLIT_NAMES = {"mixed": "Mixed", "unmixed": "Unmixed", "pr": "Probability (Unmixed)"}
METHOD_NAMES = {"tfidf": "TF-IDF", "tfidf_paper": "TF-IDF (reference code)", "bm25": "BM25"}

TABLE3_ENCODERS = ("npt", "scratchbert", "mathbert", "specter")
TABLE3_LEVELS = ("conservation", "partial", "full", "trans")
# (mode, row label, decoding) per encoder family; decoding "local" -> MRR + Acc, "global" -> Acc only
TABLE3_ROWS = {
    "default": (("local", "Local-Local", "local"), ("local", "Local-Global", "global"),
                ("hybrid", "Global-Global", "global")),
    "specter": (("triplet", "Triplet-Local", "local"), ("triplet", "Triplet-Global", "global")),
}
TABLE4_SPLITS = ("mixed", "unmixed")
TABLE5_ENCODERS = ("npt", "scratchbert")
TABLE5_VIEWS = ("text", "math", "both")
TABLE5_LEVELS = ("conservation", "full")
# Table 6 (paper §9.4): rows are the five training levels, columns the two test levels that keep
# the protected symbols ("The test set preserves the protected symbols").
TABLE6_TRAIN = ("conservation", "partial", "partial_p", "full", "full_p")
TABLE6_TEST = ("conservation", "partial_p")
BASELINE_METHODS = ("tfidf", "tfidf_paper", "bm25")
HUBNESS_LABELS = {">=20": "≥20", ">=10": "≥10", ">=5": "≥5", ">=2": "≥2", "=1": "=1", "<1": "<1"}


# ----------------------------------------------------------------------------- helpers


def load_metrics(source: Source) -> dict[str, Any]:
    """An evaluation JSON's content, from a path or an already loaded dict."""
    if isinstance(source, Mapping):
        return dict(source)
    data = read_json(source)
    for key in ("mrr", "acc", "global_acc"):
        if key not in data:
            raise ValueError(f"{source}: not an evaluation JSON (no {key!r})")
    return data


def _pct(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def cells(metrics: Mapping[str, Any] | None, decoding: str) -> list[float | None]:
    """[MRR, Acc] of one result; global decoding has no MRR."""
    if metrics is None:
        return [None, None]
    if decoding == "local":
        return [_pct(metrics["mrr"]), _pct(metrics["acc"])]
    if decoding == "global":
        return [None, _pct(metrics["global_acc"])]
    raise ValueError(f"unknown decoding {decoding!r}")


def _reason(not_run: Mapping[Any, str], *keys: Hashable) -> str | None:
    for key in keys:
        if key in not_run:
            reason = str(not_run[key])
            return reason if reason.startswith("not run") else f"not run: {reason}"
    return None


def _get(results: Mapping[Any, Source], key: tuple, reason: str | None, missing: list) -> dict | None:
    if key in results:
        return load_metrics(results[key])
    if reason is None:
        missing.append(key)
    return None


def _raise_missing(table: str, missing: list) -> None:
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        raise KeyError(f"{table}: {len(missing)} result(s) missing and not marked as not run: {shown}")


def _metric_columns(levels: Sequence[str], names: Mapping[str, str] = LEVEL_NAMES, prefix: str = "") -> list[str]:
    return [f"{prefix}{names.get(lv, lv)} {m}" for lv in levels for m in ("MRR", "Acc")]


def _write(df: pd.DataFrame, out_prefix: str | os.PathLike, caption: str) -> pd.DataFrame:
    out = str(out_prefix)
    write_table(df, f"{out}.md", f"{out}.tex", f"{out}.csv", caption=caption, label=Path(out).name)
    log.info("wrote %s.{md,tex,csv} (%d rows)", out, len(df))
    return df


# ----------------------------------------------------------------------------- tables


def table3(results: Mapping[tuple[str, str, str], Source], out_prefix: str | os.PathLike,
           not_run: Mapping[Any, str] | None = None, encoders: Sequence[str] = TABLE3_ENCODERS,
           levels: Sequence[str] = TABLE3_LEVELS) -> pd.DataFrame:
    """Encoders x training/decoding x replacement levels (same level for training and test)."""
    not_run = not_run or {}
    rows, missing = [], []
    for enc in encoders:
        for mode, label, decoding in TABLE3_ROWS.get(enc, TABLE3_ROWS["default"]):
            reason = _reason(not_run, (enc, mode), enc)
            values: list[float | None] = []
            for lv in levels:
                values += cells(_get(results, (enc, mode, lv), reason, missing), decoding)
            rows.append([f"{ENCODER_NAMES.get(enc, enc)}-{label}", *values, reason or ""])
    _raise_missing("Table 3", missing)
    df = pd.DataFrame(rows, columns=["Encoder-Decoder", *_metric_columns(levels), "Note"])
    return _write(df, out_prefix, "Table 3: MRR and accuracy (%) by encoder, training/decoding and symbol "
                  "replacement level (trained and tested on the same level). No MRR for global decoding. "
                  "The SPECTER-style rows are this project's addition, not in the paper.")


def table4(results: Mapping[tuple[str, str, str], Source], out_prefix: str | os.PathLike,
           not_run: Mapping[Any, str] | None = None, splits: Sequence[str] = TABLE4_SPLITS,
           levels: Sequence[str] = TABLE3_LEVELS) -> pd.DataFrame:
    """Cross-replacement: ScratchBERT-Local-Local trained on one level (row), tested on another (column)."""
    not_run = not_run or {}
    rows, missing = [], []
    for split in splits:
        for train in levels:
            reason = _reason(not_run, (split, train), split)
            values: list[float | None] = []
            for test in levels:
                values += cells(_get(results, (split, train, test), reason, missing), "local")
            rows.append([SPLIT_NAMES.get(split, split), LEVEL_NAMES.get(train, train), *values, reason or ""])
    _raise_missing("Table 4", missing)
    df = pd.DataFrame(rows, columns=["Split", "Training", *_metric_columns(levels), "Note"])
    return _write(df, out_prefix, "Table 4: cross-replacement MRR and accuracy (%) of ScratchBERT-Local-Local "
                  "(rows: training level; columns: test level), Mixed and Unmixed splits.")


def table5(results: Mapping[tuple[str, str, str], Source], out_prefix: str | os.PathLike,
           not_run: Mapping[Any, str] | None = None, encoders: Sequence[str] = TABLE5_ENCODERS,
           views: Sequence[str] = TABLE5_VIEWS, levels: Sequence[str] = TABLE5_LEVELS) -> pd.DataFrame:
    """Input type (text / math / both) of NPT- and ScratchBERT-Local-Local."""
    not_run = not_run or {}
    rows, missing = [], []
    for enc in encoders:
        for view in views:
            reason = _reason(not_run, (enc, view), enc)
            values: list[float | None] = []
            for lv in levels:
                values += cells(_get(results, (enc, view, lv), reason, missing), "local")
            rows.append([ENCODER_NAMES.get(enc, enc), VIEW_NAMES.get(view, view), *values, reason or ""])
    _raise_missing("Table 5", missing)
    df = pd.DataFrame(rows, columns=["Encoder", "Input", *_metric_columns(levels), "Note"])
    return _write(df, out_prefix, "Table 5: MRR and accuracy (%) of NPT- and ScratchBERT-Local-Local by input "
                  "type; Both is the original, complete input.")


def table6(results: Mapping[tuple[str, str], Source], out_prefix: str | os.PathLike,
           not_run: Mapping[Any, str] | None = None, train_levels: Sequence[str] = TABLE6_TRAIN,
           test_levels: Sequence[str] = TABLE6_TEST) -> pd.DataFrame:
    """Protected symbols on the probability domain: training level (row) x test level (column group).

    Paper §9.4: "comparing models trained with symbol replacement methods that preserve protected
    symbols versus methods that treat all symbols equally. The test set preserves the protected
    symbols." The paper's Table 6 has rows Conservation, Partial, Partial+P, Full, Full+P (training)
    and column groups Conservation and Partial+P (test), so Partial+P vs Partial and Full+P vs Full
    can be read row against row.
    """
    not_run = not_run or {}
    rows, missing = [], []
    for train in train_levels:
        reason = _reason(not_run, train)
        values: list[float | None] = []
        for test in test_levels:
            values += cells(_get(results, (train, test), reason, missing), "local")
        rows.append([LEVEL_NAMES.get(train, train), *values, reason or ""])
    _raise_missing("Table 6", missing)
    df = pd.DataFrame(rows, columns=["Training", *_metric_columns(test_levels, prefix="Test "), "Note"])
    return _write(df, out_prefix, "Table 6: controlled cross-replacement levels of ScratchBERT-Local-Local on the "
                  "probability-theory domain (the pr split: articles whose primary category is splits.pr_category, "
                  "split by article as in Unmixed), MRR and "
                  "accuracy (%). Rows: training level; columns: test level (both keep the protected symbols). "
                  "+P: the protected symbols P, E, V, σ, ρ are not replaced.")


def table7(result: Source, out_prefix: str | os.PathLike) -> pd.DataFrame:
    """Hubness of local decoding: proofs by the number of statements whose top-1 they are."""
    metrics = load_metrics(result)
    hub = metrics.get("hubness")
    if not hub or any(b not in hub for b in HUBNESS_BINS):
        raise ValueError("Table 7: the evaluation JSON has no complete 'hubness' entry")
    rows = [[HUBNESS_LABELS[b], int(hub[b]["proofs"]), float(hub[b]["percent"])] for b in HUBNESS_BINS]
    df = pd.DataFrame(rows, columns=["Statements", "Proofs", "%"])
    return _write(df, out_prefix, f"Table 7: cumulative distribution of the {metrics.get('n', '?')} proofs of the "
                  f"{metrics.get('part', 'dev')} set by the number of statements to which local decoding "
                  "assigns them.")


def table_baselines(results: Mapping[tuple[str, str], Source], out_prefix: str | os.PathLike,
                    not_run: Mapping[Any, str] | None = None, methods: Sequence[str] = BASELINE_METHODS,
                    levels: Sequence[str] = TABLE3_LEVELS) -> pd.DataFrame:
    """TF-IDF (token-level and the reference code's vectorizer) and BM25, local and global decoding, by level."""
    not_run = not_run or {}
    rows, missing = [], []
    for method in methods:
        reason = _reason(not_run, method)
        for label, decoding in (("Local", "local"), ("Global", "global")):
            values: list[float | None] = []
            for lv in levels:
                values += cells(_get(results, (method, lv), reason, missing), decoding)
            rows.append([f"{METHOD_NAMES.get(method, method)}-{label}", *values, reason or ""])
    _raise_missing("Baselines table", missing)
    df = pd.DataFrame(rows, columns=["Method", *_metric_columns(levels), "Note"])
    return _write(df, out_prefix, "Baselines: MRR and accuracy (%) of TF-IDF cosine and BM25 with local and "
                  "global decoding (no MRR for global decoding). The paper reports only TF-IDF cosine's MRR range "
                  "(11.4-29.8, §8); TF-IDF on the linearized tokens and BM25 are this project's, TF-IDF "
                  "(reference code) is the paper's public code's vectorizer (scikit-learn defaults: lowercased, "
                  "one-character tokens dropped).")


# ----------------------------------------------------------------------------- CLI


def parse_key(key: str) -> dict[str, str]:
    """A workflow input key ``split__encoder__mode__level__view__part__test_level`` as a dict."""
    names = ("split", "encoder", "mode", "level", "view", "part", "test_level")
    values = key.split("__")
    if len(values) != len(names):
        raise ValueError(f"table input key {key!r} is not {'__'.join(names)}")
    return dict(zip(names, values))


def render(table: str, inputs: Mapping[str, str], out_prefix: str | os.PathLike,
           not_run: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Render one table from the workflow's keyed inputs (see workflow/rules/common.smk).

    ``not_run`` maps an encoder (``mathbert``) or ``pr`` to the reason its part was not run.
    """
    not_run = dict(not_run or {})
    cells = [(parse_key(k), v) for k, v in inputs.items()]
    if table == "table3":
        return table3({(c["encoder"], c["mode"], c["level"]): v for c, v in cells}, out_prefix,
                      {k: r for k, r in not_run.items() if k != "pr"})
    if table == "table4":
        return table4({(c["split"], c["level"], c["test_level"]): v for c, v in cells}, out_prefix)
    if table == "table5":
        return table5({(c["encoder"], c["view"], c["level"]): v for c, v in cells}, out_prefix)
    if table == "table6":
        reason = not_run.get("pr")
        skip = {lvl: reason for lvl in TABLE6_TRAIN} if reason else {}
        return table6({(c["level"], c["test_level"]): v for c, v in cells}, out_prefix, skip)
    if table == "table7":
        if len(cells) != 1:
            raise ValueError(f"table7 takes one evaluation, got {len(cells)}")
        return table7(cells[0][1], out_prefix)
    if table == "baselines_table":
        return table_baselines({(c["encoder"], c["level"]): v for c, v in cells}, out_prefix)
    raise ValueError(f"unknown table {table!r}")


def eval_json(eval_root: str | os.PathLike, split: str, encoder: str, mode: str, level: str, view: str,
              part: str, test_level: str) -> Path:
    """The evaluation JSON path of docs/architecture.md."""
    return Path(eval_root) / split / f"{encoder}-{mode}" / f"{level}-{view}" / f"{part}-{test_level}.json"


def _existing(paths: Mapping[Any, Path], allow_missing: bool) -> tuple[dict[Any, Path], list[Path]]:
    found = {k: p for k, p in paths.items() if p.exists()}
    absent = [p for k, p in paths.items() if k not in found]
    if absent and not allow_missing:
        raise FileNotFoundError(f"{len(absent)} evaluation JSON(s) missing, e.g. {absent[0]}; "
                                "run the workflow first or pass --allow-missing")
    return found, absent


def tables_from_eval_root(eval_root: str | os.PathLike, out_dir: str | os.PathLike, part: str = "test",
                          table7_run: tuple[str, str, str, str] = ("mixed", "scratchbert", "local", "conservation"),
                          not_run: Mapping[Any, str] | None = None, allow_missing: bool = False) -> None:
    """Render every table from the evaluation tree (path layout of docs/architecture.md).

    With ``allow_missing``, a result file that does not exist makes its cell "–" and its row's
    note "not run: no result"; otherwise it is an error.
    """
    out = Path(out_dir)
    t3_nr = dict(not_run or {})
    keys3 = {(e, m, lv): eval_json(eval_root, "mixed", e, m, lv, "both", part, lv)
             for e in TABLE3_ENCODERS for m, _, _ in TABLE3_ROWS.get(e, TABLE3_ROWS["default"])
             for lv in TABLE3_LEVELS}
    keys4 = {(s, tr, te): eval_json(eval_root, s, "scratchbert", "local", tr, "both", part, te)
             for s in TABLE4_SPLITS for tr in TABLE3_LEVELS for te in TABLE3_LEVELS}
    keys5 = {(e, v, lv): eval_json(eval_root, "mixed", e, "local", lv, v, part, lv)
             for e in TABLE5_ENCODERS for v in TABLE5_VIEWS for lv in TABLE5_LEVELS}
    keys6 = {(tr, te): eval_json(eval_root, "pr", "scratchbert", "local", tr, "both", part, te)
             for tr in TABLE6_TRAIN for te in TABLE6_TEST}
    keysb = {(m, lv): eval_json(eval_root, "mixed", m, "none", lv, "both", part, lv)
             for m in BASELINE_METHODS for lv in TABLE3_LEVELS}

    def run(keys, group, nr):
        found, absent = _existing(keys, allow_missing)
        nr = dict(nr)
        for key, path in keys.items():
            if key not in found and _reason(nr, group(key), key[0]) is None:
                nr[group(key)] = f"not run: no result ({path.name} missing)"
        return found, nr

    r3, n3 = run(keys3, lambda k: (k[0], k[1]), t3_nr)
    table3(r3, out / "table3", n3)
    r4, n4 = run(keys4, lambda k: (k[0], k[1]), {})
    table4(r4, out / "table4", n4)
    r5, n5 = run(keys5, lambda k: (k[0], k[1]), t3_nr)
    table5(r5, out / "table5", n5)
    r6, n6 = run(keys6, lambda k: k[0], {})
    table6(r6, out / "table6", n6)
    rb, nb = run(keysb, lambda k: k[0], {})
    table_baselines(rb, out / "baselines", nb)
    split, enc, mode, level = table7_run
    t7 = eval_json(eval_root, split, enc, mode, level, "both", "dev", level)
    if t7.exists():
        table7(t7, out / "table7")
    elif not allow_missing:
        raise FileNotFoundError(f"Table 7 input {t7} is missing")
    else:
        log.warning("Table 7 not written: %s is missing", t7)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--eval-root", default="results/eval")
    parser.add_argument("--out-dir", default="results/tables")
    parser.add_argument("--part", default="test", choices=["dev", "test"])
    parser.add_argument("--table7-run", default="mixed/scratchbert/local/conservation",
                        help="split/encoder/mode/level of the dev evaluation used for Table 7")
    parser.add_argument("--config", default=None, help="config YAML: matching.mathbert null marks MathBERT not run")
    parser.add_argument("--allow-missing", action="store_true", help="render missing results as 'not run'")
    parser.add_argument("--log", default=None)


def main(args: argparse.Namespace) -> int:
    setup_logging(args.log)
    not_run: dict[Any, str] = {}
    if args.config:
        from .config import load_config

        if load_config(args.config)["matching"].get("mathbert") is None:
            not_run["mathbert"] = "not run: no MathBERT checkpoint configured (matching.mathbert)"
    parts = args.table7_run.split("/")
    if len(parts) != 4:
        raise SystemExit("--table7-run must be split/encoder/mode/level")
    tables_from_eval_root(args.eval_root, args.out_dir, args.part, tuple(parts), not_run, args.allow_missing)
    return 0
