"""What a search index records about where its scores come from: the training run (its folder,
model digest, fingerprint and metrics: :func:`run_identity`) and a fusion index's weight λ with
its source (:func:`fusion_weight`), so that an index never hides which model and which λ answer
its queries (:mod:`proofmatch.search.build` writes both into ``index.json``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from proofmatch.artifacts import read_json
from proofmatch.search.folder import FUSION_NORMALIZE, files_digest

FUSION_FILE = "fusion.json"  # a run's chosen weight: {"weight": λ, ...}, beside metrics.json


def model_dir(run_dir: Path) -> Path:
    """The model folder of a training run (``RUN/model``), or ``run_dir`` itself if it is one."""
    from proofmatch.models.matcher import CONFIG_FILE

    return run_dir / "model" if (run_dir / "model" / CONFIG_FILE).exists() else run_dir


def run_identity(run_dir: str | os.PathLike) -> dict[str, Any]:
    """What names a training run: its folder, model digest, and from its ``metrics.json`` its
    training fingerprint and metrics (a bare model folder has neither)."""
    run_dir = Path(run_dir)
    ident: dict[str, Any] = {
        "run_dir": str(run_dir),
        "model_digest": files_digest(model_dir(run_dir)),
    }
    if (run_dir / "metrics.json").exists():
        metrics = read_json(run_dir / "metrics.json")
        ident["fingerprint"] = metrics.pop(
            "fingerprint", None
        )  # None: a run trained before it was recorded
        ident["metrics"] = metrics
    return ident


def fusion_weight(run_dir: str | os.PathLike, weight: float | None = None) -> dict[str, Any]:
    """The fusion weight λ of an index and where it came from.

    ``weight`` given: it is used and recorded as given by hand (``source: "hand"``), with the run's
    own weight beside it when the run has one, so that an index never hides which λ was chosen on
    dev. Otherwise ``RUN/fusion.json``'s ``weight`` (``source: "run"``) with the file's content and
    digest. A missing file or a weight that is not a finite number >= 0 is an error that says what
    to do; there is no default λ."""
    run_dir = Path(run_dir)
    path = run_dir / FUSION_FILE
    recorded: dict[str, Any] | None = None
    if path.exists():
        try:
            recorded = read_json(path)
        except ValueError as err:
            raise ValueError(
                f"{path} is not JSON ({err}); rebuild it or pass a fusion weight by hand"
            ) from None
        if not isinstance(recorded, dict):
            raise ValueError(f"{path} holds no JSON object with a 'weight'")
    if weight is None:
        if recorded is None:
            raise ValueError(
                f"{path} does not exist: choose the fusion weight on the run's dev part first "
                "(the workflow's fusion rule writes it) or pass --fusion-weight X"
            )
        if "weight" not in recorded:
            raise ValueError(f"{path} has no 'weight'")
        weight, source = recorded["weight"], "run"
    else:
        source = "hand"
    if source == "run" and recorded.get("normalize", FUSION_NORMALIZE) != FUSION_NORMALIZE:
        raise ValueError(
            f"{path}: λ was chosen for {recorded['normalize']!r} fusion; search fuses z-scores "
            f"({FUSION_NORMALIZE!r}, whose pool statistics an explanation holds fixed): choose the "
            "run's weight with fusion.normalize: zscore or pass --fusion-weight X"
        )
    if (
        isinstance(weight, bool)
        or not isinstance(weight, (int, float))
        or not np.isfinite(weight)
        or weight < 0
    ):
        raise ValueError(
            f"fusion weight must be a finite number >= 0; got {weight!r}"
            + (f" in {path}" if source == "run" else "")
        )
    out: dict[str, Any] = {
        "weight": float(weight),
        "source": source,
        "file": str(path) if recorded is not None else None,
    }
    if recorded is not None:
        out["file_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        out["run_weight"] = recorded.get("weight")
        out["recorded"] = recorded
    return out
