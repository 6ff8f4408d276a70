"""A fusion index of several learned runs: ``Σᵢ wᵢ · z(learnedᵢ) + λ · z(BM25)`` per query.

``proofmatch index DATA --fusion --run A --run B ...`` with either ``--weights wA wB ...
--bm25-weight λ`` (weights by hand) or ``--weights-from BENCH.json --system NAME`` (a system of
``bench/pretrained_stacks.py``'s JSON, its weights chosen on dev; each run then named as the bench
names it, ``--run local=DIR``). A single ``--run`` is the one-run fusion index of
:mod:`proofmatch.search.build` (``z(learned) + λ · z(BM25)``), unchanged.

Each member is a training run whose files are those of a model index
(:mod:`proofmatch.search.folder`): its four factor arrays in ``members/<i>/`` and its model copy in
``model-<i>/`` beside ``index.json`` (checked on loading as a one-run index's ``model/``).
``index.json``'s ``members`` lists each one's name, weight, folder, run identity
(:func:`proofmatch.search.provenance.run_identity`), model digest and config; its ``fusion`` holds
λ (BM25's weight) and where the weights came from: ``source: "hand"``, or ``"bench"`` with the
bench file, its sha256, the system's name and its record (dev MRR included).

A query: each member encodes it with its own model (an id query: its stored statement vector) and
scores its own proof vectors (one product each, float32 ``a @ Bᵀ + row + col`` as a model index);
each member's row and BM25's are standardised over the candidates searched
(:func:`proofmatch.scoring.fusion.standardize`), weighted and summed, as the bench fuses its
systems. A hit's ``learned`` is the members' weighted sum ``Σᵢ wᵢ · z(learnedᵢ)``, and each member's
own score, weighted z-score and rank come with it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from proofmatch.artifacts import read_json
from proofmatch.scoring.fusion import standardize
from proofmatch.search.folder import ARRAYS, MODEL_DIR, files_digest

QUANTIZE = ("none", "int8")  # the query encoder's Linear layers: float32, or dynamic int8 (opt-in)
MEMBERS_DIR = "members"
BM25_KEY = "bm25"  # BM25's name among a bench system's weights


@dataclass
class FusionSystem:
    """What a fusion index of several runs fuses: each run (name, folder) with its weight, BM25's
    weight λ, and where the weights came from (``index.json``'s ``fusion``)."""

    runs: list[tuple[str, Path]]
    weights: list[float]
    bm25_weight: float
    source: dict[str, Any]


def _check_weight(value: Any, option: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not np.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{option}: a weight must be a finite number >= 0; got {value!r}")
    return float(value)


def parse_runs(specs: list[str]) -> list[tuple[str, Path]]:
    """``--run [NAME=]DIR`` values as (name, folder); an unnamed run is named by its folder's last
    two parts (``npt-local/conservation-both``). Names are unique."""
    runs = []
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or "/" in name or not name:
            folder, name = spec, "/".join(Path(spec).parts[-2:])
        runs.append((name, Path(folder)))
    names = [n for n, _ in runs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"--run: two runs named {sorted(dup)[0]!r}; name them (--run NAME=DIR)")
    return runs


def system_by_hand(
    runs: list[tuple[str, Path]], weights: list[float] | None, bm25_weight: float | None
) -> FusionSystem:
    """A system whose weights are given on the command line (recorded as given by hand)."""
    if weights is None or bm25_weight is None:
        raise ValueError(
            f"a fusion of {len(runs)} runs needs their weights: --weights (one per --run) and "
            "--bm25-weight, or --weights-from BENCH.json --system NAME"
        )
    if len(weights) != len(runs):
        raise ValueError(
            f"--weights: {len(weights)} weights for {len(runs)} runs (--run); give one per run, "
            "in the order of the runs"
        )
    w = [_check_weight(x, "--weights") for x in weights]
    if not any(w):
        raise ValueError("--weights: every run's weight is 0; at least one must be > 0")
    return FusionSystem(runs, w, _check_weight(bm25_weight, "--bm25-weight"), {"source": "hand"})


def system_from_bench(
    runs: list[tuple[str, Path]], path: str | os.PathLike, name: str | None
) -> FusionSystem:
    """The weights of system ``name`` of a ``bench/pretrained_stacks.py`` JSON (``{name: {"weights":
    {run: w, ..., "bm25": λ}, "dev_mrr": ...}}``); its runs must be the runs given, by name."""
    path = Path(path)
    systems = read_json(path)
    if not name:
        raise ValueError("--weights-from needs --system NAME: which of the file's systems")
    if not isinstance(systems, dict) or name not in systems:
        known = ", ".join(sorted(systems)) if isinstance(systems, dict) else "none"
        raise ValueError(f"{path}: no system {name!r} (systems: {known})")
    record = systems[name]
    weights = record.get("weights") if isinstance(record, dict) else None
    if not isinstance(weights, dict):
        raise ValueError(f"{path}: system {name!r} has no 'weights' object")
    wanted = {k for k in weights if k != BM25_KEY}
    given = {n for n, _ in runs}
    if wanted != given:
        raise ValueError(
            f"{path}: system {name!r} fuses the runs {sorted(wanted)}, the runs given are "
            f"{sorted(given)}; name each run as the bench did (--run NAME=DIR)"
        )
    w = [_check_weight(weights[n], f"{path}: {name} weight of {n}") for n, _ in runs]
    if not any(w):
        raise ValueError(f"{path}: system {name!r} gives every run weight 0")
    source = {
        "source": "bench",
        "file": str(path),
        "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "system": name,
        "recorded": record,
    }
    return FusionSystem(
        runs, w, _check_weight(weights.get(BM25_KEY, 0.0), f"{path}: {name} weight of bm25"), source
    )


def add_member_arguments(parser) -> None:
    """``proofmatch index``'s options of a fusion of several runs."""
    parser.add_argument(
        "--weights",
        type=float,
        nargs="+",
        metavar="W",
        help="a fusion of several runs: each run's weight, in the order of the --run options "
        "(recorded as given by hand)",
    )
    parser.add_argument(
        "--bm25-weight",
        type=float,
        metavar="λ",
        help="a fusion of several runs: BM25's weight λ (with --weights)",
    )
    parser.add_argument(
        "--weights-from",
        metavar="BENCH_JSON",
        help="a fusion of several runs: the weights of --system in this JSON of "
        "bench/pretrained_stacks.py (chosen on dev); name each run as it does (--run local=DIR)",
    )
    parser.add_argument("--system", help="with --weights-from: the system's name in the file")


def system_from_args(args) -> FusionSystem | None:
    """The fusion of several runs ``proofmatch index``'s options ask for, or None (one run or none)."""
    runs = args.run or []
    given = [
        opt
        for opt, value in (
            ("--weights", args.weights),
            ("--bm25-weight", args.bm25_weight),
            ("--weights-from", args.weights_from),
            ("--system", args.system),
        )
        if value is not None
    ]
    if len(runs) < 2:
        if given:
            raise ValueError(
                f"{given[0]} is for a fusion of two or more runs (--run given for each); one "
                "run's BM25 weight is --fusion-weight"
            )
        return None
    if args.method != "fusion":
        raise ValueError(f"{len(runs)} runs (--run) are fused: add --fusion")
    if args.fusion_weight is not None:
        raise ValueError(
            "--fusion-weight is one run's λ; a fusion of several runs takes --bm25-weight"
        )
    named = parse_runs(runs)
    if args.weights_from is not None:
        if args.weights is not None or args.bm25_weight is not None:
            raise ValueError(
                "give the weights by hand (--weights, --bm25-weight) or --weights-from, not both"
            )
        return system_from_bench(named, args.weights_from, args.system)
    if args.system is not None:
        raise ValueError("--system names a system of --weights-from's file")
    return system_by_hand(named, args.weights, args.bm25_weight)


def write_members(
    staging: Path, system: FusionSystem, frames, encode: Callable, batch_size: int
) -> dict[str, Any]:
    """Each member's arrays in ``members/<i>/`` and model copy in ``model-<i>/``;
    ``encode(run_dir, frames, batch_size)`` gives a run's arrays and matcher as a one-run index's are
    (:mod:`proofmatch.search.build`). Returns the ``index.json`` fields ``members`` and ``fusion``."""
    import shutil

    from proofmatch.search.provenance import model_dir, run_identity

    members = []
    for i, ((name, run_dir), weight) in enumerate(zip(system.runs, system.weights)):
        folder = staging / MEMBERS_DIR / str(i)
        folder.mkdir(parents=True)
        arrays, matcher = encode(run_dir, frames, batch_size)
        for key, value in arrays.items():
            np.save(folder / f"{key}.npy", value)
        model = staging / f"{MODEL_DIR}-{i}"  # beside index.json: loading checks it as model/
        shutil.copytree(model_dir(run_dir), model, ignore=shutil.ignore_patterns(".*"))
        members.append(
            {
                "name": name,
                "weight": weight,
                "dir": f"{MEMBERS_DIR}/{i}",
                "model_dir": model.name,
                "run": run_identity(run_dir),
                "model": {
                    "digest": files_digest(model),
                    "config": matcher.config.to_dict(),
                },
                "view": matcher.config.view,
                "dim": int(arrays["proof_vectors"].shape[1]),
            }
        )
    fusion = {"weight": system.bm25_weight, "normalize": "zscore", **system.source}
    return {"members": members, "fusion": fusion}


# ----------------------------------------------------------------------------- searching


class SettingError(ValueError):
    """A search setting this index cannot take (not a fault of the index)."""


def query_matcher(matcher, quantize: str):
    """The matcher that encodes typed queries: ``matcher``, or for ``int8`` one whose encoder's
    Linear layers are dynamically quantised (``quantize_dynamic``; the scorer and the stored proof
    vectors stay float32; effect on ranking: docs/measured/pretrained.md#search)."""
    if quantize not in QUANTIZE:
        raise SettingError(f"quantize {quantize!r}: expected one of {', '.join(QUANTIZE)}")
    if quantize == "none":
        return matcher
    import torch

    if matcher.device.type != "cpu":
        raise SettingError(f"int8 query encoding runs on the CPU, not {matcher.device}")
    encoder = torch.ao.quantization.quantize_dynamic(
        matcher.encoder, {torch.nn.Linear}, dtype=torch.qint8
    )
    q = type(matcher)(matcher.config, encoder, matcher.codec)
    if matcher.config.scorer == "bilinear":
        q.W, q.b = matcher.W, matcher.b
    return q.eval()


@dataclass
class Member:
    """One loaded member: its name, weight, factor arrays, matchers and per-part proof matrices."""

    name: str
    weight: float
    arrays: dict[str, np.ndarray]
    matcher: Any
    query_matcher: Any
    parts: dict = field(default_factory=dict)  # part -> (proof vectors transposed, column bias)

    def query(self, q, row_of: dict[str, int]) -> tuple[np.ndarray, float]:
        """(statement vector, row bias) of a query: the stored ones for an id, else one encoding."""
        if q.kind == "id":
            i = row_of[q.pair_id]
            return self.arrays["statement_vectors"][i], float(self.arrays["statement_bias"][i])
        import torch

        with torch.inference_mode():
            A, _, row, _ = self.query_matcher.factors([q.tokens], [], batch_size=1)
        return A[0], float(row[0])

    def scores(
        self, q, row_of: dict[str, int], part: str | None, rows: np.ndarray | None
    ) -> np.ndarray:
        """This member's scores of the candidates (float32 ``a @ Bᵀ``, ``+= row``, ``+= col``)."""
        if part not in self.parts:
            B, col = self.arrays["proof_vectors"], self.arrays["proof_bias"]
            if rows is not None:
                B, col = B[rows], col[rows]
            self.parts[part] = (np.ascontiguousarray(B.T), col)
        mat, col = self.parts[part]
        vec, rb = self.query(q, row_of)
        S = np.asarray(vec, np.float32)[None, :] @ mat
        S += np.float32(rb)
        S += col[None, :]
        return S[0]


def load_members(
    path: Path, meta: dict[str, Any], device: str | None, quantize: str
) -> list[Member]:
    """Every member of a fusion index of several runs, each model checked against its digest."""
    from proofmatch.models.matcher import load_matcher

    out = []
    for m in meta["members"]:
        folder, model = path / m["dir"], path / m["model_dir"]
        if files_digest(model) != m["model"]["digest"]:
            raise ValueError(
                f"{model} is not the model this index was built with (digest differs); rebuild "
                "the index"
            )
        arrays = {k: np.load(folder / f"{k}.npy") for k in ARRAYS}
        matcher = load_matcher(model, device)
        out.append(
            Member(m["name"], float(m["weight"]), arrays, matcher, query_matcher(matcher, quantize))
        )
    return out


def member_halves(index, q, part: str | None) -> tuple:
    """A query's scores over the candidates of ``part`` (:class:`proofmatch.search.index.Halves`'
    fields): ``learned`` = ``Σᵢ wᵢ · z(sᵢ)``, ``bm25`` the raw BM25 scores, ``fused`` = learned +
    λ · z(BM25), and each run's raw row."""
    rows = index._candidates(part).rows
    raw = [m.scores(q, index.row_of, part, rows) for m in index.members]
    learned = np.zeros(len(raw[0]), np.float32)
    for m, s in zip(index.members, raw):
        learned += np.float32(m.weight) * standardize(s)
    bm25 = index.lexical_scores(q, part)
    fused = learned + np.float32(index.fusion_weight) * standardize(bm25)
    return learned, bm25, fused, raw


def attach_members(hits: list, halves, order: np.ndarray, members: list[Member]) -> None:
    """Each hit's members: name, weight, own score, weighted z-score (its share of the fused score)
    and rank among the same candidates by that member alone."""
    for h in hits:
        h.members = []
    for m, s in zip(members, halves.members):
        z = np.float32(m.weight) * standardize(s)
        mine = s[order]
        ranks = 1 + (s[None, :] > mine[:, None]).sum(axis=1)
        for h, i, value, rank in zip(hits, order, mine, ranks):
            h.members.append(
                {
                    "name": m.name,
                    "weight": m.weight,
                    "score": float(value),
                    "weighted_z": float(z[i]),
                    "rank": int(rank),
                }
            )


def describe_members(meta: dict[str, Any]) -> dict[str, Any]:
    """The page's and API's fields of a fusion index of several runs."""
    ms = meta["members"]
    return {
        "encoder": " + ".join(f"{m['name']} ({m['weight']:g})" for m in ms),
        "members": [
            {
                "name": m["name"],
                "weight": m["weight"],
                "run_dir": m["run"]["run_dir"],
                "encoder": m["model"]["config"]["encoder"],
            }
            for m in ms
        ],
        "run_dir": None,
    }
