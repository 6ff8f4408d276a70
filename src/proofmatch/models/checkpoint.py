"""A run's resumable state, shared by training and pretraining: what makes a run itself (its
fingerprint: the typed parameters of :mod:`proofmatch.models.params`, seed and training pairs),
an atomic save, and resume.

A checkpoint is one file, ``state.pt`` in the run's resume folder (training:
``<run>/checkpoint/``, pretraining: ``<out>.checkpoint/`` beside its output folder): the model,
optimizer and scheduler states, every RNG state, the loop's progress (epoch, step, best so far,
history) and the fingerprint of the run that wrote it. It is replaced atomically (written beside,
then renamed), so a kill at any moment, during the write included, leaves the previous checkpoint
whole; the killed write's temporary file is removed when the run starts again
(:func:`remove_temporaries`). Its digest (``state.pt.sha256``, :mod:`proofmatch.artifacts`) is
written with it, and it is loaded with ``torch.load(..., weights_only=True)``: tensors, numbers,
strings and containers only, never a pickled object's code (the numpy RNG state is stored as a
tensor for that). A state that fails its digest, lacks one, or holds anything else is set aside
(:func:`set_aside`) without running anything of it, and the run starts afresh.

The resume folder lives only while its job is unfinished. It is never a declared output of a
workflow rule (Snakemake deletes a failed job's outputs, and would delete the state with them);
a run that completes copies its best model into its outputs and removes the folder
(:func:`discard`), so rerunning a finished job (``snakemake --forcerun``) trains from the start.

Snakemake reruns a job whose params or inputs changed. That is a new run, and resuming the old
run's state would mix the two: only a checkpoint with this run's fingerprint is resumed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from proofmatch.artifacts import CorruptArtifact, atomic_path, digest_path, verify

log = logging.getLogger(__name__)

STATE_FILE = "state.pt"
TEMPORARIES = (f".{STATE_FILE}.*",)  # what a killed checkpoint write leaves in the resume folder


def state_path(resume_dir: str | os.PathLike) -> Path:
    """The checkpoint file of the run (training or pretraining) whose resume folder is ``resume_dir``."""
    return Path(resume_dir) / STATE_FILE


def discard(resume_dir: str | os.PathLike) -> None:
    """Remove a resume folder (the checkpoint and the best model so far): that of a run that has
    just finished, or the stale one of another run that a run starting afresh replaces."""
    folder = Path(resume_dir)
    if folder.exists():
        shutil.rmtree(folder)
        log.info("removed the resume state %s", folder)


def fingerprint(params: Any, seed: int, pair_ids: Sequence[Any], **fields: Any) -> dict[str, Any]:
    """What makes a run this run: its typed params (a dataclass), seed and training pairs (a
    digest of their ids), plus any ``fields``. A checkpoint stores it; only a run with the same
    one resumes it.

    A training run's params (:class:`proofmatch.models.params.TrainParams`) are recorded as what
    the run reads, the common fields and its encoder's own (``TrainParams.flat``), with
    ``params_version`` (``TrainParams.VERSION``, 2), which ``TrainParams.from_record`` reads
    back. Records without it (version 1) also held every other encoder's fields at fixed values;
    every training fingerprint changed with version 2, so a resume state written before it is
    another run's: not resumed, the run trains afresh.
    Pretraining's params (``PretrainParams``) are recorded whole, unversioned, as before."""
    digest = hashlib.sha256("\n".join(map(str, pair_ids)).encode()).hexdigest()[:16]
    version = getattr(params, "VERSION", None)
    values = params.flat() if version is not None else dataclasses.asdict(params)
    out = {**fields, "seed": seed, "n_train": len(pair_ids), "train_ids": digest}
    if version is not None:
        out["params_version"] = version
    return {**out, "params": json.loads(json.dumps(values, sort_keys=True))}


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The fields (``params.<key>`` inside params) whose values differ between two fingerprints."""
    keys = [
        k for k in sorted(old.keys() | new.keys()) if k != "params" and old.get(k) != new.get(k)
    ]
    p_old, p_new = old.get("params") or {}, new.get("params") or {}
    keys += [
        f"params.{k}" for k in sorted(p_old.keys() | p_new.keys()) if p_old.get(k) != p_new.get(k)
    ]
    return keys


def rng_state() -> dict[str, Any]:
    """Every random state a resumed run must restore to continue bit-for-bit."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        # a tensor and plain numbers: what torch.load(weights_only=True) reads back
        "numpy": [
            name,
            torch.from_numpy(keys.astype(np.int64)),
            int(pos),
            int(has_gauss),
            float(cached),
        ],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _tuples(value: Any) -> Any:
    """Python's RNG state with its tuples (a state read back may hold lists)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_tuples(state["python"]))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


#: What a resumable state holds; a file without these is set aside as corrupt.
STATE_KEYS = ("model", "optimizer", "scheduler", "rng", "fingerprint")
#: The name a corrupt checkpoint is renamed to (in the resume folder; removed with it when the run finishes).
CORRUPT_SUFFIX = ".corrupt"


def set_aside(path: str | os.PathLike, why: str) -> Path:
    """Rename an unusable checkpoint to ``<path>.corrupt`` (replacing an older one) and log why:
    the run then starts afresh instead of failing on every rerun."""
    aside = Path(f"{os.fspath(path)}{CORRUPT_SUFFIX}")
    os.replace(path, aside)
    digest_path(path).unlink(missing_ok=True)
    log.warning(
        "resume state %s is unreadable (%s); set aside as %s, starting the run afresh "
        "(delete it, or inspect it, as you like)",
        path,
        why,
        aside,
    )
    return aside


def load_checkpoint(path: str | os.PathLike, fp: dict[str, Any]) -> dict[str, Any] | None:
    """The state saved at ``path`` when it belongs to the run of fingerprint ``fp``, else None
    (a state of another run is logged with what changed and ignored; this run's first
    checkpoint overwrites it). A file that does not load (truncated, overwritten, not a
    checkpoint, without its digest or not matching it, holding anything but tensors, numbers,
    strings and containers) is set aside (:func:`set_aside`) and the run starts afresh; nothing
    in it is run."""
    if not os.path.exists(path):
        return None
    if not digest_path(path).is_file():
        set_aside(path, f"no digest {digest_path(path)} beside it: not written by this version")
        return None
    try:
        verify(path)
        # RNG states stay on CPU; weights_only: a pickled object's code is refused, never run
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except CorruptArtifact as exc:
        set_aside(path, str(exc).split(": it was")[0])
        return None
    except Exception as exc:  # pickle, zip and torch errors all mean: this file is not a state
        set_aside(path, f"{type(exc).__name__}: {exc}"[:300])
        return None
    if not isinstance(saved, dict) or any(k not in saved for k in STATE_KEYS):
        set_aside(
            path,
            f"not a resume state: lacks {', '.join(k for k in STATE_KEYS if not isinstance(saved, dict) or k not in saved)}",
        )
        return None
    if saved.get("fingerprint") != fp:
        log.warning(
            "%s is from a different run (changed: %s); starting afresh",
            path,
            ", ".join(changes(saved.get("fingerprint") or {}, fp)),
        )
        return None
    return saved


def save_torch_atomic(obj: Any, path: str | os.PathLike) -> None:
    """``torch.save`` to a temporary file beside ``path`` (``.state.pt.*``), then rename it onto
    ``path``, its digest beside it."""
    with atomic_path(path, ".pt", digest=True) as tmp:
        torch.save(obj, tmp)


def resume(
    path: Path,
    fp: dict[str, Any],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
) -> dict[str, Any] | None:
    """Load this run's checkpoint into ``model``, ``optimizer``, ``scheduler`` and the RNGs;
    return the saved state (its progress entries), or None when there is nothing to resume."""
    saved = load_checkpoint(path, fp)
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        set_rng_state(saved["rng"])
    return saved


def save(
    path: Path,
    fp: dict[str, Any],
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    **progress: Any,
) -> None:
    """Atomically replace the checkpoint at ``path`` with the current state and ``progress``."""
    save_torch_atomic(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": rng_state(),
            **progress,
            "fingerprint": fp,
        },
        path,
    )


def remove_temporaries(folder: Path, patterns: Sequence[str]) -> None:
    """Delete what a killed job left in ``folder``: its staging folders and temporary files
    (hidden names matching the glob ``patterns``, relative to ``folder``)."""
    for pattern in patterns:
        for p in folder.glob(pattern):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
